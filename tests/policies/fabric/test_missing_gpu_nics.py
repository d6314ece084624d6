"""The A3/A4 GPU NIC layout: NIC counts, types and VPCs per machine type, known or through property dependencies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from policies.facts import Res
from policies.rule import NotApplicable
from tests.policies.conftest import capture_of, judge, res, stack_findings
from tests.policies.resources.gcp import A3_MEGA, NETWORK, SUBNETWORK, TEMPLATE, controller, nics

NICS = "gcp-compute-instance-missing-gpu-nics"


def layout(machine: str, nic_list: list[dict[str, Any]], **links: list[Res]) -> list[Res]:
    return [res(TEMPLATE, "x", {"machineType": machine, "networkInterfaces": nic_list}, **links)]


def known(*networks: str, types: Sequence[str] = (), subnets: Sequence[str] = ()) -> list[dict[str, Any]]:
    out = []
    for i, n in enumerate(networks):
        nic: dict[str, Any] = {"network": n, "nicType": types[i] if types else "GVNIC"}
        if subnets:
            nic["subnetwork"] = subnets[i]
        out.append(nic)
    return out


RDMA_TYPES = ["GVNIC", "GVNIC"] + ["MRDMA"] * 8
A4X_MAX = "a4x-maxgpu-4g-metal"
METAL_TYPES = ["IDPF", "IDPF"] + ["MRDMA"] * 8


def metal(*, types: Sequence[str] = METAL_TYPES, ipv6: bool = True) -> list[dict[str, Any]]:
    """A4X Max as aicluster declares it: IDPF host NICs in two VPCs, 8 IPv6-only MRDMA NICs sharing the one subnet
    the RoCE VPC's vpc-roce-metal profile makes."""
    out = known("host", "idpf", *["roce"] * 8, types=types, subnets=["s0", "s1", *["roce-sub"] * 8])
    for nic in out[2:]:
        if ipv6:
            nic["stackType"] = "IPV6_ONLY"
    return out


def test_a_tpu_stack_is_not_applicable_to_the_gpu_nic_rule() -> None:
    """gcp-tpu-v5p: TPU hosts and an n2 controller VM: the A3/A4 NIC rule has no machine to judge."""
    name = "gcp-compute-instance-missing-gpu-nics"
    result = judge(capture_of("gcp-tpu-v5p"), [name])
    assert result.passed == []
    assert result.not_applicable == [
        {
            "policy": name,
            "reason": "no VM, instance template or GKE node pool of a machine type with GPU NICs (A3, A4) in the stack",
        }
    ]


