"""An EC2 Auto Scaling group as a burst group (boto3, imported here only).

Grow: `set_desired_capacity` (HonorCooldown=False), never above MaxSize. Find the new instances: the group's
`Instances` plus every EC2 instance carrying the `aws:autoscaling:groupName` tag that Auto Scaling puts on its
instances (so that terminated ones, gone from the group, still explain why their node died). Launch failures
(InsufficientInstanceCapacity, quota, spot capacity) are the group's failed scaling activities. Shrink:
`terminate_instance_in_auto_scaling_group` with ShouldDecrementDesiredCapacity=True, one call per instance.
Bind: the `aicluster:slurm-node` tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aicluster.burst.cloud import NODE_TAG, Capacity, CloudError, Instance, MissingExtra
from aicluster.burst.config import AwsNodeSet

ASG_TAG = "aws:autoscaling:groupName"
ALIVE = {"pending", "running"}


def client_error(exc: Exception) -> CloudError:
    """botocore's ClientError (or a connection error) as a CloudError with the cloud's code and words."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        return CloudError(str(err.get("Code", "")), str(err.get("Message", exc)))
    return CloudError(type(exc).__name__, str(exc))


@dataclass
class AwsGroup:
    name: str
    autoscaling: Any
    ec2: Any

    @classmethod
    def connect(
        cls, node_set: AwsNodeSet, cluster: str, timeout_s: float = 10.0, operation_timeout_s: float = 120.0
    ) -> AwsGroup:
        """Clients whose every request gives up after timeout_s to connect and timeout_s to read, tried twice at
        most (botocore's standard retry mode: throttling and connection errors): a hung endpoint costs about
        2 x timeout_s per call, never botocore's default of 60 s x 5 attempts."""
        try:
            import boto3
            from botocore.config import Config  # type: ignore[import-untyped]
        except ImportError:
            raise MissingExtra("MissingExtra", "AWS bursting needs boto3: pip install 'aicluster[aws]'") from None
        bounded = Config(
            connect_timeout=timeout_s, read_timeout=timeout_s, retries={"mode": "standard", "total_max_attempts": 2}
        )
        kw: dict[str, Any] = {"region_name": node_set.region, "config": bounded}
        if node_set.endpoint_url:
            kw["endpoint_url"] = node_set.endpoint_url
        return cls(node_set.group, boto3.client("autoscaling", **kw), boto3.client("ec2", **kw))

    def _describe(self) -> dict[str, Any]:
        try:
            groups = self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[self.name])
        except Exception as exc:
            raise client_error(exc) from None
        found = groups.get("AutoScalingGroups") or []
        if not found:
            raise CloudError("NotFound", f"Auto Scaling group {self.name!r} does not exist")
        return dict(found[0])

    def capacity(self) -> Capacity:
        g = self._describe()
        return Capacity(int(g["DesiredCapacity"]), int(g["MaxSize"]))

    def instances(self) -> list[Instance]:
        lifecycle = {i["InstanceId"]: i for i in self._describe().get("Instances", [])}
        reservations: list[dict[str, Any]] = []
        try:
            pages = self.ec2.get_paginator("describe_instances").paginate(
                Filters=[{"Name": f"tag:{ASG_TAG}", "Values": [self.name]}]
            )
            for page in pages:
                reservations += page.get("Reservations", [])
            missing = sorted(set(lifecycle) - {i["InstanceId"] for r in reservations for i in r["Instances"]})
            if missing:
                reservations += self.ec2.describe_instances(InstanceIds=missing).get("Reservations", [])
        except Exception as exc:
            raise client_error(exc) from None
        out: dict[str, Instance] = {}
        for r in reservations:
            for i in r["Instances"]:
                out[i["InstanceId"]] = _instance(i, lifecycle.get(i["InstanceId"]))
        return sorted(out.values(), key=lambda i: (i.launched_s, i.id))

    def resize(self, desired: int) -> None:
        try:
            self.autoscaling.set_desired_capacity(
                AutoScalingGroupName=self.name, DesiredCapacity=desired, HonorCooldown=False
            )
        except Exception as exc:
            raise client_error(exc) from None

    def failures(self, since_s: float) -> list[str]:
        try:
            acts = self.autoscaling.describe_scaling_activities(AutoScalingGroupName=self.name).get("Activities", [])
        except Exception as exc:
            raise client_error(exc) from None
        out = []
        for a in acts:
            start = a.get("StartTime")
            when = start.timestamp() if hasattr(start, "timestamp") else 0.0
            if a.get("StatusCode") in ("Failed", "Cancelled") and when >= since_s:
                out.append(str(a.get("StatusMessage") or a.get("Description") or a.get("StatusCode")))
        return out

    def bind(self, instance_id: str, node: str) -> None:
        try:
            self.ec2.create_tags(Resources=[instance_id], Tags=[{"Key": NODE_TAG, "Value": node}])
        except Exception as exc:
            raise client_error(exc) from None

    def remove(self, instance_ids: list[str]) -> None:
        errors = []
        for iid in instance_ids:
            try:
                self.autoscaling.terminate_instance_in_auto_scaling_group(
                    InstanceId=iid, ShouldDecrementDesiredCapacity=True
                )
            except Exception as exc:
                err = client_error(exc)
                # already gone from the group (terminated behind our back): nothing left to decrement for it
                if "not part of" not in str(err) and "not found" not in str(err).lower():
                    errors.append(f"{iid}: {err}")
        if errors:
            raise CloudError("TerminateFailed", "; ".join(errors))


def _instance(i: dict[str, Any], member: dict[str, Any] | None) -> Instance:
    tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
    state = str(i.get("State", {}).get("Name", ""))
    lifecycle = str((member or {}).get("LifecycleState", ""))
    health = str((member or {}).get("HealthStatus", ""))
    alive = state in ALIVE and not lifecycle.startswith("Terminating") and health != "Unhealthy"
    why = ""
    if not alive:
        reason = i.get("StateReason", {})
        detail = reason.get("Code") or reason.get("Message") or ""
        why = ", ".join(x for x in (f"EC2 state {state}", lifecycle and f"Auto Scaling {lifecycle}",
                                    health == "Unhealthy" and "Unhealthy", detail) if x)  # fmt: skip
    launched: Any = i.get("LaunchTime")
    return Instance(
        id=str(i["InstanceId"]),
        node=tags.get(NODE_TAG),
        address=i.get("PrivateIpAddress"),
        hostname=i.get("PrivateDnsName") or None,
        alive=alive,
        why_not=why,
        launched_s=launched.timestamp() if hasattr(launched, "timestamp") else 0.0,
    )
