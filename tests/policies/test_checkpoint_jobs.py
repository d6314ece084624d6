"""Checkpoint throughput per job: pools of one cloud, region and network against the file systems on that
network (issue 13 #4: a hybrid stack was judged as one job over every cloud's GPUs and file systems)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicluster.preview.engine import Capture, run_program
from aicluster.preview.policy import _policy_resources, _wire, evaluate
from aicluster.stackfile import find_project, read_stack
from policies.facts import Stack, walk
from policies.storage import fabric_reach, jobs
from tests.conftest import ROOT, write_stack

from .conftest import capture_of

NAME = "aicluster-filesystem-enforce-checkpoint-throughput"


def messages(capture: Capture, config: dict[str, Any]) -> list[tuple[str, str]]:
    result = evaluate(capture, {NAME: config})
    return [(v.resource, v.message) for v in result.violations if v.policy == NAME]


@pytest.fixture(scope="module")
def hybrid_gcp() -> Capture:
    return capture_of("hybrid-aws-gcp")


def test_each_cloud_is_its_own_job_with_its_own_file_system(hybrid_gcp: Capture) -> None:
    # AWS: 4 x p5 = 32 H100 (80 GB): 1,280 GB at 24 TiB x 250 MB/s = 5.9 GB/s: 218 s.
    # GCP: 8 x a3 = 64 H100: 2,560 GB at 18 TiB x 1,000 MB/s = 17.6 GB/s: 146 s.
    # Summed over both clouds it read "3,840 GB of 96 GPUs at 23.4 GB/s", blaming the AWS file system alone.
    assert messages(hybrid_gcp, {"checkpoint_seconds": 60}) == [
        (
            "hybrid-gcp-fsx-fs",
            "hybrid-gcp-p5-asg (32 GPUs in us-east-1): a 1,280 GB checkpoint takes 218 s at 5.9 GB/s on "
            "hybrid-gcp-fsx-fs, over the 60 s target; raise the file system's capacity or throughput_mb_s_per_tib",
        ),
        (
            "hybrid-gcp-gcp-lustre-lustre",
            "hybrid-gcp-a3-a3-p0 (64 GPUs in us-east5): a 2,560 GB checkpoint takes 146 s at 17.6 GB/s on "
            "hybrid-gcp-gcp-lustre-lustre, over the 60 s target; raise the file system's capacity or "
            "throughput_mb_s_per_tib",
        ),
    ]
    assert messages(hybrid_gcp, {"checkpoint_seconds": 200}) == [
        (
            "hybrid-gcp-fsx-fs",
            "hybrid-gcp-p5-asg (32 GPUs in us-east-1): a 1,280 GB checkpoint takes 218 s at 5.9 GB/s on "
            "hybrid-gcp-fsx-fs, over the 200 s target; raise the file system's capacity or throughput_mb_s_per_tib",
        )
    ]


@pytest.mark.parametrize("stack", ["hybrid-aws-azure", "hybrid-aws-gcp", "three-cloud"])
def test_jobs_never_span_clouds_and_mount_only_their_network(stack: str) -> None:
    capture = capture_of(stack)
    wired = {r.urn: _wire(r.inputs) for r in capture.resources}
    found = jobs(Stack(list(walk(_policy_resources(capture, wired, {})))))
    assert len(found) == (3 if stack == "three-cloud" else 2)
    for job in found:
        assert len({(f.provider, f.region) for f in job.fleets}) == 1
        assert len(job.filesystems) == 1
        assert {fs.provider for fs in job.filesystems} == {job.fleets[0].provider}


def test_a_pool_without_a_file_system_on_its_network_is_named(project: Path) -> None:
    """The GCP pool of a hybrid stack whose only Lustre is in AWS cannot checkpoint to it."""
    text = (ROOT / "stacks" / "Pulumi.hybrid-aws-gcp.yaml").read_text()
    gcp_lustre = (
        "      - name: gcp-lustre\n        provider: gcp\n        kind: lustre\n        capacity_tib: 18\n"
        "        throughput_mb_s_per_tib: 1000\n        mount: /lustre\n"
    )
    assert gcp_lustre in text
    write_stack(project, "aws-lustre-only", text.replace(gcp_lustre, ""))
    st = read_stack(find_project(project), "aws-lustre-only")
    capture = run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)
    assert messages(capture, {}) == [
        (
            "hybrid-gcp-a3-a3-p0",
            "hybrid-gcp-a3-a3-p0 (64 GPUs in us-east5): no parallel file system on their network: a 2,560 GB "
            "checkpoint has nowhere fast to go (hybrid-gcp-fsx-fs is on another network, cloud or region); add "
            "storage (kind: lustre) in the pool's cloud and region",
        )
    ]


def test_pools_in_two_zones_are_two_jobs_on_one_file_system() -> None:
    """EFA does not reach across availability zones: mixed-spot's p5 pool (us-east-1a) and p4d pool (us-east-1b)
    share a VPC and its FSx, but cannot run one job (issue 13 #4: "one network, one fabric reach")."""
    capture = capture_of("mixed-spot")
    wired = {r.urn: _wire(r.inputs) for r in capture.resources}
    found = jobs(Stack(list(walk(_policy_resources(capture, wired, {})))))
    assert sorted([f.res.name for f in job.fleets] for job in found) == [["sweeps-core-asg"], ["sweeps-sweep-asg"]]
    assert [[fs.res.name for fs in job.filesystems] for job in found] == [["sweeps-checkpoints-fs"]] * 2
    assert sorted(fabric_reach(job.fleets[0]) for job in found) == ["us-east-1a", "us-east-1b"]


def test_each_azure_scale_set_is_its_own_infiniband_job() -> None:
    capture = capture_of("azure-nd-h100-250")
    wired = {r.urn: _wire(r.inputs) for r in capture.resources}
    found = jobs(Stack(list(walk(_policy_resources(capture, wired, {})))))
    assert [len(job.fleets) for job in found] == [1, 1, 1]  # 250 VMs: three InfiniBand scale sets
