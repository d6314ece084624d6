"""A3/A4 GPU NIC layout (GCP): VMs and instance templates of a machine type with GPU NICs declare the NICs, NIC
types and VPCs that machine type needs (catalog: network.fabric, network.gpu_nics and, for bare-metal A4X Max,
network.gcp); GKE node pools of such a machine type declare them as additional node networks (GKE multi-networking:
nic0 is the cluster's own VPC, every other NIC one `networkConfig.additionalNodeNetworkConfigs` entry)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import GcpNicLayout, InstanceType, load_catalog

from ..facts.engine import UNKNOWN, Res, get, items
from ..facts.gcp import GCP_INSTANCE, GCP_NETWORK, GCP_SUBNETWORK, GCP_TEMPLATES
from ..facts.kubernetes import GKE_NODE_POOL
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _gcp_nic_layout(res: Res) -> Iterator[str]:
    """What a GPU VM or instance template lacks of the NIC layout its machine type needs (catalog: network.fabric
    and network.gpu_nics). GPUDirect-TCPX/TCPXO (A3 High, A3 Mega): nic0 plus one gVNIC per GPU NIC, every NIC in
    a VPC of its own. GPUDirect RDMA (A3 Ultra, A4, A4X): two gVNICs in two VPCs, then the MRDMA NICs in one RoCE
    VPC, a subnet each. Bare-metal A4X Max (catalog network.gcp): IDPF host NICs, and the MRDMA NICs share the one
    IPv6 subnet the RoCE VPC's `vpc-roce-metal` profile makes, each with stackType IPV6_ONLY.

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
    layout = it.network.gcp or GcpNicLayout()
    host = layout.host_nic_type
    shared = layout.rdma_network_profile == "vpc-roce-metal"  # one subnet, made by the profile, for every MRDMA NIC
    each = "sharing the one subnet its profile makes" if shared else "a subnet each"
    nics = items(res.props, "networkInterfaces")
    where = f"{machine} {_gcp_kind(res)} {res.name}"
    if res.get("networkInterfaces") is UNKNOWN or any(n is UNKNOWN for n in nics):
        return
    if len(nics) != expected:
        yield (
            f"{where} declares {len(nics)} network interfaces; it needs {expected} ({system} for the host, "
            f"{it.network.gpu_nics} for GPU traffic, "
            + (f"the MRDMA NICs in one RoCE VPC, {each}" if rdma else "each in its own VPC")
            + "): without them NCCL falls back to the host NIC at a fraction of the bandwidth"
        )
        return
    types = [get(n, "nicType") for n in nics]
    if rdma:
        wanted = [host] * system + ["MRDMA"] * it.network.gpu_nics
        wrong = [f"nic{i} {t or 'unset'}" for i, (t, w) in enumerate(zip(types, wanted, strict=True)) if t != w]
        if wrong:
            yield (
                f"{where} needs nicType {host} on nic0-nic1 and MRDMA on nic2-nic{expected - 1}; got "
                f"{', '.join(wrong)}: GPUDirect RDMA runs only over MRDMA NICs"
                + (" (a bare-metal instance's host NICs are IDPF)" if host == "IDPF" else "")
            )
        if layout.rdma_stack_type == "IPV6_ONLY":
            stacks = [get(n, "stackType") for n in nics[system:]]
            v4 = [f"nic{system + i} {t or 'unset'}" for i, t in enumerate(stacks) if t != "IPV6_ONLY"]
            if v4:
                yield (
                    f"{where} needs stackType IPV6_ONLY on its MRDMA NICs; got {', '.join(v4)}: the "
                    f"{layout.rdma_network_profile} RoCE network is IPv6 only"
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
            pair = "IDPF NICs" if host == "IDPF" else "gVNICs"
            shape = f"the two {pair} in two VPCs of their own and every MRDMA NIC in one RoCE VPC"
        else:
            distinct = len(set(networks)) == expected
            shape = "every NIC in a VPC of its own"
        if not distinct:
            yield f"{where} does not put {shape}: NICs that share a VPC share its bandwidth and routes"
    rdma_subnets = subnets[system:]
    if (
        rdma
        and not shared
        and all(isinstance(n, str) for n in rdma_subnets)
        and len(set(rdma_subnets)) != len(rdma_subnets)
    ):
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
    # the subnet a vpc-roce-metal profile makes is no resource of the program: only the host NICs' subnets are linked
    need_subnets = system if shared else expected
    if rdma and linked_subnets and len(linked_subnets) + len(known_subnets) < need_subnets:
        yield (
            f"{where} reaches {len(linked_subnets) + len(known_subnets)} subnets through its network interfaces; it "
            f"needs {need_subnets} (" + ("one per IDPF NIC" if shared else "one per gVNIC and one per MRDMA NIC") + ")"
        )


def _gke_nic_layout(res: Res) -> Iterator[str]:
    """What a GKE node pool of a machine type with GPU NICs lacks of its layout: nic0 is the cluster's VPC, and every
    other NIC of the VM layout (_gcp_nic_layout) is one additional node network, each in a VPC of its own (TCPX/
    TCPXO), or the gVNIC's VPC then the RoCE VPC for every MRDMA NIC (GPUDirect RDMA)."""
    it = _gcp_gpu_machine(res)
    if it is None:
        return
    rdma = it.network.fabric == "gpudirect-rdma"
    system = 2 if rdma else 1
    wanted = system + it.network.gpu_nics - 1
    where = f"{get(res.props, 'nodeConfig', 'machineType')} GKE node pool {res.name}"
    extra = get(res.props, "networkConfig", "additionalNodeNetworkConfigs")
    if extra is UNKNOWN:
        return
    nets = items(res.props, "networkConfig", "additionalNodeNetworkConfigs")
    if any(n is UNKNOWN for n in nets):
        return
    if len(nets) != wanted:
        yield (
            f"{where} declares {len(nets)} additional node networks; it needs {wanted} (nic0 is the cluster's VPC; "
            + (
                f"one more gVNIC VPC, then the {it.network.gpu_nics} MRDMA NICs in one RoCE VPC, a subnet each"
                if rdma
                else f"the {it.network.gpu_nics} GPU NICs each in a VPC of its own"
            )
            + "): without them NCCL falls back to the host NIC at a fraction of the bandwidth"
        )
        return
    networks = [get(n, "network") for n in nets]
    if all(isinstance(n, str) for n in networks):
        gpu = networks[system - 1 :]
        distinct = len(set(networks)) == wanted if not rdma else (len(set(gpu)) == 1 and networks[0] not in gpu)
        if not distinct:
            shape = (
                "its gVNIC VPC and one RoCE VPC for every MRDMA NIC" if rdma else "every GPU NIC in a VPC of its own"
            )
            yield f"{where} does not put {shape}: NICs that share a VPC share its bandwidth and routes"


def _gcp_gpu_machine(res: Res) -> InstanceType | None:
    """The catalog entry of a VM's, template's or GKE node pool's machine type when it has GPU NICs (A3, A4)."""
    machine = res.get("machineType") if res.type != GKE_NODE_POOL else get(res.props, "nodeConfig", "machineType")
    if not isinstance(machine, str):
        return None
    it = load_catalog().instance_type("gcp", machine.rsplit("/", 1)[-1])
    return it if it is not None and it.network.gpu_nics else None


def _gcp_kind(res: Res) -> str:
    return "instance template" if res.type in GCP_TEMPLATES else "VM"


def _gcp_gpu_nics(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    gpu = [res for res in stack.of(*GCP_TEMPLATES, GCP_INSTANCE, GKE_NODE_POOL) if _gcp_gpu_machine(res) is not None]
    if not gpu:
        raise NotApplicable(
            "no VM, instance template or GKE node pool of a machine type with GPU NICs (A3, A4) in the stack"
        )
    for res in gpu:
        check = _gke_nic_layout if res.type == GKE_NODE_POOL else _gcp_nic_layout
        for message in check(res):
            yield res, message


POLICY = StackRule(
    Meta(
        name="gcp-compute-instance-missing-gpu-nics",
        display_name="A3/A4 GPU NIC layout",
        description="A3/A4 VMs, templates and GKE node pools declare the GPU NICs, NIC types and VPCs their machine "
        "type needs.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Declare one network interface per GPU VPC (A3 High 4, A3 Mega 8 gVNICs; A3 Ultra/A4 2 gVNICs + "
        "8 MRDMA in a RoCE VPC, a subnet each); aicluster pools derive the layout from the catalog.",
    ),
    _gcp_gpu_nics,
    types={*GCP_TEMPLATES, GCP_INSTANCE, GKE_NODE_POOL},
)
