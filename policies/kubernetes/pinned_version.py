"""Pinned add-on versions: every Helm release names an exact chart version (not empty, not a range, not latest)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import KubernetesAddon, load_catalog

from ..facts.engine import UNKNOWN, Res
from ..facts.kubernetes import HELM_CHART, HELM_RELEASE
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY
# An exact chart version: semantic version, optionally "v"-prefixed, with pre-release/build (no ranges, no latest).
EXACT_VERSION = re.compile(r"v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


def _pinned(res: Res, ctx: Ctx) -> Iterator[str]:
    version = res.get("version")
    if version is UNKNOWN:
        return
    chart = res.get("chart")
    if isinstance(version, str) and EXACT_VERSION.fullmatch(version.strip()):
        return
    got = f"version {version!r}" if version not in (None, "") else "no version"
    addon = _addon(chart)
    yield (
        f"Helm release {res.name} (chart {chart}) has {got}, so every `up` may install whatever the repository "
        "serves then; pin an exact chart version"
        + (f" (e.g. {addon.version}, the catalog's)" if addon else " (e.g. 1.2.3)")
    )


def _addon(chart: Any) -> KubernetesAddon | None:
    """The catalog's add-on of a chart (its pinned version is the fix to suggest)."""
    if not isinstance(chart, str):
        return None
    name = chart.rstrip("/").rsplit("/", 1)[-1]
    return next((a for a in load_catalog().addons.values() if a.chart == name), None)


POLICY = ResourceRule(
    Meta(
        name="aicluster-helm-release-enforce-pinned-version",
        display_name="Pinned add-on versions",
        description="Every Helm release names an exact chart version (not empty, not a range, not latest).",
        concern="compliance",
        severity=Severity.MEDIUM,
        enforcement=MANDATORY,
        remediation="Set the release's version to an exact chart version (aicluster pins them in its catalog).",
        frameworks=("soc2", "iso27001"),
        controls=("SOC 2 CC8.1 (change management)",),
    ),
    (HELM_RELEASE, HELM_CHART),
    _pinned,
)
