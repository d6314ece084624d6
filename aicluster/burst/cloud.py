"""The small interface the programs need from a cloud group, whatever the provider.

A group (Auto Scaling group, managed instance group, VM scale set) holds identical instances and has a desired
size and a maximum. The programs grow it, find its new instances, bind each to a Slurm node by tagging/labelling
it with the node's name, and remove exactly the instances of the nodes Slurm powers down.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Protocol

from aicluster.burst.config import AwsNodeSet, AzureNodeSet, GcpNodeSet

NODE_TAG = "aicluster:slurm-node"
CLUSTER_TAG = "aicluster:cluster"


@dataclass(frozen=True)
class Instance:
    id: str
    node: str | None  # the Slurm node it is bound to (its NODE_TAG), None while unbound
    address: str | None  # private IP, None until the cloud has given one
    hostname: str | None  # private DNS name where the cloud has one
    alive: bool  # pending/running; False when stopping, terminating, terminated or being reclaimed
    why_not: str = ""  # why not alive, in the cloud's words (e.g. "terminated: Server.SpotInstanceTermination")
    launched_s: float = 0.0  # launch time, seconds since the epoch


@dataclass(frozen=True)
class Capacity:
    desired: int
    maximum: int


class CloudError(Exception):
    """The cloud refused: `code` is its error code (InsufficientInstanceCapacity, ...), the message its words."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code


class MissingExtra(CloudError):
    """The provider's SDK is not installed."""


class Group(Protocol):
    name: str

    def capacity(self) -> Capacity: ...

    def instances(self) -> list[Instance]:
        """Every instance of the group that is not gone for good (terminated ones may be listed, alive=False)."""
        ...

    def resize(self, desired: int) -> None:
        """Set the desired size; raises CloudError when the cloud refuses."""
        ...

    def failures(self, since_s: float) -> list[str]:
        """The group's failed launches since `since_s` (epoch seconds), in the cloud's words, newest first."""
        ...

    def bind(self, instance_id: str, node: str) -> None: ...

    def remove(self, instance_ids: list[str]) -> None:
        """Delete these instances and lower the desired size by as many."""
        ...


def replace_instances(group: Group, instance_ids: list[str]) -> None:
    """Replace instances of a group that keeps its size (a Pulumi-managed pool, not a burst one): delete them, which
    lowers the desired size by as many, and set it back, so the group launches as many new ones (on AWS a
    terminate with ShouldDecrementDesiredCapacity=False does both at once; two calls work on every provider)."""
    desired = group.capacity().desired
    group.remove(instance_ids)
    group.resize(desired)


# provider -> (module, class): a provider is one module with a class that has
# `connect(node_set, cluster, timeout_s, operation_timeout_s)`: each API request's connect/read timeout (tried twice
# at most) and the longest wait for a long-running operation (a resize), after which it counts as failed
PROVIDERS = {
    "aws": ("aicluster.burst.aws", "AwsGroup"),
    "gcp": ("aicluster.burst.gcp", "GcpGroup"),
    "azure": ("aicluster.burst.azure", "AzureGroup"),
}


def open_group(
    node_set: AwsNodeSet | GcpNodeSet | AzureNodeSet,
    cluster: str,
    timeout_s: float = 10.0,
    operation_timeout_s: float = 120.0,
) -> Group:
    """The node set's group; CloudError when its SDK cannot even make a client (a bad endpoint or region)."""
    module, cls = PROVIDERS[node_set.provider]
    connect = getattr(importlib.import_module(module), cls).connect
    try:
        group: Group = connect(node_set, cluster, timeout_s, operation_timeout_s)
    except CloudError:
        raise
    except Exception as exc:  # the SDK's own refusal (botocore's InvalidRegionError, ValueError for an endpoint)
        raise CloudError(type(exc).__name__, str(exc)) from None
    return group
