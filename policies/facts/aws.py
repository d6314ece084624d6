"""AWS resources as the engine hands them (pulumi-aws type tokens, camelCase props) -> facts.

Launch-template booleans come as strings ("true"); an Auto Scaling group's tags are a list of {key, value,
propagateAtLaunch}; a launch template's network interfaces name their EFA card. Links follow the engine's property
dependencies (an ASG's `launchTemplate` -> the launch template resource).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aicluster.catalog import NvlinkDomain

from .engine import UNKNOWN, Reader, Res, count, get, items, truthy
from .model import INTERNET, STORAGE_TAG, Exposure, Filesystem, Fleet, Ingress, NvlinkGroup, PortRange, TagSet
from .tags import map_keys, provider_keys

if TYPE_CHECKING:
    from .stack import FilesystemReaders, FleetReaders, NvlinkReaders, Stack

ASG = "aws:autoscaling/group:Group"
INSTANCE = "aws:ec2/instance:Instance"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
EIP = "aws:ec2/eip:Eip"
EBS_VOLUME = "aws:ebs/volume:Volume"
TRAIL = "aws:cloudtrail/trail:Trail"
AWS_VPN = "aws:ec2/vpnConnection:VpnConnection"
# Amazon Managed Service for Prometheus: the workspace, and the agentless scraper of an EKS cluster
AMP_WORKSPACE = "aws:amp/workspace:Workspace"
AMP_SCRAPER = "aws:amp/scraper:Scraper"

EFA_INTERFACE_TYPES = ("efa", "efa-only")
# Resources that cost money: these must carry the allocation tags even where the program gave them none.
COST_BEARING = frozenset({ASG, INSTANCE, LAUNCH_TEMPLATE, FSX_LUSTRE, EFS, NAT_GATEWAY, EIP, EBS_VOLUME})


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


def root_volumes_gib(mappings: list[Any]) -> float:
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
    nodes = count(asg.get("maxSize"))
    if nodes is None:
        nodes = count(asg.get("desiredCapacity"))
    if not isinstance(it, str) or nodes is None:
        return None
    assert lt is not None
    return Fleet(
        asg,
        it,
        nodes,
        template_market(lt),
        asg.region or lt.region,
        root_volumes_gib(items(lt.props, "blockDeviceMappings")),
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
        else root_volumes_gib(items(lt.props, "blockDeviceMappings") if lt else [])
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
    """EFS is billed per GiB stored, which the resource does not say: the size the cluster declares it was
    planned for (the AiCluster's `filesystems`, by the file system's aicluster:storage tag), else unknown."""
    tiers = stack.catalog.storage_tiers_for("aws", "nfs")
    name = fs.get("tags", STORAGE_TAG)
    size = stack.declared("filesystems", name, "capacity_gib") if isinstance(name, str) else None
    capacity_gib = float(size) if isinstance(size, int | float) and not isinstance(size, bool) else None
    return Filesystem(fs, "efs", capacity_gib, None, tiers[0] if tiers else None, fs.region)


FLEETS: FleetReaders = (((ASG,), _asg_fleet), ((INSTANCE,), _instance_fleet))
FILESYSTEMS: FilesystemReaders = (((FSX_LUSTRE,), _lustre), ((EFS,), _efs))


def _aws_nvlink(stack: Stack, fleet: Fleet, domain: NvlinkDomain) -> NvlinkGroup:
    """An Auto Scaling group (or instances) of a type sold only in UltraServers (p6e-gb200: u-p6e-gb200x36 = 9
    instances, x72 = 18): its size must be whole UltraServers, each its own Capacity Block; EC2 takes no topology
    setting (the UltraServer is the placement)."""
    asg = fleet.res.type == ASG
    return NvlinkGroup(
        fleet,
        domain,
        size_key="maxSize" if asg else "the instance count",
        noun="Auto Scaling group" if asg else "instance",
    )


NVLINK: NvlinkReaders = (((ASG, INSTANCE), _aws_nvlink),)


def efa_interfaces(lt: Res) -> list[Any]:
    """A launch template's EFA network interfaces (efa, or efa-only)."""
    return [n for n in items(lt.props, "networkInterfaces") if get(n, "interfaceType") in EFA_INTERFACE_TYPES]


