"""EFA device plugin installed: a cluster with EFA node groups installs the AWS EFA Kubernetes device plugin, or
pods cannot request EFA and NCCL falls back to TCP."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import UNKNOWN, Res
from ..facts.kubernetes import EKS_NODE_GROUP, HELM_CHART, HELM_RELEASE, efa_node_groups
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY
EFA_PLUGIN = "efa-device-plugin"  # catalog add-on id


def _chart(release: Res) -> str:
    chart = release.get("chart")
    return chart.rstrip("/").rsplit("/", 1)[-1].split(":", 1)[0] if isinstance(chart, str) else ""


def _efa_plugin(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    groups = efa_node_groups(stack)
    if not groups:
        raise NotApplicable("no EKS node group of EFA nodes in the stack")
    addon = stack.catalog.addons.get(EFA_PLUGIN)
    chart = addon.chart if addon else "aws-efa-k8s-device-plugin"
    releases = stack.of(HELM_RELEASE, HELM_CHART)
    if any(_chart(r) == chart or r.get("chart") is UNKNOWN for r in releases):
        return
    for g in groups:
        yield (
            g.res,
            f"{g.name} has EFA interfaces but no Helm release of {chart} is in the stack, so pods cannot request "
            "vpc.amazonaws.com/efa and NCCL falls back to TCP; install the chart "
            + (f"{chart} {addon.version} from {addon.repository}" if addon else chart),
        )


POLICY = StackRule(
    Meta(
        name="aws-eks-nodegroup-missing-efa-device-plugin",
        display_name="EFA device plugin installed",
        description="A cluster with EFA node groups installs the AWS EFA Kubernetes device plugin.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Install the aws-efa-k8s-device-plugin Helm chart (aicluster's add-ons do for EFA pools).",
    ),
    _efa_plugin,
    types=(EKS_NODE_GROUP,),
)
