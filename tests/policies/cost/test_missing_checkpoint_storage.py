"""Spot fleets checkpoint: a spot GPU or TPU pool needs a shared file system in the stack."""

from __future__ import annotations

import pytest

from aicluster.preview.engine import Capture
from policies.rule import NotApplicable
from tests.policies.conftest import LT, judge, messages, mutated, set_at, stack_findings
from tests.policies.resources.azure import ND_H100, amlfs, anf_pool, vmss
from tests.policies.resources.gcp import lustre, tpu_vm


def test_spot_fleet_without_storage(p5_small: Capture) -> None:
    name = "aicluster-spot-missing-checkpoint-storage"
    spot = mutated(p5_small, {LT: set_at("instanceMarketOptions", {"marketType": "spot"})})
    assert messages(judge(spot, [name])) == []  # the stack has FSx to checkpoint to
    resources = [r for r in spot.resources if r.type != "aws:fsx/lustreFileSystem:LustreFileSystem"]
    bare = Capture(spot.project, spot.stack, resources, spot.outputs, spot.seconds)
    assert messages(judge(bare, [name])) == [
        "llm-dev-h100-asg runs 4 x p5.48xlarge on spot with no shared file system in the stack: an interruption "
        "loses all progress since the job started; add storage (kind: lustre) to checkpoint to"
    ]


def test_a_spot_stack_is_judged_by_the_checkpoint_storage_rule(p5_small: Capture) -> None:
    name = "aicluster-spot-missing-checkpoint-storage"
    spot = mutated(p5_small, {LT: set_at("instanceMarketOptions", {"marketType": "spot"})})
    result = judge(spot, [name])
    assert (result.passed, result.not_applicable) == ([name], [])


def test_spot_scale_set_needs_a_shared_filesystem() -> None:
    name = "aicluster-spot-missing-checkpoint-storage"
    spot = vmss(priority="Spot")
    with pytest.raises(NotApplicable, match="no spot GPU or TPU pool in the stack"):
        stack_findings(name, [vmss()])  # nothing on spot: nothing to judge
    assert stack_findings(name, [spot, anf_pool()]) == []
    assert stack_findings(name, [spot, amlfs()]) == []
    assert stack_findings(name, [spot]) == [
        f"gpu runs 4 x {ND_H100} on spot with no shared file system in the stack: an interruption loses all "
        "progress since the job started; add storage (kind: lustre) to checkpoint to"
    ]


def test_tpu_spot_slice_needs_a_shared_filesystem() -> None:
    assert stack_findings("aicluster-spot-missing-checkpoint-storage", [tpu_vm(spot=True)]) == [
        "slice runs v5p-256 TPU (128 chips) on spot with no shared file system in the stack: an interruption loses "
        "all progress since the job started; add storage (kind: lustre) to checkpoint to"
    ]
    assert stack_findings("aicluster-spot-missing-checkpoint-storage", [tpu_vm(spot=True), lustre()]) == []
