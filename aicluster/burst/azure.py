"""A virtual machine scale set as a burst group (azure-mgmt-compute, azure-mgmt-network and azure-identity, the
`azure` extra, imported here only; credentials from DefaultAzureCredential: managed identity, environment, az login).

Grow: update the scale set's `sku.capacity` (a scale set has no maximum size setting: the node set's hostlist bounds
what Slurm asks); the long-running operation's error (AllocationFailed, OperationNotAllowed for quota,
SkuNotAvailable) is the launch failure. Find the instances: the scale set's VMs with their instance view (power
state) and the scale set's network interfaces for their private IPs. Shrink: `delete_instances`, which lowers the
capacity by as many. Bind: the VM tag `aicluster:slurm-node`. An evicted spot VM is deleted or deallocated, so its
node is seen as having lost its instance.

Tested against fakes of the SDK clients only; it has not run against the real API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aicluster.burst.cloud import NODE_TAG, Capacity, CloudError, Instance, MissingExtra
from aicluster.burst.config import AzureNodeSet

NO_MAXIMUM = 2**31 - 1
ALIVE_POWER = {"PowerState/running", "PowerState/starting"}


def api_error(exc: Exception) -> CloudError:
    """azure.core's HttpResponseError (its error.code and message) as a CloudError."""
    err = getattr(exc, "error", None)
    code = getattr(err, "code", None) or type(exc).__name__
    return CloudError(str(code), str(getattr(err, "message", None) or getattr(exc, "message", None) or exc))


@dataclass
class AzureGroup:
    name: str
    resource_group: str
    compute: Any  # azure.mgmt.compute.ComputeManagementClient
    network: Any  # azure.mgmt.network.NetworkManagementClient
    models: Any  # azure.mgmt.compute.models
    errors: list[str] = field(default_factory=list)
    operation_timeout_s: float = 120.0  # the longest wait for a long-running operation (resize, tag, delete)

    @classmethod
    def connect(
        cls, node_set: AzureNodeSet, cluster: str, timeout_s: float = 10.0, operation_timeout_s: float = 120.0
    ) -> AzureGroup:
        """Clients whose every request gives up after timeout_s to connect and timeout_s to read, tried twice at
        most (azure-core's transport and retry settings, given to the client: its defaults are 300 s and 3
        retries)."""
        try:
            from azure.identity import DefaultAzureCredential
            from azure.mgmt.compute import ComputeManagementClient, models
            from azure.mgmt.network import NetworkManagementClient
        except ImportError:
            raise MissingExtra(
                "MissingExtra",
                "Azure bursting needs azure-mgmt-compute, azure-mgmt-network and azure-identity: "
                "pip install 'aicluster[azure]'",
            ) from None
        cred = DefaultAzureCredential()
        bounded = {"connection_timeout": timeout_s, "read_timeout": timeout_s, "retry_total": 1}
        return cls(node_set.group, node_set.resource_group,
                   ComputeManagementClient(cred, node_set.subscription_id, **bounded),
                   NetworkManagementClient(cred, node_set.subscription_id, **bounded), models,
                   operation_timeout_s=operation_timeout_s)  # fmt: skip

    def _finish(self, poller: Any, what: str) -> None:
        """Wait for a long-running operation at most operation_timeout_s. azure-core's LROPoller.result(timeout)
        returns without raising when the time is up, so done() decides: an operation still running is a failure."""
        poller.result(timeout=self.operation_timeout_s)
        if not poller.done():
            raise CloudError(
                "OperationTimeout",
                f"{what} of scale set {self.name} still running after {self.operation_timeout_s:.0f} s",
            )

    def _scale_set(self) -> Any:
        try:
            return self.compute.virtual_machine_scale_sets.get(self.resource_group, self.name)
        except Exception as exc:
            raise api_error(exc) from None

    def capacity(self) -> Capacity:
        return Capacity(int(self._scale_set().sku.capacity or 0), NO_MAXIMUM)

    def instances(self) -> list[Instance]:
        try:
            vms = list(self.compute.virtual_machine_scale_set_vms.list(self.resource_group, self.name,
                                                                        expand="instanceView"))  # fmt: skip
            nics = list(self.network.network_interfaces.list_virtual_machine_scale_set_network_interfaces(
                self.resource_group, self.name))  # fmt: skip
        except Exception as exc:
            raise api_error(exc) from None
        address: dict[str, str] = {}
        for nic in nics:
            vm_id = str(getattr(nic.virtual_machine, "id", "") or "").lower()
            ips = [c.private_ip_address for c in nic.ip_configurations or [] if c.private_ip_address]
            if vm_id and ips:
                address.setdefault(vm_id, ips[0])
        out = []
        for vm in vms:
            view = vm.instance_view
            codes = [s.code for s in (view.statuses if view is not None else None) or []]
            power = next((c for c in codes if c.startswith("PowerState/")), "PowerState/unknown")
            state = str(vm.provisioning_state or "")
            alive = power in ALIVE_POWER or (power == "PowerState/unknown" and state in ("Creating", "Succeeded"))
            alive = alive and state not in ("Deleting", "Failed")
            out.append(
                Instance(
                    id=str(vm.instance_id),
                    node=(vm.tags or {}).get(NODE_TAG),
                    address=address.get(str(vm.id).lower()),
                    hostname=getattr(view, "computer_name", None) or vm.name,
                    alive=alive,
                    why_not="" if alive else f"Azure {power}, provisioning {state}",
                )
            )
        return sorted(out, key=lambda i: (int(i.id) if i.id.isdigit() else 0, i.id))

    def resize(self, desired: int) -> None:
        vmss = self._scale_set()
        body = self.models.VirtualMachineScaleSetUpdate(
            sku=self.models.Sku(name=vmss.sku.name, tier=vmss.sku.tier, capacity=desired)
        )
        try:
            poller = self.compute.virtual_machine_scale_sets.begin_update(self.resource_group, self.name, body)
            self._finish(poller, f"resize to {desired}")
        except Exception as exc:  # the scale-out's error: allocation, quota, SKU; or still running
            err = exc if isinstance(exc, CloudError) else api_error(exc)
            self.errors.append(str(err))
            raise err from None

    def failures(self, since_s: float) -> list[str]:
        return list(reversed(self.errors))

    def bind(self, instance_id: str, node: str) -> None:
        try:
            vm = self.compute.virtual_machine_scale_set_vms.get(self.resource_group, self.name, instance_id)
            vm.tags = {**(vm.tags or {}), NODE_TAG: node}
            poller = self.compute.virtual_machine_scale_set_vms.begin_update(self.resource_group, self.name,
                                                                             instance_id, vm)  # fmt: skip
            self._finish(poller, f"tagging VM {instance_id}")
        except CloudError:
            raise
        except Exception as exc:
            raise api_error(exc) from None

    def remove(self, instance_ids: list[str]) -> None:
        ids = self.models.VirtualMachineScaleSetVMInstanceRequiredIDs(instance_ids=instance_ids)
        try:
            poller = self.compute.virtual_machine_scale_sets.begin_delete_instances(self.resource_group, self.name, ids)
            self._finish(poller, f"deleting {len(instance_ids)} VM(s)")
        except CloudError:
            raise
        except Exception as exc:
            raise api_error(exc) from None