@pytest.mark.parametrize(
    ("machine", "nic_list", "expected"),
    [
        pytest.param("a3-highgpu-8g", known(*(f"net-{i}" for i in range(5))), None, id="a3-high-ok"),
        pytest.param(A3_MEGA, known(*(f"net-{i}" for i in range(9))), None, id="a3-mega-ok"),
        pytest.param(A3_MEGA, nics(), None, id="a3-mega-unknown-networks"),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "gvnic", *["roce"] * 8, types=RDMA_TYPES, subnets=[f"s{i}" for i in range(10)]),
            None,
            id="a3-ultra-ok",
        ),
        pytest.param("a4-highgpu-8g", nics("a4-highgpu-8g"), None, id="a4-unknown-networks"),
        pytest.param(
            A3_MEGA,
            known("net-0"),
            "a3-megagpu-8g instance template x declares 1 network interfaces; it needs 9 (1 for the host, 8 for GPU "
            "traffic, each in its own VPC): without them NCCL falls back to the host NIC at a fraction of the "
            "bandwidth",
            id="a3-mega-tcp-fallback",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known(*(f"n{i}" for i in range(9))),
            "a3-ultragpu-8g instance template x declares 9 network interfaces; it needs 10 (2 for the host, 8 for GPU "
            "traffic, the MRDMA NICs in one RoCE VPC, a subnet each): without them NCCL falls back to the host NIC at "
            "a fraction of the bandwidth",
            id="a3-ultra-one-short",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "gvnic", *["roce"] * 8, subnets=[f"s{i}" for i in range(10)]),
            "a3-ultragpu-8g instance template x needs nicType GVNIC on nic0-nic1 and MRDMA on nic2-nic9; got nic2 "
            "GVNIC, nic3 GVNIC, nic4 GVNIC, nic5 GVNIC, nic6 GVNIC, nic7 GVNIC, nic8 GVNIC, nic9 GVNIC: GPUDirect RDMA "
            "runs only over MRDMA NICs",
            id="a3-ultra-gvnic-instead-of-mrdma",
        ),
        pytest.param(
            "a3-highgpu-8g",
            known("n0", "n1", "n2", "n3", "n4", types=["GVNIC", "VIRTIO_NET", "GVNIC", "GVNIC", "GVNIC"]),
            "a3-highgpu-8g instance template x needs gVNIC on every NIC (nicType GVNIC); got nic1 VIRTIO_NET: "
            "GPUDirect-TCPX runs only over gVNIC",
            id="a3-high-virtio",
        ),
        pytest.param(
            A3_MEGA,
            known("host", *["gpu"] * 8),
            "a3-megagpu-8g instance template x does not put every NIC in a VPC of its own: NICs that share a VPC share "
            "its bandwidth and routes",
            id="a3-mega-one-gpu-vpc",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "host", *["roce"] * 8, types=RDMA_TYPES, subnets=[f"s{i}" for i in range(10)]),
            "a3-ultragpu-8g instance template x does not put the two gVNICs in two VPCs of their own and every MRDMA "
            "NIC in one RoCE VPC: NICs that share a VPC share its bandwidth and routes",
            id="a3-ultra-gvnics-share-a-vpc",
        ),
        pytest.param(A4X_MAX, metal(), None, id="a4x-max-metal-ok"),
        pytest.param(
            A4X_MAX,
            metal(types=RDMA_TYPES),
            "a4x-maxgpu-4g-metal instance template x needs nicType IDPF on nic0-nic1 and MRDMA on nic2-nic9; got nic0 "
            "GVNIC, nic1 GVNIC: GPUDirect RDMA runs only over MRDMA NICs (a bare-metal instance's host NICs are IDPF)",
            id="a4x-max-gvnic-host-nics",
        ),
        pytest.param(
            A4X_MAX,
            metal(ipv6=False),
            "a4x-maxgpu-4g-metal instance template x needs stackType IPV6_ONLY on its MRDMA NICs; got nic2 unset, "
            "nic3 unset, nic4 unset, nic5 unset, nic6 unset, nic7 unset, nic8 unset, nic9 unset: the vpc-roce-metal "
            "RoCE network is IPv6 only",
            id="a4x-max-ipv4-mrdma",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "gvnic", *["roce"] * 8, types=RDMA_TYPES, subnets=["a", "b", *["s"] * 8]),
            "a3-ultragpu-8g instance template x puts two MRDMA NICs in one subnet; each MRDMA NIC needs a subnet of "
            "its own in the RoCE VPC",
            id="a3-ultra-mrdma-share-a-subnet",
        ),
    ],
)
def test_gpu_nic_layout(machine: str, nic_list: list[dict[str, Any]], expected: str | None) -> None:
    assert stack_findings(NICS, layout(machine, nic_list)) == ([expected] if expected else [])


def test_a_machine_without_gpu_nics_is_not_applicable() -> None:
    """A2 has no GPU NICs: nothing for the rule to judge, so not applicable (not passed)."""
    with pytest.raises(NotApplicable, match=r"no VM, instance template or GKE node pool of a machine type with GPU"):
        stack_findings(NICS, layout("a2-ultragpu-8g", known("net-0")))


