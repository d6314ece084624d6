from __future__ import annotations

import datetime as dt

import pytest

from aicluster.catalog import Catalog, load_catalog


def test_catalog_loads_and_cross_references_hold(catalog: Catalog) -> None:
    # load_catalog raises CatalogError on any dangling accelerator/source/region/zone reference
    assert load_catalog() is catalog
    assert catalog.instance_types
    assert catalog.regions
    assert catalog.accelerators


def test_every_source_has_a_url_and_a_date(catalog: Catalog) -> None:
    for src in catalog.sources.values():
        assert src.url.startswith("https://"), src.id
        assert dt.date(2020, 1, 1) <= src.retrieved <= dt.date.today(), src.id


def test_every_cited_figure_resolves_to_a_source(catalog: Catalog) -> None:
    for it in catalog.instance_types.values():
        for figure in ("vcpus", "memory_gib", "node_power_kw", "network"):
            assert catalog.cite(it, figure).url
        for off in it.offerings:
            assert catalog.cite(off, "on_demand_usd_per_hour").url


def test_accelerator_instance_types_reference_known_accelerators(catalog: Catalog) -> None:
    for it in catalog.instance_types.values():
        if it.accelerator_count:
            acc = catalog.accelerator_of(it)
            assert acc is not None, it.name


@pytest.mark.parametrize(
    ("name", "cards", "efa"),
    [
        pytest.param("p5.48xlarge", 32, 32, id="p5"),
        pytest.param("p5e.48xlarge", 32, 32, id="p5e"),
        pytest.param("p5en.48xlarge", 16, 16, id="p5en"),
    ],
)
def test_p5_family_network_cards_match_aws_documentation(catalog: Catalog, name: str, cards: int, efa: int) -> None:
    it = catalog.instance_type("aws", name)
    assert it is not None
    assert it.network.aws is not None
    assert (it.network.aws.network_cards, it.network.aws.efa_interfaces) == (cards, efa)
    assert it.network.bandwidth_gbps == 3200
    assert it.accelerator_count == 8


def test_defaults_name_catalog_entries(catalog: Catalog) -> None:
    for provider, d in catalog.constants.defaults.items():
        assert catalog.image(provider, d.gpu_image) is not None
        assert catalog.instance_type(provider, d.controller_instance_type) is not None


def test_hours_per_month_is_the_industry_730(catalog: Catalog) -> None:
    assert catalog.hours_per_month == 730