def _public_ips(res: Res) -> Iterator[Exposure]:
    if res.type == INSTANCE and truthy(res.get("associatePublicIpAddress")):
        yield Exposure(
            f"instance {res.name} gets a public IP (associatePublicIpAddress = true)",
            "set it false and reach the node through SSM or a bastion",
        )
    for i, nic in enumerate(items(res.props, "networkInterfaces")):
        if truthy(get(nic, "associatePublicIpAddress")):
            yield Exposure(
                f"{res.kind} {res.name} gives network interface {i} (card {get(nic, 'networkCardIndex', default=0)}) "
                "a public IP (associatePublicIpAddress = true)",
                "set it false: nodes egress through NAT",
            )


PUBLIC_IPS = Reader(_public_ips, frozenset({LAUNCH_TEMPLATE, INSTANCE}))


def _ports(protocol: Any, lo: Any, hi: Any) -> tuple[PortRange, ...] | None:
    """The ports a security group rule opens: all for protocol -1 (all traffic), its range for TCP, else none."""
    proto = str(protocol).lower()
    if proto in ("-1", "all"):
        return None
    if proto not in ("tcp", "6") or not isinstance(lo, int | float) or not isinstance(hi, int | float):
        return ()
    return ((lo, hi),)


def _ingress(res: Res) -> Iterator[Ingress]:
    """A security group's inline ingress entries, or a standalone ingress rule."""
    rules: list[tuple[str, Any, Any, Any, set[str]]] = []
    if res.type == SECURITY_GROUP:
        for i, r in enumerate(items(res.props, "ingress")):
            cidrs = {str(c) for c in items(r, "cidrBlocks") + items(r, "ipv6CidrBlocks")}
            rules.append((f"ingress[{i}]", get(r, "protocol"), get(r, "fromPort"), get(r, "toPort"), cidrs))
    elif res.type == SG_INGRESS_RULE:
        cidrs = {str(c) for c in (res.get("cidrIpv4"), res.get("cidrIpv6")) if isinstance(c, str)}
        rules.append(("rule", res.get("ipProtocol"), res.get("fromPort"), res.get("toPort"), cidrs))
    elif res.type == SG_RULE and res.get("type") == "ingress":
        cidrs = {str(c) for c in items(res.props, "cidrBlocks") + items(res.props, "ipv6CidrBlocks")}
        rules.append(("rule", res.get("protocol"), res.get("fromPort"), res.get("toPort"), cidrs))
    for where, proto, lo, hi, cidrs in rules:
        shown = f"protocol {proto}, ports {lo}-{hi}"
        yield Ingress(
            f"security group {res.name} {where}", tuple(sorted(cidrs & INTERNET)), _ports(proto, lo, hi), shown
        )


INGRESS = Reader(_ingress, frozenset({SECURITY_GROUP, SG_INGRESS_RULE, SG_RULE}))


def _tags(res: Res) -> Iterator[TagSet]:
    """Declared tags, or a type that costs money; an Auto Scaling group's tags count where they propagate to its
    instances at launch; the provider's defaultTags count on every resource."""
    if res.provider != "aws" or not (res.type in COST_BEARING or "tags" in res.props):
        return
    tags = res.get("tags")
    if tags is UNKNOWN:
        return
    if res.type == ASG:
        own = {str(get(t, "key")) for t in items(res.props, "tags") if truthy(get(t, "propagateAtLaunch"))}
    else:
        own = map_keys(tags)
    keys = frozenset(own | provider_keys(res, "defaultTags", "tags"))
    yield TagSet(res, keys, "tags that propagate at launch" if res.type == ASG else "tags")


TAGS = Reader(_tags, provider="aws")


def trail_ok(trail: Res) -> bool:
    """A CloudTrail trail that records every region's API activity with log file validation, and is on."""
    return (
        truthy(trail.get("isMultiRegionTrail"))
        and truthy(trail.get("enableLogFileValidation"))
        and trail.get("enableLogging") is not False
    )
