"""Pinned add-on versions: exact chart versions pass, open ones fail with the catalog's pin as the fix."""

from __future__ import annotations

import pytest

from policies.facts.kubernetes import HELM_RELEASE
from tests.policies.conftest import findings

PINNED = "aicluster-helm-release-enforce-pinned-version"


@pytest.mark.parametrize("version", ["0.19.2", "v26.7.0", "1.0.0-rc.1"])
def test_an_exact_chart_version_passes(version: str) -> None:
    assert findings(PINNED, HELM_RELEASE, {"chart": "kueue", "version": version}) == []


@pytest.mark.parametrize("version", [None, "", "^0.19", "~0.19.2", "*", "latest", ">=0.19.0", "0.19"])
def test_an_open_chart_version_fails(version: str | None) -> None:
    props = {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": version}
    (message,) = findings(PINNED, HELM_RELEASE, props)
    assert message.startswith("Helm release x (chart oci://registry.k8s.io/kueue/charts/kueue) has ")
    assert ("no version" if not version else f"version {version!r}") in message
    assert "pin an exact chart version (e.g. 0.19.2, the catalog's)" in message
