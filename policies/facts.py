"""Resources as the engine hands them (type token, camelCase props) -> facts the rules judge.

Nothing here knows about our components: a fleet is an Auto Scaling group or an instance with an
instance type, wherever it came from. Values unknown during preview come back as `UNKNOWN`;
ids are usually unknown, so links between resources follow the engine's property dependencies
(an ASG's `launchTemplate` -> the launch template resource), as the engine reports them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from aicluster.catalog import Catalog, InstanceType, Region, StorageTier, load_catalog
from aicluster.catalog.pricing import compute_price, storage_price

AICLUSTER_TYPE = "aicluster:index:AiCluster"
ASG = "aws:autoscaling/group:Group"
INSTANCE = "aws:ec2/instance:Instance"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SUBNET = "aws:ec2/subnet:Subnet"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
EIP = "aws:ec2/eip:Eip"
EBS_VOLUME = "aws:ebs/volume:Volume"
TRAIL = "aws:cloudtrail/trail:Trail"

# The engine's sentinels for values not known until `up` (pulumi_policy.proxy).
_SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown during preview>"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


def get(value: Any, *path: str | int, default: Any = None) -> Any:
    """`value[path[0]][path[1]]...`: `default` when a key is absent or null, `UNKNOWN` when a value on
    the way is not known during preview. Works on plain dicts and on the SDK's unknown-checking proxy."""
    cur = value
    try:
        for key in path:
            if isinstance(cur, str) and cur in _SENTINELS:
                return UNKNOWN
            if isinstance(key, int):
                if not isinstance(cur, Sequence) or isinstance(cur, str) or not -len(cur) <= key < len(cur):
                    return default
                cur = cur[key]
            else:
                if not isinstance(cur, Mapping) or key not in cur:
                    return default
                cur = cur[key]
    except UnknownValueError:
        return UNKNOWN
    if isinstance(cur, str) and cur in _SENTINELS:
        return UNKNOWN
    return default if cur is None else cur


def items(value: Any, *path: str) -> list[Any]:
    """A list-valued prop as a list; empty when absent or unknown."""
    found = get(value, *path)
    if found is UNKNOWN or not isinstance(found, Sequence) or isinstance(found, str):
        return []
    out = []
    for i in range(len(found)):
        try:
            item = found[i]
        except UnknownValueError:
            item = UNKNOWN
        out.append(UNKNOWN if isinstance(item, str) and item in _SENTINELS else item)
    return out


def truthy(value: Any) -> bool:
    """AWS launch-template booleans are strings ("true"); unknown is not true."""
    if value is UNKNOWN or value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


@dataclass(eq=False)
class Res:
    """One resource: what a resource policy sees, plus (in a stack) its links."""

    type: str
    name: str
    urn: str
    props: Any  # Mapping (possibly the SDK's unknown-checking proxy)
    provider_props: Any = None
    parent: Res | None = None
    property_dependencies: dict[str, list[Res]] = field(default_factory=dict)

    def get(self, *path: str | int, default: Any = None) -> Any:
        return get(self.props, *path, default=default)

    def linked(self, prop: str, type_: str | None = None) -> list[Res]:
        return [r for r in self.property_dependencies.get(prop, []) if type_ is None or r.type == type_]

    @property
    def provider(self) -> str:
        return self.type.split(":", 1)[0]

    @property
    def region(self) -> str | None:
        """The resource's region: its own `region`/`location` input, else its provider's."""
        for key in ("region", "location"):
            value = self.get(key)
            if isinstance(value, str):
                return value
        value = get(self.provider_props, "region")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Fleet:
    """Nodes of one instance type launched by one resource (ASG or instance)."""

    res: Res
    instance_type: str
    nodes: int
    market: str  # on-demand | spot | capacity-block | reserved
    region: str | None
    root_volume_gib: float
    spec: InstanceType | None  # the catalog's record, None when the catalog lacks the type
    template: Res | None  # the launch template, where one is used


@dataclass(frozen=True)
class Filesystem:
    res: Res
    service: str  # fsx-lustre | efs
    capacity_gib: float | None  # None: billed per GiB stored, size not declared
    throughput_mb_s: float | None
    tier: StorageTier | None
    region: str | None


class Stack:
    """Every resource of a stack, with the cluster declaration (AiCluster inputs) when there is one."""

    def __init__(self, resources: Sequence[Res], catalog: Catalog | None = None) -> None:
        self.resources = list(resources)
        self.catalog = catalog or load_catalog()
        self.by_type: dict[str, list[Res]] = {}
        for r in self.resources:
            self.by_type.setdefault(r.type, []).append(r)

    def of(self, *types: str) -> list[Res]:
        return [r for t in types for r in self.by_type.get(t, [])]

    @cached_property
    def cluster(self) -> Res | None:
        found = self.of(AICLUSTER_TYPE)
        return found[0] if found else None

    def declared(self, *path: str) -> Any:
        """A value the AiCluster component declares (budgets, compliance, pricing, tags)."""
        return get(self.cluster.props, *path) if self.cluster else None

    @cached_property
    def overrides(self) -> list[_Override]:
        return [_Override.of(o) for o in items(self.declared("pricing"), "overrides") if isinstance(o, Mapping)]

    @cached_property
    def fleets(self) -> list[Fleet]:
        out = [f for r in self.of(ASG) if (f := _asg_fleet(self, r))]
        out += [f for r in self.of(INSTANCE) if (f := _instance_fleet(self, r))]
        return out

    @cached_property
    def filesystems(self) -> list[Filesystem]:
        return [_lustre(self, r) for r in self.of(FSX_LUSTRE)] + [_efs(self, r) for r in self.of(EFS)]

    def region_record(self, provider: str, region: str | None) -> Region | None:
        return self.catalog.region(provider, region) if region else None

    def fleet_price(self, fleet: Fleet) -> float | None:
        """USD per node-hour: a declared override, else the catalog's rate for the market."""
        if fleet.spec is None or fleet.region is None:
            return None
        resolved = compute_price(fleet.spec, fleet.region, fleet.market, self.overrides)
        return resolved.price.usd if resolved.price else None

    def filesystem_price(self, fs: Filesystem) -> float | None:
        """USD per month."""
        if fs.tier is None or fs.region is None or fs.capacity_gib is None:
            return None
        resolved = storage_price(fs.tier, fs.region, self.overrides)
        return resolved.price.usd * fs.capacity_gib if resolved.price else None

    def service_month(self, provider: str, service: str, region: str | None, quantity: float) -> float | None:
        rec = self.catalog.services.get((provider, service))
        price = self.catalog.service_price(provider, service, region) if region else None
        if rec is None or price is None:
            return None
        return quantity * price * (self.catalog.hours_per_month if rec.unit == "hour" else 1.0)


