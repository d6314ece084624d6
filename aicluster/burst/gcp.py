"""A zonal managed instance group as a burst group (google-cloud-compute, the `gcp` extra, imported here only).

Grow: `InstanceGroupManagers.resize` to the new target size (a MIG has no maximum size of its own: the node set's
hostlist bounds what Slurm asks). Find the instances: `listManagedInstances` (status and current action) plus the
zone's instances for their labels and internal IP. Launch failures (ZONE_RESOURCE_POOL_EXHAUSTED, quota) are the
group's `listErrors`. Shrink: `deleteInstances`, which lowers the target size by as many. Bind: the label
`aicluster-slurm-node` (GCE label keys allow no ':'); a MIG recreates a preempted spot VM under the same name but
without the label, so the node is seen as having lost its instance.

Tested against fakes of the SDK clients only; it has not run against the real API.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from aicluster.burst.cloud import Capacity, CloudError, Instance, MissingExtra
from aicluster.burst.config import GcpNodeSet

LABEL = "aicluster-slurm-node"
ALIVE_STATUS = {"PROVISIONING", "STAGING", "RUNNING", "PENDING"}
DYING_ACTION = {"DELETING", "ABANDONING", "RECREATING"}
NO_MAXIMUM = 2**31 - 1


def api_error(exc: Exception) -> CloudError:
    """google.api_core's GoogleAPICallError (reason/message) or an operation error as a CloudError."""
    code = getattr(exc, "reason", None) or getattr(exc, "error_code", None) or type(exc).__name__
    return CloudError(str(code), str(getattr(exc, "message", None) or exc))


def _epoch(stamp: str) -> float:
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


@dataclass
class GcpGroup:
    name: str
    project: str
    zone: str
    managers: Any  # compute_v1.InstanceGroupManagersClient
    vms: Any  # compute_v1.InstancesClient
    requests: Any  # the compute_v1 module, for its request types
    timeout_s: float = 10.0  # each request's deadline (google.api_core `timeout=`)
    operation_timeout_s: float = 120.0  # the longest wait for an operation (resize, labels, delete)

    @classmethod
    def connect(
        cls, node_set: GcpNodeSet, cluster: str, timeout_s: float = 10.0, operation_timeout_s: float = 120.0
    ) -> GcpGroup:
        try:
            from google.cloud import compute_v1
        except ImportError:
            raise MissingExtra(
                "MissingExtra", "GCP bursting needs google-cloud-compute: pip install 'aicluster[gcp]'"
            ) from None
        return cls(node_set.group, node_set.project, node_set.zone, compute_v1.InstanceGroupManagersClient(),
                   compute_v1.InstancesClient(), compute_v1, timeout_s, operation_timeout_s)  # fmt: skip

    def _where(self) -> dict[str, Any]:
        return {"project": self.project, "zone": self.zone, "instance_group_manager": self.name,
                "timeout": self.timeout_s}  # fmt: skip

    def capacity(self) -> Capacity:
        try:
            return Capacity(int(self.managers.get(**self._where()).target_size), NO_MAXIMUM)
        except Exception as exc:
            raise api_error(exc) from None

    def instances(self) -> list[Instance]:
        try:
            managed = list(self.managers.list_managed_instances(**self._where()))
            details = {
                vm.name: vm for vm in self.vms.list(project=self.project, zone=self.zone, timeout=self.timeout_s)
            }
        except Exception as exc:
            raise api_error(exc) from None
        out = []
        for m in managed:
            name = str(m.instance).rsplit("/", 1)[-1]
            vm = details.get(name)
            status, action = str(m.instance_status), str(m.current_action)
            alive = vm is not None and status in ALIVE_STATUS and action not in DYING_ACTION
            nics = list(vm.network_interfaces) if vm is not None else []
            out.append(
                Instance(
                    id=name,
                    node=dict(vm.labels).get(LABEL) if vm is not None else None,
                    address=(nics[0].network_i_p or None) if nics else None,
                    hostname=name,
                    alive=alive,
                    why_not="" if alive else f"GCE status {status or 'gone'}, MIG action {action}",
                    launched_s=_epoch(str(vm.creation_timestamp)) if vm is not None else 0.0,
                )
            )
        return sorted(out, key=lambda i: (i.launched_s, i.id))

    def _wait(self, operation: Any) -> None:
        """Wait at most operation_timeout_s; an operation still running then is a failure (google.api_core raises
        concurrent.futures.TimeoutError; done() is checked as well, in case a client returns instead)."""
        operation.result(timeout=self.operation_timeout_s)
        if hasattr(operation, "done") and not operation.done():
            raise CloudError("OperationTimeout", f"operation still running after {self.operation_timeout_s:.0f} s")
        error = getattr(operation, "error_message", None)
        if error:
            raise CloudError(str(getattr(operation, "error_code", "") or "OperationFailed"), str(error))

    def resize(self, desired: int) -> None:
        try:
            self._wait(self.managers.resize(**self._where(), size=desired))
        except CloudError:
            raise
        except Exception as exc:
            raise api_error(exc) from None

    def failures(self, since_s: float) -> list[str]:
        try:
            errors = list(self.managers.list_errors(**self._where()))
        except Exception as exc:
            raise api_error(exc) from None
        found = [(_epoch(str(e.timestamp)), f"{e.error.code}: {e.error.message}") for e in errors]
        return [text for when, text in sorted(found, reverse=True) if when >= since_s]

    def bind(self, instance_id: str, node: str) -> None:
        try:
            vm = self.vms.get(project=self.project, zone=self.zone, instance=instance_id, timeout=self.timeout_s)
            body = self.requests.InstancesSetLabelsRequest(
                labels={**dict(vm.labels), LABEL: node}, label_fingerprint=vm.label_fingerprint
            )
            operation = self.vms.set_labels(
                project=self.project,
                zone=self.zone,
                instance=instance_id,
                instances_set_labels_request_resource=body,
                timeout=self.timeout_s,
            )
            self._wait(operation)
        except CloudError:
            raise
        except Exception as exc:
            raise api_error(exc) from None

    def remove(self, instance_ids: list[str]) -> None:
        urls = [f"zones/{self.zone}/instances/{i}" for i in instance_ids]
        body = self.requests.InstanceGroupManagersDeleteInstancesRequest(
            instances=urls, skip_instances_on_validation_error=True
        )
        try:
            op = self.managers.delete_instances(
                **self._where(), instance_group_managers_delete_instances_request_resource=body
            )
            self._wait(op)
        except CloudError:
            raise
        except Exception as exc:
            raise api_error(exc) from None
