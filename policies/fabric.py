"""Fabric correctness: the settings without which GPU-to-GPU traffic silently falls back to TCP or
splits into islands (EFA on AWS, GPUDirect NICs on GCP, InfiniBand scale sets on Azure)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import InstanceType, load_catalog

from .facts import (
    ASG,
    GCP_INSTANCE,
    GCP_NETWORK,
    GCP_SUBNETWORK,
    GCP_TEMPLATES,
    LAUNCH_TEMPLATE,
    SECURITY_GROUP,
    SUBNET,
    UNKNOWN,
    Res,
    Stack,
    get,
    items,
    template_market,
)
from .rule import Ctx, Meta, NotApplicable, ResourceRule, StackRule

MANDATORY = EnforcementLevel.MANDATORY
EFA_TYPES = ("efa", "efa-only")
SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


def _efa_interfaces(lt: Res) -> list[Any]:
    return [n for n in items(lt.props, "networkInterfaces") if get(n, "interfaceType") in EFA_TYPES]


# --------------------------------------------------------------------------------------------------
# Every EFA card declared


def _efa_cards(res: Res, ctx: Ctx) -> Iterator[str]:
    it_name = res.get("instanceType")
    if not isinstance(it_name, str):
        return
    it = load_catalog().instance_type("aws", it_name)
    limits = it.network.aws if it else None
    if it is None or limits is None or limits.efa_interfaces == 0 or not it.accelerator_count:
        return
    expected = min(limits.efa_interfaces, limits.network_cards)
    cards = {get(n, "networkCardIndex", default=0) for n in _efa_interfaces(res)}
    if cards is UNKNOWN:
        return
    missing = [c for c in range(expected) if c not in cards]
    if not cards:
        yield (
            f"launch template {res.name} declares no EFA interface for {it_name}: NCCL falls back to TCP sockets "
            f"at a fraction of the {it.network.bandwidth_gbps:g} Gb/s fabric; declare an EFA interface on each of "
            f"its {expected} network cards"
        )
    elif missing:
        shown = ", ".join(str(c) for c in missing[:8]) + (" ..." if len(missing) > 8 else "")
        yield (
            f"launch template {res.name} declares EFA on {len(cards)} of the {expected} network cards of "
            f"{it_name} (missing cards {shown}): those NICs carry no RDMA traffic; declare one efa-only "
            "interface per card"
        )


efa_cards = ResourceRule(
    Meta(
        name="aws-ec2-launchtemplate-missing-efa-cards",
        display_name="Every EFA card declared",
        description="GPU launch templates declare an EFA interface on every EFA-capable network card.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Declare one efa-only interface per network card (card 0: ENA primary + efa-only on device 1); "
        "aicluster pools do this from the catalog.",
    ),
    {LAUNCH_TEMPLATE},
    _efa_cards,
)

# --------------------------------------------------------------------------------------------------
# EFA security group references itself


def _all_traffic(rule: Any) -> bool:
    return str(get(rule, "protocol", default=get(rule, "ipProtocol"))) in ("-1", "all")


def _self_ingress_egress(sg: Res, stack: Stack) -> tuple[bool, bool]:
    ingress = any(_all_traffic(r) and get(r, "self") is True for r in items(sg.props, "ingress"))
    egress = any(_all_traffic(r) and get(r, "self") is True for r in items(sg.props, "egress"))
    for rule in stack.of(SG_INGRESS_RULE, SG_EGRESS_RULE):
        linked = sg in rule.linked("securityGroupId") and sg in rule.linked("referencedSecurityGroupId")
        if linked and _all_traffic(rule.props):
            ingress |= rule.type == SG_INGRESS_RULE
            egress |= rule.type == SG_EGRESS_RULE
    return ingress, egress


def _efa_security_group(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    efa = [lt for lt in stack.of(LAUNCH_TEMPLATE) if _efa_interfaces(lt)]
    if not efa:
        raise NotApplicable("no launch template with EFA interfaces in the stack")
    judged = [(lt, groups) for lt in efa if (groups := lt.linked("networkInterfaces", SECURITY_GROUP))]
    if not judged:  # security groups given by id: not in this stack to judge
        raise NotApplicable("the EFA interfaces' security groups are given by id, not declared in the stack")
    for lt, groups in judged:
        checked = {sg.name: _self_ingress_egress(sg, stack) for sg in groups}
        if not any(i and e for i, e in checked.values()):
            detail = ", ".join(
                f"{n} ({'ingress' if i else 'no ingress'}/{'egress' if e else 'no egress'} from itself)"
                for n, (i, e) in sorted(checked.items())
            )
            yield (
                lt,
                f"launch template {lt.name} puts EFA interfaces in security groups none of which allows all traffic "
                f"to and from itself: {detail}; EFA needs an all-protocol self-referencing ingress and egress rule",
            )


efa_security_group = StackRule(
    Meta(
        name="aws-ec2-securitygroup-enforce-efa-self-reference",
        display_name="EFA security group",
        description="EFA interfaces sit in a security group allowing all traffic to and from itself.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Add ingress and egress rules with protocol -1 and self = true to the EFA security group.",
    ),
    _efa_security_group,
    types={LAUNCH_TEMPLATE},
)

# --------------------------------------------------------------------------------------------------
# EFA pools in one Availability Zone


def _efa_single_az(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    efa = [
        asg
        for asg in stack.of(ASG)
        if (lts := asg.linked("launchTemplate", LAUNCH_TEMPLATE)) and _efa_interfaces(lts[0])
    ]
    if not efa:
        raise NotApplicable("no Auto Scaling group of EFA nodes in the stack")
    for asg in efa:
        zones = {str(z) for z in items(asg.props, "availabilityZones")}
        subnets = asg.linked("vpcZoneIdentifiers", SUBNET)
        zones |= {str(z) for s in subnets if isinstance(z := s.get("availabilityZone"), str)}
        named = items(asg.props, "vpcZoneIdentifiers")
        if len(zones) > 1 or (not zones and len(named) > 1):
            where = ", ".join(sorted(zones)) if zones else f"{len(named)} subnets"
            yield (
                asg,
                f"Auto Scaling group {asg.name} spreads EFA nodes over {where}; EFA traffic does not cross "
                "Availability Zones, so nodes in different zones cannot talk over the fabric. Give it one subnet",
            )


efa_single_az = StackRule(
    Meta(
        name="aws-autoscaling-group-enforce-efa-single-az",
        display_name="EFA pools in one AZ",
        description="Auto Scaling groups of EFA nodes launch into a single Availability Zone.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Use one subnet (one zone) per EFA pool; set the pool's zone in the stack.",
    ),
    _efa_single_az,
    types={ASG},
)

# --------------------------------------------------------------------------------------------------
# No placement group with capacity blocks

PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"


def _capacity_block_placement(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    if not any(template_market(lt) == "capacity-block" for lt in stack.of(LAUNCH_TEMPLATE)):
        raise NotApplicable("no capacity-block launch template in the stack")
    for asg in stack.of(ASG):
        lts = asg.linked("launchTemplate", LAUNCH_TEMPLATE)
        if not lts or template_market(lts[0]) != "capacity-block":
            continue
        pg = asg.get("placementGroup")
        if pg is not None or asg.linked("placementGroup"):
            yield (
                asg,
                f"Auto Scaling group {asg.name} launches into a capacity block and also names a placement group; "
                "capacity blocks come co-located and launches into them fail with a placement group: remove it",
            )
    for lt in stack.of(LAUNCH_TEMPLATE):
        if template_market(lt) == "capacity-block" and lt.get("placement", "groupName") is not None:
            yield (
                lt,
                f"launch template {lt.name} targets a capacity block and sets placement.groupName; remove it",
            )


capacity_block_placement = StackRule(
    Meta(
        name="aws-ec2-placementgroup-disallow-capacity-block",
        display_name="No placement group for capacity blocks",
        description="Capacity-block launches name no placement group (the block is already co-located).",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Drop the placement group from pools with market: capacity-block (aicluster plans none).",
    ),
    _capacity_block_placement,
    types={ASG, LAUNCH_TEMPLATE},
)

# --------------------------------------------------------------------------------------------------
# GCP: A3/A4 GPU NICs


def _gcp_nic_layout(res: Res) -> Iterator[str]:
    """What a GPU VM or instance template lacks of the NIC layout its machine type needs (catalog: network.fabric
    and network.gpu_nics). GPUDirect-TCPX/TCPXO (A3 High, A3 Mega): nic0 plus one gVNIC per GPU NIC, every NIC in
    a VPC of its own. GPUDirect RDMA (A3 Ultra, A4): two gVNICs in two VPCs, then the MRDMA NICs in one RoCE VPC,
    a subnet each.

    Networks are usually unknown during preview: the check then counts the distinct VPCs and subnets the NICs
    reference through the engine's property dependencies (which the engine reports for all NICs together, so a
    shortfall is certain, a match is all it can tell), and compares `network`/`subnetwork` values themselves
    where they are known."""
    it = _gcp_gpu_machine(res)
    if it is None:
        return
    machine = str(res.get("machineType"))
    rdma = it.network.fabric == "gpudirect-rdma"
    system = 2 if rdma else 1
    expected = system + it.network.gpu_nics
    nics = items(res.props, "networkInterfaces")
    where = f"{machine} {_gcp_kind(res)} {res.name}"
    if res.get("networkInterfaces") is UNKNOWN or any(n is UNKNOWN for n in nics):
        return
    if len(nics) != expected:
        yield (
            f"{where} declares {len(nics)} network interfaces; it needs {expected} ({system} for the host, "
            f"{it.network.gpu_nics} for GPU traffic, "
            + ("the MRDMA NICs in one RoCE VPC, a subnet each" if rdma else "each in its own VPC")
            + "): without them NCCL falls back to the host NIC at a fraction of the bandwidth"
        )
        return
    types = [get(n, "nicType") for n in nics]
    if rdma:
        wanted = ["GVNIC"] * system + ["MRDMA"] * it.network.gpu_nics
        wrong = [f"nic{i} {t or 'unset'}" for i, (t, w) in enumerate(zip(types, wanted, strict=True)) if t != w]
        if wrong:
            yield (
                f"{where} needs nicType GVNIC on nic0-nic1 and MRDMA on nic2-nic{expected - 1}; got "
                f"{', '.join(wrong)}: GPUDirect RDMA runs only over MRDMA NICs"
            )
    else:
        wrong = [f"nic{i} {t}" for i, t in enumerate(types) if isinstance(t, str) and t != "GVNIC"]
        if wrong:
            yield (
                f"{where} needs gVNIC on every NIC (nicType GVNIC); got {', '.join(wrong)}: GPUDirect-TCPX runs only "
                "over gVNIC"
            )
    networks = [get(n, "network") for n in nics]
    subnets = [get(n, "subnetwork") for n in nics]
    host_nets = networks[:system]
    gpu_nets = networks[system:]
    if all(isinstance(n, str) for n in networks):
        if rdma:
            distinct = len(set(host_nets)) == system and not set(host_nets) & set(gpu_nets) and len(set(gpu_nets)) == 1
            shape = "the two gVNICs in two VPCs of their own and every MRDMA NIC in one RoCE VPC"
        else:
            distinct = len(set(networks)) == expected
            shape = "every NIC in a VPC of its own"
        if not distinct:
            yield f"{where} does not put {shape}: NICs that share a VPC share its bandwidth and routes"
    rdma_subnets = subnets[system:]
    if rdma and all(isinstance(n, str) for n in rdma_subnets) and len(set(rdma_subnets)) != len(rdma_subnets):
        yield f"{where} puts two MRDMA NICs in one subnet; each MRDMA NIC needs a subnet of its own in the RoCE VPC"
    linked_nets = {id(r) for r in res.linked("networkInterfaces", GCP_NETWORK)}
    linked_subnets = {id(r) for r in res.linked("networkInterfaces", GCP_SUBNETWORK)}
    known_nets = {n for n in networks if isinstance(n, str)}
    known_subnets = {n for n in subnets if isinstance(n, str)}
    need_nets = system + 1 if rdma else expected
    if linked_nets and len(linked_nets) + len(known_nets) < need_nets:
        yield (
            f"{where} reaches {len(linked_nets) + len(known_nets)} VPCs through its network interfaces; it needs "
            f"{need_nets} (" + ("two gVNIC VPCs and a RoCE VPC" if rdma else "a VPC of its own for every NIC") + ")"
        )
    if rdma and linked_subnets and len(linked_subnets) + len(known_subnets) < expected:
        yield (
            f"{where} reaches {len(linked_subnets) + len(known_subnets)} subnets through its network interfaces; it "
            f"needs {expected} (one per gVNIC and one per MRDMA NIC)"
        )


def _gcp_gpu_machine(res: Res) -> InstanceType | None:
    """The catalog entry of a VM's or template's machine type when it has GPU NICs (A3, A4), else None."""
    machine = res.get("machineType")
    if not isinstance(machine, str):
        return None
    it = load_catalog().instance_type("gcp", machine.rsplit("/", 1)[-1])
    return it if it is not None and it.network.gpu_nics else None


def _gcp_kind(res: Res) -> str:
    return "instance template" if res.type in GCP_TEMPLATES else "VM"


def _gcp_gpu_nics(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    gpu = [res for res in stack.of(*GCP_TEMPLATES, GCP_INSTANCE) if _gcp_gpu_machine(res) is not None]
    if not gpu:
        raise NotApplicable("no VM or instance template of a machine type with GPU NICs (A3, A4) in the stack")
    for res in gpu:
        for message in _gcp_nic_layout(res):
            yield res, message


gcp_gpu_nics = StackRule(
    Meta(
        name="gcp-compute-instance-missing-gpu-nics",
        display_name="A3/A4 GPU NIC layout",
        description="A3/A4 VMs and templates declare the GPU NICs, NIC types and VPCs their machine type needs.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Declare one network interface per GPU VPC (A3 High 4, A3 Mega 8 gVNICs; A3 Ultra/A4 2 gVNICs + "
        "8 MRDMA in a RoCE VPC, a subnet each); aicluster pools derive the layout from the catalog.",
    ),
    _gcp_gpu_nics,
    types={*GCP_TEMPLATES, GCP_INSTANCE},
)

# --------------------------------------------------------------------------------------------------
# Azure: InfiniBand scale sets

VMSS = "azure-native:compute:VirtualMachineScaleSet"
IB_DOMAIN_MAX_VMS = 100  # VMs per placement group (scale set) by default


def _ib_vmss(res: Res) -> bool:
    size = res.get("sku", "name")
    if not isinstance(size, str):
        return False
    it = load_catalog().instance_type("azure", size)
    return it is not None and it.network.fabric == "infiniband"


def _azure_ib_placement(res: Res, ctx: Ctx) -> Iterator[str]:
    if not _ib_vmss(res):
        return
    if res.get("singlePlacementGroup") is not True:
        yield (
            f"scale set {res.name} ({res.get('sku', 'name')}) does not set singlePlacementGroup = true: VMs outside "
            "one placement group do not share an InfiniBand fabric"
        )
    fd = res.get("platformFaultDomainCount")
    if fd != 1:
        yield f"scale set {res.name} has platformFaultDomainCount {fd}; InfiniBand scale sets need 1"
    if res.get("overprovision") is not False:
        yield (
            f"scale set {res.name} leaves overprovisioning on: extra VMs join the fabric and are deleted; "
            "set overprovision = false"
        )


azure_ib_placement = ResourceRule(
    Meta(
        name="azure-compute-vmss-enforce-infiniband-placement",
        display_name="InfiniBand scale-set placement",
        description="InfiniBand scale sets use one placement group, one fault domain and no overprovisioning.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Set singlePlacementGroup true, platformFaultDomainCount 1 and overprovision false.",
    ),
    {VMSS},
    _azure_ib_placement,
)


def _azure_ib_size(res: Res, ctx: Ctx) -> Iterator[str]:
    capacity = res.get("sku", "capacity")
    limit = int(ctx.setting("max_vms", ("fabric", "ib_domain_max_vms"), IB_DOMAIN_MAX_VMS))
    if _ib_vmss(res) and isinstance(capacity, int | float) and capacity > limit:
        yield (
            f"scale set {res.name} asks for {capacity:g} VMs; one InfiniBand placement group holds at most "
            f"{limit}: split the pool into scale sets of up to {limit}"
            + (" (or have Azure support raise the limit, up to 300, and set max_vms)" if limit < 300 else "")
        )


azure_ib_size = ResourceRule(
    Meta(
        name="azure-compute-vmss-disallow-over-100-vms",
        display_name="InfiniBand scale-set size",
        description="An InfiniBand scale set holds at most 100 VMs (one placement group).",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Split larger pools into several scale sets of at most 100 VMs (300 once Azure support raises it).",
        config={
            "max_vms": {
                "type": "integer",
                "minimum": 1,
                "maximum": 300,
                "description": "VMs one InfiniBand scale set may hold. Default: what the AiCluster declares "
                "(fabric.ib_domain_max_vms), else 100.",
            }
        },
    ),
    {VMSS},
    _azure_ib_size,
)

POLICIES: list[ResourceRule | StackRule] = [
    efa_cards,
    efa_security_group,
    efa_single_az,
    capacity_block_placement,
    gcp_gpu_nics,
    azure_ib_placement,
    azure_ib_size,
]
