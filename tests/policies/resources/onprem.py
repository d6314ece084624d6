"""The on-prem example's site (onprem-dgx-h100: site fra1, 128 DGX H100 in racks of 41 kW, one fat-tree) and the
changes the site tests make to it; the site and VPN policies' names."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from aicluster.preview.engine import Capture
from policies import onprem, vpn
from policies.facts.aicluster import ONPREM_SITE
from tests.policies.conftest import judge, messages, mutated, res

SITE = "dgx-fra1-fra1"

SITE_POLICIES = [p.name for p in onprem.POLICIES]
VPN_POLICIES = [p.name for p in vpn.POLICIES]


def site(change: Callable[[dict[str, Any]], None]) -> dict[str, Callable[[dict[str, Any]], None]]:
    return {SITE: change}


def fabric(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda i: i["fabrics"][0].update(values)


def site_res(dgx: Capture) -> Any:
    found = next(r for r in dgx.resources if r.type == ONPREM_SITE)
    return res(ONPREM_SITE, found.name, copy.deepcopy(found.inputs))


def site_findings(dgx: Capture, name: str, change: Callable[[dict[str, Any]], None]) -> list[str]:
    """What one site policy finds on the on-prem example with its site changed; every finding names the site."""
    result = judge(mutated(dgx, site(change)), [name])
    assert all(v.urn.endswith(f"aicluster:onprem:Site::{SITE}") for v in result.violations)
    return messages(result)
