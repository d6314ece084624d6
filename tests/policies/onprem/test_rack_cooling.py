"""Site rack cooling: a GB200 NVL72 rack (liquid-cooled, ~120 kW) in a liquid-cooled position of its site that
delivers its kW, holding nothing but its own NVLink domain; and the rack-power rule judging such a rack against its
own (liquid) limit, never the site's air-cooled rack_kw."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import DELETE, judge, messages, mutated, set_at

COOLING, POWER = "aicluster-site-enforce-rack-cooling", "aicluster-site-enforce-rack-power"
SITE = "gb200-su-dfw1"
R01 = "rack gb200-r01 of site dfw1 is a dgx-gb200-nvl72 rack of pool gb200 (liquid-cooled, up to 120.06 kW)"


def test_the_planned_site_passes(gb200_site: Capture) -> None:
    result = judge(gb200_site, [COOLING, POWER])
    assert messages(result) == []
    assert sorted(result.passed) == sorted([COOLING, POWER])


CASES = [
    pytest.param(
        COOLING,
        set_at("liquid_rack_kw", DELETE),
        f"{R01}; site dfw1 declares no liquid-cooled rack positions: give their power "
        "(sites[].power.liquid_rack_kw: 120.06 or more), or place the pool at a site that has them",
        id="site-without-liquid-cooling",
    ),
    pytest.param(
        COOLING,
        set_at("liquid_rack_kw", 100.0),
        f"{R01}, more than the 100 kW a liquid-cooled position of the site delivers and cools: raise "
        "sites[].power.liquid_rack_kw to at least 120.06 if the positions do, or place the pool at a site that can",
        id="liquid-positions-too-small",
    ),
    pytest.param(
        COOLING,
        lambda i: i["racks"][0]["pools"].append("cpu"),
        f"{R01} and also holds nodes of cpu; an NVL72 rack is one NVLink domain: give the other hosts another rack "
        "(hosts[].rack)",
        id="rack-shared-with-another-pool",
    ),
    pytest.param(
        POWER,
        lambda i: i["racks"][0].update(limit_kw=20.0),
        "rack gb200-r01 of site dfw1 draws 120.06 kW (18 nodes of gb200), over its 20 kW; move hosts to another rack "
        "(hosts[].rack) or raise sites[].power.liquid_rack_kw to what the rack's power and cooling deliver",
        id="nvl72-rack-in-an-air-cooled-position",
    ),
    pytest.param(
        POWER,
        lambda i: (i["racks"][0].pop("limit_kw"), i.update(liquid_rack_kw=110.0)),
        "rack gb200-r01 of site dfw1 draws 120.06 kW (18 nodes of gb200), over its 110 kW; move hosts to another rack "
        "(hosts[].rack) or raise sites[].power.liquid_rack_kw to what the rack's power and cooling deliver",
        id="unrecorded-limit-is-the-liquid-positions-not-rack-kw",
    ),
]


@pytest.mark.parametrize(("name", "change", "expected"), CASES)
def test_one_mutation_one_finding(
    gb200_site: Capture, name: str, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    found = messages(judge(mutated(gb200_site, {SITE: change}), [name]))
    assert found[:1] == [expected]
    # the liquid positions judge every rack alike; the changes to one rack report that rack alone
    assert len(found) in (1, 8)


def test_an_air_cooled_site_is_not_judged_for_cooling(dgx: Capture) -> None:
    result = judge(dgx, [COOLING])
    assert messages(result) == []
    assert result.passed == [COOLING]
