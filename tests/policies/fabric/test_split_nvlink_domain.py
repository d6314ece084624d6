"""Whole NVLink domains: rack-scale pools launched, placed and scheduled in whole domains, judged on the A4X and
GB200 NVL72 programs as the engine hands them over, and on hand-built AWS, Azure, GCP and AiCluster resources."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import Capture
from policies.facts.aicluster import AICLUSTER_TYPE, ONPREM_SITE
from policies.facts.aws import ASG, LAUNCH_TEMPLATE
from policies.facts.azure import AZURE_VMSS
from policies.facts.gcp import GCP_INSTANCE, GCP_MIG, GCP_RESOURCE_POLICY, GCP_TEMPLATE
from policies.rule import NotApplicable
from tests.policies.conftest import judge, messages, mutated, res
from tests.policies.resources.nvlink import found, rack_scale_catalog

NAME = "aicluster-pool-disallow-split-nvlink-domain"
MIG0, POLICY0, SITE = "a4x-gb200-gb200-nvl0", "a4x-gb200-gb200-nvl0-workload", "gb200-su-dfw1"


def test_the_planned_programs_keep_every_domain_whole(a4x: Capture, gb200_site: Capture) -> None:
    for c in (a4x, gb200_site):
        result = judge(c, [NAME])
        assert messages(result) == []
        assert result.passed == [NAME]


CASES = [
    pytest.param(
        MIG0,
        lambda i: i.update(targetSize=20.0),
        "instance group manager a4x-gb200-gb200-nvl0 launches 20 a4x-highgpu-4g nodes (targetSize 20); "
        "a4x-highgpu-4g is sold in NVLink domains of 18 nodes (72 GPUs, one sub-block): 20 splits a domain, whose "
        "GPUs then share no NVLink with the rest; use 18 or 36 (pools[].nodes)",
        id="mig-not-whole-domains",
    ),
    pytest.param(
        POLICY0,
        lambda i: i["workloadPolicy"].pop("acceleratorTopology"),
        "instance group manager a4x-gb200-gb200-nvl0 (a4x-highgpu-4g) asks for no NVLink topology: its VMs may land "
        "on several sub-blocks, splitting NVLink domains of 72 GPUs; attach a workload policy (type HIGH_THROUGHPUT, "
        "acceleratorTopology 1x72) through resourcePolicies.workloadPolicy (aicluster's GCP pools do)",
        id="mig-without-topology",
    ),
    pytest.param(
        POLICY0,
        lambda i: i["workloadPolicy"].update(acceleratorTopology="1x36"),
        "instance group manager a4x-gb200-gb200-nvl0 (a4x-highgpu-4g) asks for NVLink topology 1x36: its VMs may "
        "land on several sub-blocks, splitting NVLink domains of 72 GPUs; attach a workload policy (type "
        "HIGH_THROUGHPUT, acceleratorTopology 1x72) through resourcePolicies.workloadPolicy (aicluster's GCP pools do)",
        id="mig-wrong-topology",
    ),
    pytest.param(
        SITE,
        lambda i: i["pools"][0].update(nodes=150.0),
        "pool gb200 of site dfw1 has 150 dgx-gb200-nvl72 nodes; dgx-gb200-nvl72 is built in NVLink domains of 18 "
        "nodes (72 GPUs, one rack): 150 splits a rack, whose GPUs then share no NVLink with the rest; use 144 or 162 "
        "(pools[].hosts, each rack's 18 trays in one rack)",
        id="site-pool-not-whole-racks",
    ),
]


@pytest.mark.parametrize(("resource", "change", "expected"), CASES)
def test_each_mutation_reports_the_split(
    a4x: Capture, gb200_site: Capture, resource: str, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    base = gb200_site if resource == SITE else a4x
    result = judge(mutated(base, {resource: change}), [NAME])
    assert messages(result) == [expected]


def _policy(name: str, **props: Any) -> Any:
    return res(GCP_RESOURCE_POLICY, name, props)


def _gcp_mig(size: int, workload: dict[str, Any] | None, template_policy: dict[str, Any] | None = None) -> list[Any]:
    tpl_links = {"resourcePolicies": [_policy("tp", groupPlacementPolicy=template_policy)]} if template_policy else {}
    template = res(GCP_TEMPLATE, "tpl", {"machineType": "a4x-highgpu-4g", "region": "us-east1"}, **tpl_links)
    links: dict[str, Any] = {"versions": [template]}
    props: dict[str, Any] = {"targetSize": size, "zone": "us-east1-d"}
    if workload is not None:
        links["resourcePolicies"] = [_policy("wp", workloadPolicy=workload)]
        props["resourcePolicies"] = {"workloadPolicy": "computed"}
    return [template, *links.get("resourcePolicies", []), res(GCP_MIG, "mig", props, **links)]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param(
            _gcp_mig(18, {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}), [], id="gcp-workload-policy"
        ),
        pytest.param(_gcp_mig(36, None, {"collocation": "COLLOCATED", "gpuTopology": "1x72"}), [], id="gcp-template"),
        pytest.param(
            [res(GCP_INSTANCE, "vm", {"machineType": "a4x-highgpu-4g", "zone": "us-east1-d"})],
            [
                "instance vm launches 1 a4x-highgpu-4g nodes (the VM count 1); a4x-highgpu-4g is sold in NVLink "
                "domains of 18 nodes (72 GPUs, one sub-block): 1 splits a domain, whose GPUs then share no NVLink "
                "with the rest; use 18 (pools[].nodes)",
                "instance vm (a4x-highgpu-4g) asks for no NVLink topology: its VMs may land on several sub-blocks, "
                "splitting NVLink domains of 72 GPUs; attach a compact placement policy with gpuTopology 1x72 "
                "through resourcePolicies (aicluster's GCP pools do)",
            ],
            id="gcp-lone-vm",
        ),
        pytest.param(
            [
                res(
                    GCP_MIG,
                    "mig",
                    {"targetSize": 18, "resourcePolicies": {"workloadPolicy": "projects/x/wp"}},
                    versions=[res(GCP_TEMPLATE, "tpl", {"machineType": "a4x-highgpu-4g"})],
                )
            ],
            [],
            id="gcp-policy-outside-the-stack-is-not-judged",
        ),
    ],
)
def test_gcp_topology_from_a_workload_or_placement_policy(resources: list[Any], expected: list[str]) -> None:
    assert found(NAME, resources) == expected


def _azure(capacity: int) -> Any:
    return res(AZURE_VMSS, "rack", {"sku": {"name": "Standard_ND128isr_NDR_GB200_v6", "capacity": capacity}})


def _aws(max_size: int) -> list[Any]:
    lt = res(LAUNCH_TEMPLATE, "lt", {"instanceType": "p6e-gb200.36xlarge"})
    return [lt, res(ASG, "asg", {"maxSize": max_size, "desiredCapacity": max_size}, launchTemplate=[lt])]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param([_azure(18)], [], id="azure-one-rack"),
        pytest.param(
            [_azure(36)],
            [
                "virtual machine scale set rack holds 36 Standard_ND128isr_NDR_GB200_v6 nodes (sku.capacity 36); one "
                "virtual machine scale set is one rack, one NVLink domain of 18 nodes (72 GPUs): make it 18 and add a "
                "virtual machine scale set per domain (pools[].nodes a multiple of 18; aicluster plans one each)"
            ],
            id="azure-two-racks-in-one-scale-set",
        ),
        pytest.param(_aws(9), [], id="aws-u-p6e-gb200x36"),
        pytest.param(_aws(27), [], id="aws-x72-and-x36"),
        pytest.param(
            _aws(10),
            [
                "Auto Scaling group asg launches 10 p6e-gb200.36xlarge nodes (maxSize 10); p6e-gb200.36xlarge is "
                "sold in NVLink domains of 18 nodes (72 GPUs, one UltraServer), or one 9-node UltraServer beside "
                "them: 10 splits a domain, whose GPUs then share no NVLink with the rest; use 9 or 18 (pools[].nodes)"
            ],
            id="aws-not-ultraservers",
        ),
    ],
)
def test_azure_racks_and_aws_ultraservers(resources: list[Any], expected: list[str]) -> None:
    assert found(NAME, resources, rack_scale_catalog()) == expected


def _cluster(*domains: dict[str, Any]) -> Any:
    return res(AICLUSTER_TYPE, "c", {"cluster": "c", "nvlink_domains": list(domains)})


DOMAIN = {"id": "gb200-nvl0", "pool": "gb200", "provider": "gcp", "instance_type": "a4x-highgpu-4g", "nodes": 18}


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        pytest.param({**DOMAIN, "block": "gb200-nvl0", "imex": "slurm-prolog"}, [], id="declared-whole-with-a-block"),
        pytest.param(DOMAIN, [], id="an-older-declaration-says-no-block"),
        pytest.param(
            {**DOMAIN, "block": None},
            [
                "NVLink domain gb200-nvl0 of pool gb200 has no scheduler block: a job may take part of it and part "
                "of another domain, and its GPUs across the two share no NVLink; keep jobs inside domains (Slurm: "
                "topology/block, one block per domain; Kubernetes: one ComputeDomain per job, placed by "
                "nvidia.com/gpu.clique)"
            ],
            id="job-may-split-a-domain",
        ),
        pytest.param(
            {**DOMAIN, "nodes": 12},
            [
                "NVLink domain gb200-nvl0 of pool gb200 is declared with 12 a4x-highgpu-4g nodes; a4x-highgpu-4g is "
                "sold in NVLink domains of 18 nodes (72 GPUs, one sub-block): a domain of 12 nodes is not one; plan "
                "the pool in whole domains (pools[].nodes)"
            ],
            id="declared-partial-domain",
        ),
    ],
)
def test_the_declared_domains_and_their_scheduler_blocks(domain: dict[str, Any], expected: list[str]) -> None:
    assert found(NAME, [_cluster(domain)]) == expected


def test_a_stack_without_rack_scale_nodes_is_not_judged(p5_small: Capture) -> None:
    result = judge(p5_small, [NAME])
    assert result.not_applicable == [{"policy": NAME, "reason": "no rack-scale (multi-node NVLink) node in the stack"}]
    with pytest.raises(NotApplicable):
        found(NAME, [res(ONPREM_SITE, "s", {"site": "s", "pools": []})])


def test_the_site_record_reads_back(gb200_site: Capture) -> None:
    """The site records its liquid-cooled positions (the cooling rule reads them) and its rack-scale pool's nodes."""
    site = next(r for r in gb200_site.resources if r.type == ONPREM_SITE)
    assert site.inputs["liquid_rack_kw"] == 140.0
    assert site.inputs["pools"][0]["node_shape"] == "dgx-gb200-nvl72"