def test_gpu_nic_vpcs_through_property_dependencies() -> None:
    """Networks are unknown during preview: the VPCs and subnets the NICs reference are counted instead."""
    nets = [res(NETWORK, f"net-{i}", {}) for i in range(9)]
    assert stack_findings(NICS, layout(A3_MEGA, nics(), networkInterfaces=nets)) == []
    assert stack_findings(NICS, layout(A3_MEGA, nics(), networkInterfaces=nets[:2])) == [
        "a3-megagpu-8g instance template x reaches 2 VPCs through its network interfaces; it needs 9 (a VPC of its "
        "own for every NIC)"
    ]
    ultra = "a3-ultragpu-8g"
    subnets = [res(SUBNETWORK, f"sub-{i}", {}) for i in range(10)]
    assert stack_findings(NICS, layout(ultra, nics(ultra), networkInterfaces=nets[:3] + subnets)) == []
    assert stack_findings(NICS, layout(ultra, nics(ultra), networkInterfaces=nets[:3] + subnets[:3])) == [
        "a3-ultragpu-8g instance template x reaches 3 subnets through its network interfaces; it needs 10 (one per "
        "gVNIC and one per MRDMA NIC)"
    ]


def test_gpu_vm_is_judged_too() -> None:
    vm = controller(machineType=A3_MEGA)
    assert stack_findings(NICS, [vm]) == [
        "a3-megagpu-8g VM ctl declares 1 network interfaces; it needs 9 (1 for the host, 8 for GPU traffic, each in "
        "its own VPC): without them NCCL falls back to the host NIC at a fraction of the bandwidth"
    ]


GKE_POOL = "gcp:container/nodePool:NodePool"


def gke_pool(machine: str, networks: list[str] | None) -> list[Res]:
    config = None if networks is None else {"additionalNodeNetworkConfigs": [{"network": n} for n in networks]}
    return [res(GKE_POOL, "p0", {"nodeConfig": {"machineType": machine}, "networkConfig": config})]


@pytest.mark.parametrize(
    ("machine", "networks", "expected"),
    [
        pytest.param(A3_MEGA, [f"gpu-{i}" for i in range(8)], None, id="a3-mega-ok"),
        pytest.param("a3-ultragpu-8g", ["gvnic", *["roce"] * 8], None, id="a3-ultra-ok"),
        pytest.param(
            A3_MEGA,
            None,
            "a3-megagpu-8g GKE node pool p0 declares 0 additional node networks; it needs 8 (nic0 is the cluster's "
            "VPC; the 8 GPU NICs each in a VPC of its own): without them NCCL falls back to the host NIC at a fraction "
            "of the bandwidth",
            id="a3-mega-no-gpu-networks",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            ["gvnic", *["roce"] * 7],
            "a3-ultragpu-8g GKE node pool p0 declares 8 additional node networks; it needs 9 (nic0 is the cluster's "
            "VPC; one more gVNIC VPC, then the 8 MRDMA NICs in one RoCE VPC, a subnet each): without them NCCL falls "
            "back to the host NIC at a fraction of the bandwidth",
            id="a3-ultra-one-short",
        ),
        pytest.param(
            A3_MEGA,
            ["gpu"] * 8,
            "a3-megagpu-8g GKE node pool p0 does not put every GPU NIC in a VPC of its own: NICs that share a VPC "
            "share its bandwidth and routes",
            id="a3-mega-one-vpc",
        ),
        pytest.param("n2-standard-8", None, None, id="no-gpu-nics"),
    ],
)
def test_gke_node_pools_get_the_gpu_nic_rule(machine: str, networks: list[str] | None, expected: str | None) -> None:
    """Issue 30 #13: on GKE stacks the rule was not applicable, so Kubernetes A3 stacks had no NIC check."""
    resources = gke_pool(machine, networks)
    if machine.startswith("n2"):
        with pytest.raises(NotApplicable):
            stack_findings(NICS, resources)
        return
    assert stack_findings(NICS, resources) == ([expected] if expected else [])


def test_the_gke_example_stacks_pass_the_gpu_nic_rule() -> None:
    for stack in ("gke-a3mega", "gke-a4x"):
        result = judge(capture_of(stack), [NICS])
        assert result.passed == [NICS], (stack, result)
