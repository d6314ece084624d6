"""Fakes of Slurm (scontrol) and of a cloud group, with the behaviour the programs rely on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from aicluster.burst.cloud import Capacity, CloudError, Instance


def expand(expression: str) -> list[str]:
    """`scontrol show hostnames` for the forms the tests use: a-[00-02,05],b-1."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", expression):
        m = re.fullmatch(r"(.*)\[(.*)\]", part)
        if not m:
            names.append(part)
            continue
        for r in m.group(2).split(","):
            lo, _, hi = r.partition("-")
            width = len(lo)
            names += [f"{m.group(1)}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1)]
    return names


@dataclass
class FakeSlurm:
    records: dict[str, dict[str, str]] = field(default_factory=dict)
    updates: list[tuple[tuple[str, ...], dict[str, str]]] = field(default_factory=list)

    def hostnames(self, expression: str) -> list[str]:
        return expand(expression)

    def update(self, nodes: Sequence[str], **fields: str) -> None:
        self.updates.append((tuple(nodes), fields))

    def nodes(self, expression: str) -> list[dict[str, str]]:
        return [self.records[n] for n in expand(expression) if n in self.records]

    def node(self, name: str, state: str, reason: str = "") -> None:
        self.records[name] = {"NodeName": name, "State": state, **({"Reason": reason} if reason else {})}


@dataclass
class FakeGroup:
    """A group that launches `deliver` instances per resize (all of them by default), each with an address."""

    name: str = "g"
    desired: int = 0
    maximum: int = 4
    pool: list[Instance] = field(default_factory=list)
    deliver: int | None = None
    refuse: CloudError | None = None
    failure_messages: list[str] = field(default_factory=list)
    resizes: list[int] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    serial: int = 0

    def capacity(self) -> Capacity:
        return Capacity(self.desired, self.maximum)

    def instances(self) -> list[Instance]:
        return list(self.pool)

    def resize(self, desired: int) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.resizes.append(desired)
        grow = desired - self.desired
        self.desired = desired
        for _ in range(grow if self.deliver is None else min(grow, self.deliver)):
            self.serial += 1
            self.pool.append(Instance(f"i-{self.serial}", None, f"10.0.0.{self.serial}", f"ip-{self.serial}", True))

    def failures(self, since_s: float) -> list[str]:
        return list(self.failure_messages)

    def bind(self, instance_id: str, node: str) -> None:
        self.pool = [replace(i, node=node) if i.id == instance_id else i for i in self.pool]

    def remove(self, instance_ids: list[str]) -> None:
        self.removed += instance_ids
        self.pool = [i for i in self.pool if i.id not in instance_ids]
        self.desired -= len(instance_ids)