@dataclass(frozen=True)
class _Override:
    sku: str
    region: str | None
    market: str | None
    usd_per_hour: float | None
    usd_per_gib_month: float | None

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> _Override:
        def opt(key: str) -> Any:
            value = get(raw, key)
            return None if value is UNKNOWN else value

        return cls(str(opt("sku")), opt("region"), opt("market"), opt("usd_per_hour"), opt("usd_per_gib_month"))


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def template_market(lt: Res | None) -> str:
    if lt is None:
        return "on-demand"
    market = lt.get("instanceMarketOptions", "marketType")
    if market in ("spot", "capacity-block"):
        return str(market)
    target = lt.get("capacityReservationSpecification", "capacityReservationTarget")
    if isinstance(target, Mapping) and target:
        return "reserved"
    return "on-demand"


def _root_gib(mappings: list[Any]) -> float:
    total = 0.0
    for m in mappings:
        size = get(m, "ebs", "volumeSize")
        if isinstance(size, int | float):
            total += float(size)
    return total


def _asg_fleet(stack: Stack, asg: Res) -> Fleet | None:
    lts = asg.linked("launchTemplate", LAUNCH_TEMPLATE) or asg.linked("mixedInstancesPolicy", LAUNCH_TEMPLATE)
    lt = lts[0] if lts else None
    it = lt.get("instanceType") if lt else None
    nodes = _count(asg.get("maxSize"))
    if nodes is None:
        nodes = _count(asg.get("desiredCapacity"))
    if not isinstance(it, str) or nodes is None:
        return None
    assert lt is not None
    return Fleet(
        asg,
        it,
        nodes,
        template_market(lt),
        asg.region or lt.region,
        _root_gib(items(lt.props, "blockDeviceMappings")),
        stack.catalog.instance_type("aws", it),
        lt,
    )


def _instance_fleet(stack: Stack, inst: Res) -> Fleet | None:
    lts = inst.linked("launchTemplate", LAUNCH_TEMPLATE)
    lt = lts[0] if lts else None
    it = inst.get("instanceType")
    if not isinstance(it, str) and lt is not None:
        it = lt.get("instanceType")
    if not isinstance(it, str):
        return None
    root = inst.get("rootBlockDevice", "volumeSize")
    root_gib = (
        float(root)
        if isinstance(root, int | float)
        else _root_gib(items(lt.props, "blockDeviceMappings") if lt else [])
    )
    market = "spot" if inst.get("instanceMarketOptions", "marketType") == "spot" else template_market(lt)
    return Fleet(inst, it, 1, market, inst.region, root_gib, stack.catalog.instance_type("aws", it), lt)


def _lustre(stack: Stack, fs: Res) -> Filesystem:
    capacity = fs.get("storageCapacity")
    per_tib = fs.get("perUnitStorageThroughput")
    deployment = fs.get("deploymentType", default="SCRATCH_1")
    tier = next(
        (
            t
            for t in stack.catalog.storage_tiers_for("aws", "lustre")
            if t.deployment == deployment and isinstance(per_tib, int | float) and t.throughput_mb_s_per_tib == per_tib
        ),
        None,
    )
    capacity_gib = float(capacity) if isinstance(capacity, int | float) else None
    throughput = None
    if capacity_gib is not None:
        rate = float(per_tib) if isinstance(per_tib, int | float) else (tier.throughput_mb_s_per_tib if tier else None)
        throughput = capacity_gib / 1024 * rate if rate is not None else None
    return Filesystem(fs, "fsx-lustre", capacity_gib, throughput, tier, fs.region)


def _efs(stack: Stack, fs: Res) -> Filesystem:
    tiers = stack.catalog.storage_tiers_for("aws", "nfs")
    return Filesystem(fs, "efs", None, None, tiers[0] if tiers else None, fs.region)


def walk(resources: Sequence[Any]) -> Iterator[Res]:
    """`Res` for each of the SDK's PolicyResource objects, links resolved."""
    made: dict[int, Res] = {}

    def one(r: Any) -> Res:
        if id(r) not in made:
            provider = getattr(r, "provider", None)
            made[id(r)] = Res(r.resource_type, r.name, r.urn, r.props, provider.props if provider else None)
        return made[id(r)]

    for r in resources:
        res = one(r)
        if r.parent is not None:
            res.parent = one(r.parent)
        res.property_dependencies = {k: [one(d) for d in v] for k, v in (r.property_dependencies or {}).items()}
        yield res
