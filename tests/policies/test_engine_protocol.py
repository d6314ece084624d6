"""The pack as the Pulumi engine runs it: `policies/__main__.py` started as its own process, the port
read from its first line of output, then spoken to over the analyzer gRPC protocol with the SDK's own
protobuf stubs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc, plugin_pb2

from aicluster.preview import plan_stack
from aicluster.preview.engine import Capture, Resource, run
from aicluster.preview.policy import _wire, evaluate
from aicluster.stackfile import find_project, read_stack
from components import AiCluster
from policies import POLICIES
from tests.conftest import ROOT
from tests.workload_estimates import estimate

from .conftest import mutated


@pytest.fixture(scope="module")
def analyzer() -> Iterator[Any]:
    env = {**os.environ, "PULUMI_PROJECT": "aicluster", "PULUMI_STACK": "p5-small", "PULUMI_DRY_RUN": "true"}
    proc = subprocess.Popen(
        [sys.executable, "-u", "__main__.py"],
        cwd=ROOT / "policies",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().strip())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(_wire(value))
    return s


def _provider(capture: Capture, r: Resource) -> analyzer_pb2.AnalyzerProviderResource | None:
    p = next((x for x in capture.resources if x.urn == r.provider), None)
    if p is None:
        return None
    return analyzer_pb2.AnalyzerProviderResource(type=p.type, properties=_struct(p.inputs), urn=p.urn, name=p.name)


def test_analyzer_info_lists_the_pack(analyzer: Any) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "aicluster"
    assert [p.name for p in info.policies] == [p.name for p in POLICIES]
    kinds = {p.name: p.policy_type for p in info.policies}
    assert kinds["aws-ec2-instance-enforce-imdsv2"] == analyzer_pb2.POLICY_TYPE_RESOURCE
    assert kinds["aicluster-cluster-enforce-monthly-budget"] == analyzer_pb2.POLICY_TYPE_STACK
    assert analyzer.GetPluginInfo(empty_pb2.Empty()).version
    assert isinstance(plugin_pb2.PluginInfo(), plugin_pb2.PluginInfo)


def test_resource_analysis(analyzer: Any, p5_small: Capture) -> None:
    cap = mutated(p5_small, {"llm-dev-h100-lt": lambda i: i["metadataOptions"].update(httpTokens="optional")})
    lt = next(r for r in cap.resources if r.name == "llm-dev-h100-lt")
    request = analyzer_pb2.AnalyzeRequest(
        type=lt.type, properties=_struct(lt.inputs), urn=lt.urn, name=lt.name, provider=_provider(cap, lt)
    )
    diags = analyzer.Analyze(request).diagnostics
    assert [(d.policyName, d.enforcementLevel) for d in diags] == [
        ("aws-ec2-instance-enforce-imdsv2", analyzer_pb2.MANDATORY)
    ]
    description, message = diags[0].message.split("\n", 1)  # the SDK prefixes the policy's description
    assert description == "EC2 instances and launch templates require IMDSv2 session tokens."
    assert message.startswith("launch template llm-dev-h100-lt allows IMDSv1")


def _stack_request(capture: Capture) -> analyzer_pb2.AnalyzeStackRequest:
    return analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type,
                properties=_struct(r.inputs),
                urn=r.urn,
                name=r.name,
                parent=r.parent or "",
                dependencies=r.dependencies,
                provider=_provider(capture, r),
                propertyDependencies={
                    k: analyzer_pb2.AnalyzerPropertyDependencies(urns=v) for k, v in r.property_dependencies.items()
                },
            )
            for r in capture.resources
        ]
    )


def test_stack_analysis_matches_the_offline_engine(analyzer: Any, p5_small: Capture) -> None:
    cap = mutated(p5_small, {"llm-dev": lambda i: i["budgets"].update(monthly_usd=100000.0, power_kw=40.0)})
    diags = analyzer.AnalyzeStack(_stack_request(cap)).diagnostics
    over_the_wire = sorted((d.policyName, d.urn, d.message.split("\n", 1)[1]) for d in diags)
    in_process = sorted((v.policy, v.urn, v.message) for v in evaluate(cap).violations)
    assert over_the_wire == in_process
    assert {d.policyName for d in diags} == {
        "aicluster-cluster-enforce-monthly-budget",
        "aicluster-cluster-enforce-power-budget",
    }
    assert all(d.urn.endswith("::aicluster:index:AiCluster::llm-dev") for d in diags)


def test_workload_records_over_the_wire_are_judged_as_offline(analyzer: Any) -> None:
    """A Workload record's numbers reach the pack as protobuf doubles (32 -> 32.0) and its None figures as nulls:
    the workload rules and the checkpoint rule judge them as the offline engine does."""
    planned = plan_stack(read_stack(find_project(ROOT), "p5-small"))
    with_workloads = planned.model_copy(
        update={
            "workloads": (
                estimate("llama-8b", days=4.4, target_days=3.0, gpus_for_target_days=48),
                estimate("llama-405b", fits=False),
            )
        }
    )
    cap = run(lambda: AiCluster(with_workloads.name, {"plan": with_workloads}), "aicluster", "p5-small")
    diags = analyzer.AnalyzeStack(_stack_request(cap)).diagnostics
    over_the_wire = sorted((d.policyName, d.urn, d.message.split("\n", 1)[1]) for d in diags)
    in_process = sorted((v.policy, v.urn, v.message) for v in evaluate(cap).violations)
    assert over_the_wire == in_process
    assert {d.policyName for d in diags} >= {"aicluster-workload-enforce-fit", "aicluster-workload-enforce-target-days"}
