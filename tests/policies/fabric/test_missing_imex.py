"""IMEX on multi-node NVLink pools: the A4X and GB200 NVL72 programs as aicluster builds them declare IMEX on every
domain (their scheduler's); a program whose AiCluster declares none shows none; a declaration per domain or, on
Kubernetes, the NVIDIA DRA driver with ComputeDomains shows it."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from policies.facts.aicluster import AICLUSTER_TYPE
from policies.facts.gcp import GCP_INSTANCE, GCP_MIG, GCP_TEMPLATE
from policies.facts.kubernetes import GKE_NODE_POOL, HELM_CHART, HELM_RELEASE
from policies.rule import NotApplicable
from tests.policies.conftest import judge, messages, mutated, res
from tests.policies.resources.nvlink import found

NAME = "aicluster-pool-missing-imex"
CLUSTER = "a4x"
WHY_NOT = (
    "without an IMEX daemon and channel on every node of a domain its GPUs cannot share memory across nodes and NCCL "
    "stops (no fallback)"
)
SLURM_FIX = (
    "run IMEX on every domain (aicluster's scheduler declares it per domain in the AiCluster's nvlink_domains[].imex; "
    "Slurm: an IMEX prolog or SwitchType=switch/nvidia_imex)"
)
A4X_POOL = "pool gb200 (a4x-gb200-gb200-nvl0, a4x-gb200-gb200-nvl1: 36 a4x-highgpu-4g nodes in NVLink domains of 18)"


def declare(*imex: Any) -> Any:
    """A mutation: the AiCluster declares the A4X pool's two domains, with these `imex` values."""
    domains = [
        {"id": f"gb200-nvl{k}", "pool": "gb200", "provider": "gcp", "instance_type": "a4x-highgpu-4g", "nodes": 18,
         "block": f"gb200-nvl{k}", "imex": value}
        for k, value in enumerate(imex)
    ]  # fmt: skip
    return {CLUSTER: lambda i: i.update(nvlink_domains=domains)}


def undeclared(cluster: str) -> Any:
    """A mutation: the AiCluster declares no NVLink domains (a program not built by aicluster's schedulers)."""
    return {cluster: lambda i: i.pop("nvlink_domains", None)}


def test_the_stacks_as_aicluster_builds_them_run_imex_on_every_domain(a4x: Capture, gb200_site: Capture) -> None:
    assert messages(judge(a4x, [NAME])) == []
    assert messages(judge(gb200_site, [NAME])) == []


def test_a_pool_nothing_runs_imex_on_is_reported_once(a4x: Capture, gb200_site: Capture) -> None:
    assert messages(judge(mutated(a4x, undeclared(CLUSTER)), [NAME])) == [
        f"{A4X_POOL} has no IMEX: nothing in the stack runs IMEX on it; {WHY_NOT}; {SLURM_FIX}"
    ]
    assert messages(judge(mutated(gb200_site, undeclared("gb200-su")), [NAME])) == [
        "pool gb200 (gb200-su-dfw1: 144 dgx-gb200-nvl72 nodes in NVLink domains of 18) has no IMEX: nothing in the "
        f"stack runs IMEX on it; {WHY_NOT}; {SLURM_FIX}"
    ]


@pytest.mark.parametrize(
    ("imex", "expected"),
    [
        pytest.param(("slurm-prolog", "slurm-prolog"), [], id="every-domain-declares-imex"),
        pytest.param(
            ("slurm-prolog", None),
            [
                f"{A4X_POOL} has no IMEX: the AiCluster component declares no IMEX for its domain gb200-nvl1; "
                f"{WHY_NOT}; {SLURM_FIX}"
            ],
            id="one-domain-without",
        ),
        pytest.param(
            (None, None),
            [
                f"{A4X_POOL} has no IMEX: the AiCluster component declares no IMEX for its domains gb200-nvl0, "
                f"gb200-nvl1; {WHY_NOT}; {SLURM_FIX}"
            ],
            id="declared-none",
        ),
    ],
)
def test_the_declared_domains_show_imex(a4x: Capture, imex: tuple[Any, ...], expected: list[str]) -> None:
    assert messages(judge(mutated(a4x, declare(*imex)), [NAME])) == expected


def _node_pool() -> Any:
    return res(
        GKE_NODE_POOL,
        "gb200-np",
        {"nodeCount": 18, "location": "us-east1-d", "nodeConfig": {"machineType": "a4x-highgpu-4g"}},
    )


DRA = {"chart": "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "version": "0.4.0"}


@pytest.mark.parametrize(
    ("driver", "imex"),
    [
        pytest.param(res(HELM_RELEASE, "dra", DRA), True, id="dra-driver-defaults"),
        pytest.param(
            res(
                HELM_CHART,
                "dra",
                {"chart": "nvidia-dra-driver-gpu", "values": {"resources": {"computeDomains": {"enabled": True}}}},
            ),
            True,
            id="ngc-chart",
        ),
        pytest.param(
            res(HELM_RELEASE, "dra", {**DRA, "values": {"resources": {"computeDomains": {"enabled": False}}}}),
            False,
            id="compute-domains-off",
        ),
        pytest.param(res(HELM_RELEASE, "gpu-operator", {"chart": "gpu-operator"}), False, id="another-chart"),
    ],
)
def test_kubernetes_pools_get_imex_from_the_dra_driver(driver: Any, imex: bool) -> None:
    expected = (
        []
        if imex
        else [
            "pool gb200-np (gb200-np: 18 a4x-highgpu-4g nodes in NVLink domains of 18) has no IMEX: nothing in the "
            f"stack runs IMEX on it; {WHY_NOT}; install the NVIDIA DRA driver (chart dra-driver-nvidia-gpu) with "
            "resources.computeDomains.enabled true"
        ]
    )
    assert found(NAME, [_node_pool(), driver]) == expected


def test_the_dra_driver_does_not_stand_for_imex_on_vms_kubernetes_does_not_run() -> None:
    template = res(GCP_TEMPLATE, "tpl", {"machineType": "a4x-highgpu-4g"})
    mig = res(GCP_MIG, "mig", {"targetSize": 18, "zone": "us-east1-d"}, versions=[template])
    assert found(NAME, [template, mig, res(HELM_RELEASE, "dra", DRA)]) == [
        f"pool mig (mig: 18 a4x-highgpu-4g nodes in NVLink domains of 18) has no IMEX: nothing in the stack runs IMEX "
        f"on it; {WHY_NOT}; {SLURM_FIX}"
    ]


def test_single_nodes_and_other_stacks_are_not_judged(p5_small: Capture) -> None:
    assert judge(p5_small, [NAME]).not_applicable == [
        {"policy": NAME, "reason": "no multi-node NVLink pool (GB200/GB300 NVL72) in the stack"}
    ]
    with pytest.raises(NotApplicable):
        found(NAME, [res(GCP_INSTANCE, "vm", {"machineType": "a4x-highgpu-4g", "zone": "us-east1-d"})])
    with pytest.raises(NotApplicable):
        found(NAME, [res(AICLUSTER_TYPE, "c", {"cluster": "c"})])
