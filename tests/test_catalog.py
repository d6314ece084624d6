from __future__ import annotations

import datetime as dt
import math
import re
import shutil
from pathlib import Path

import pytest

from aicluster.catalog import DATA_DIR, Catalog, CatalogError, load_catalog


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
        for figure in ("vcpus", "cpu_topology", "memory_gib", "node_power_kw", "network"):
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


# ------------------------------------------------------------------------------------------ CPU topology


@pytest.mark.parametrize(
    ("provider", "name", "layout"),
    [
        pytest.param("aws", "p4d.24xlarge", (2, 24, 2), id="p4d-lscpu"),
        pytest.param("aws", "trn1.32xlarge", (2, 32, 2), id="trn1-lscpu"),
        pytest.param("aws", "m7i.2xlarge", (1, 4, 2), id="m7i-controller"),
        pytest.param("gcp", "a3-highgpu-8g", (2, 52, 2), id="a3-high"),
        pytest.param("gcp", "a3-megagpu-8g", (2, 52, 2), id="a3-mega-lstopo"),
        pytest.param("gcp", "a3-ultragpu-8g", (2, 56, 2), id="a3-ultra"),
        pytest.param("azure", "Standard_D8s_v5", (1, 4, 2), id="azure-controller"),
        pytest.param("aws", "p5.48xlarge", (None, None, 2), id="p5-threads-only"),
        pytest.param("azure", "Standard_ND96isr_H100_v5", (None, None, 1), id="nd-h100-no-smt"),
        pytest.param("azure", "Standard_ND96isr_H200_v5", (None, None, None), id="nd-h200-unpublished"),
        pytest.param("gcp", "a4-highgpu-8g", (None, None, None), id="a4-unpublished"),
    ],
)
def test_cpu_topology_is_the_sourced_guest_layout(
    catalog: Catalog, provider: str, name: str, layout: tuple[int | None, int | None, int | None]
) -> None:
    it = catalog.instance_type(provider, name)
    assert it is not None
    t = it.cpu_topology
    assert (t.sockets, t.cores_per_socket, t.threads_per_core) == layout
    assert t.complete == (None not in layout)
    assert catalog.cite(it, "cpu_topology").url.startswith("https://")


def test_every_complete_cpu_topology_multiplies_to_the_vcpus(catalog: Catalog) -> None:
    complete = [it for it in catalog.instance_types.values() if it.cpu_topology.complete]
    assert len(complete) >= 10
    for it in catalog.instance_types.values():
        t = it.cpu_topology
        layout = (t.sockets, t.cores_per_socket, t.threads_per_core)
        if t.complete:
            assert math.prod(n for n in layout if n is not None) == it.vcpus, it.name
        if t.threads_per_core is not None:
            assert it.vcpus % t.threads_per_core == 0, it.name


P4D = "  cpu_topology: {sockets: 2, cores_per_socket: 24, threads_per_core: 2}"


@pytest.mark.parametrize(
    ("new", "problem"),
    [
        pytest.param(
            "  cpu_topology: {sockets: 2, cores_per_socket: 24, threads_per_core: 1}",
            "p4d.24xlarge: cpu_topology gives 2 x 24 x 1 = 48 CPUs, but vcpus is 96",
            id="product-is-not-vcpus",
        ),
        pytest.param(
            "  cpu_topology: {sockets: 2, cores_per_socket: null, threads_per_core: 2}",
            "give sockets and cores_per_socket together",
            id="sockets-without-cores",
        ),
        pytest.param(
            "  cpu_topology: {sockets: 2, cores_per_socket: 48, threads_per_core: null}",
            "a socket layout needs threads_per_core too",
            id="layout-without-threads",
        ),
        pytest.param(
            "  cpu_topology: {sockets: null, cores_per_socket: null, threads_per_core: 5}",
            "96 vCPUs are not a whole number of 5-thread cores",
            id="threads-do-not-divide",
        ),
        pytest.param("  cpu_topology: {sockets: 2, cores_per_socket: 24}", "threads_per_core", id="figure-left-out"),
        pytest.param("", "cpu_topology", id="block-left-out"),
    ],
)
def test_the_catalog_refuses_an_inconsistent_cpu_topology(tmp_path: Path, new: str, problem: str) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    path = data / "instance_types" / "aws.yaml"
    lines = path.read_text().splitlines(keepends=True)
    (i,) = [n for n, line in enumerate(lines) if line.startswith(P4D)]
    lines[i] = f"{new}\n" if new else ""
    path.write_text("".join(lines))
    with pytest.raises(CatalogError, match=re.escape(problem)):
        load_catalog(data)


# --- Regional price coverage -------------------------------------------------------------------------
# Every region the catalog offers GPUs / TPUs in, per provider. A new GPU region must be added here and
# priced (or listed as unpriced below) on purpose.
_GPU_REGIONS = {
    "aws": (
        "ap-northeast-1",
        "ap-south-1",
        "ap-southeast-2",
        "eu-central-1",
        "eu-north-1",
        "eu-west-1",
        "eu-west-2",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-2",
    ),
    "azure": ("eastus", "eastus2", "southcentralus", "westus", "westus2"),
    "gcp": (
        "asia-northeast1",
        "asia-southeast1",
        "europe-north1",
        "europe-west1",
        "europe-west4",
        "us-central1",
        "us-east1",
        "us-east4",
        "us-east5",
        "us-south1",
        "us-west1",
    ),
    # owned hardware: the on-prem GPU shapes have no offerings (no list price, no region), so no GPU region
    "onprem": (),
}

# The reviewed list of (provider, priced item) -> GPU regions WITHOUT a catalog price (the item is shown
# as unpriced there and the user sets pricing.overrides). Items are services/ names and storage tier skus.
# docs/catalog.md explains why each is unpriced. Pricing a region removes it from here; this test fails
# when coverage shrinks (a price removed) as well as when it grows, so both are deliberate edits.
_ALL = "all GPU regions"
_UNPRICED: dict[tuple[str, str], tuple[str, ...] | str] = {
    ("aws", "ebs-gp3"): tuple(r for r in _GPU_REGIONS["aws"] if r not in ("us-east-1", "us-east-2")),
    ("aws", "nat-gateway"): tuple(r for r in _GPU_REGIONS["aws"] if r not in ("us-east-1", "us-east-2")),
    ("aws", "fsx-lustre/PERSISTENT_2/125"): tuple(r for r in _GPU_REGIONS["aws"] if r != "us-east-1"),
    ("aws", "fsx-lustre/PERSISTENT_2/250"): tuple(r for r in _GPU_REGIONS["aws"] if r != "us-east-1"),
    ("aws", "fsx-lustre/PERSISTENT_2/500"): tuple(r for r in _GPU_REGIONS["aws"] if r != "us-east-1"),
    ("aws", "fsx-lustre/PERSISTENT_2/1000"): tuple(r for r in _GPU_REGIONS["aws"] if r != "us-east-1"),
    ("aws", "efs/regional-standard-bursting/52.43"): tuple(r for r in _GPU_REGIONS["aws"] if r != "us-east-1"),
    ("azure", "managed-disk-premium-ssd"): ("eastus2", "southcentralus", "westus", "westus2"),
    ("azure", "nat-gateway"): ("eastus2", "southcentralus", "westus", "westus2"),
    ("azure", "public-ipv4"): ("eastus2", "southcentralus", "westus", "westus2"),
    ("azure", "azure-managed-lustre/AMLFS-Durable-Premium-40/40"): _ALL,
    ("azure", "azure-managed-lustre/AMLFS-Durable-Premium-125/125"): _ALL,
    ("azure", "azure-managed-lustre/AMLFS-Durable-Premium-250/250"): _ALL,
    ("azure", "azure-managed-lustre/AMLFS-Durable-Premium-500/500"): _ALL,
    ("azure", "azure-netapp-files/Premium/67.1"): _ALL,
    ("azure", "azure-netapp-files/Ultra/134.2"): _ALL,
    ("gcp", "hyperdisk-balanced"): _ALL,
    ("gcp", "gcp-managed-lustre/numbered-tier/1000"): _ALL,
    ("gcp", "gcp-managed-lustre/numbered-tier/500"): _ALL,
    ("gcp", "gcp-managed-lustre/numbered-tier/250"): _ALL,
    ("gcp", "gcp-managed-lustre/numbered-tier/125"): _ALL,
    ("gcp", "gcp-managed-lustre/dynamic-tier/25"): _ALL,
    ("gcp", "parallelstore/SCRATCH/1234.8"): _ALL,
    ("gcp", "filestore/ZONAL/272.6"): _ALL,
    ("gcp", "filestore/ZONAL-10-100TiB/272.6"): _ALL,
    ("aws", "vpn-connection"): tuple(r for r in _GPU_REGIONS["aws"] if r != "us-east-1"),
    ("azure", "vpn-gateway-vpngw1az"): ("eastus2", "southcentralus", "westus", "westus2"),
    ("gcp", "ha-vpn-tunnel"): tuple(r for r in _GPU_REGIONS["gcp"] if r != "us-central1"),
}


def _gpu_regions(catalog: Catalog) -> dict[str, set[str]]:
    return catalog.accelerator_regions()


def _unpriced_gpu_regions(catalog: Catalog) -> set[tuple[str, str, str]]:
    """(provider, item, region) for every costed item without a catalog price in a GPU region."""
    gpu = _gpu_regions(catalog)
    items: list[tuple[str, str, dict[str, float]]] = [
        (provider, service, rec.prices_usd) for (provider, service), rec in catalog.services.items()
    ]
    items += [(t.provider, t.sku, t.prices_usd_per_gib_month) for t in catalog.storage_tiers]
    return {
        (provider, item, region)
        for provider, item, prices in items
        for region in gpu.get(provider, ())
        if prices.get(region) is None
    }


def test_gpu_regions_are_the_reviewed_set(catalog: Catalog) -> None:
    assert {p: sorted(r) for p, r in _gpu_regions(catalog).items()} == {p: sorted(r) for p, r in _GPU_REGIONS.items()}


def test_unpriced_gpu_regions_are_the_reviewed_set(catalog: Catalog) -> None:
    expected = {
        (provider, item, region)
        for (provider, item), regions in _UNPRICED.items()
        for region in (_GPU_REGIONS[provider] if regions == _ALL else regions)
    }
    missing = sorted(_unpriced_gpu_regions(catalog) - expected)
    extra = sorted(expected - _unpriced_gpu_regions(catalog))
    assert not missing, f"newly unpriced (a price was removed or an item added): {missing}"
    assert not extra, f"now priced: remove from _UNPRICED (and docs/catalog.md): {extra}"


def test_every_priced_region_is_a_catalog_region(catalog: Catalog) -> None:
    # a typo in a region key would silently leave the real region unpriced
    for (provider, service), rec in catalog.services.items():
        for region in rec.prices_usd:
            assert catalog.region(provider, region) is not None, (provider, service, region)
    for tier in catalog.storage_tiers:
        for region in tier.prices_usd_per_gib_month:
            assert catalog.region(tier.provider, region) is not None, (tier.provider, tier.sku, region)


def test_an_nccl_profile_for_a_type_without_its_fabric_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    path = data / "nccl.yaml"
    text = path.read_text()
    old = "instance_types: [Standard_ND96isr_H100_v5, Standard_ND96isr_H200_v5]"
    assert old in text
    path.write_text(text.replace(old, "instance_types: [Standard_ND96isr_H100_v5, Standard_NC24ads_A100_v4]"))
    with pytest.raises(CatalogError) as caught:
        load_catalog(data)
    assert "azure/Standard_NC24ads_A100_v4 is not an instance type with the infiniband fabric" in str(caught.value)


# ------------------------------------------------------------------------------------------ on-prem shapes


@pytest.mark.parametrize(
    ("name", "accelerator", "layout", "power_kw", "basis"),
    [
        pytest.param("dgx-h100", "h100-sxm-80gb", (2, 56, 2), 10.2, "datasheet", id="dgx-h100"),
        pytest.param("dgx-h200", "h200-sxm-141gb", (2, 56, 2), 10.2, "datasheet", id="dgx-h200"),
        pytest.param("dgx-b200", "b200-sxm-180gb", (2, 56, 2), 14.3, "datasheet", id="dgx-b200"),
        pytest.param("hgx-h100-8gpu", "h100-sxm-80gb", (2, 52, 2), 9.6, "estimate", id="hgx-h100-xe9680"),
    ],
)
def test_onprem_shapes_are_eight_rail_infiniband_nodes_without_offerings(
    catalog: Catalog,
    name: str,
    accelerator: str,
    layout: tuple[int, int, int],
    power_kw: float,
    basis: str,
) -> None:
    it = catalog.instance_type("onprem", name)
    assert it is not None
    t = it.cpu_topology
    assert (it.accelerator, it.accelerator_count) == (accelerator, 8)
    assert (t.sockets, t.cores_per_socket, t.threads_per_core) == layout
    assert it.network.fabric == "infiniband"
    assert it.network.gpu_nics == 8
    assert it.network.bandwidth_gbps == it.network.gpu_nics * 400  # rails x NDR link
    assert (it.node_power_kw, it.power_basis) == (power_kw, basis)
    assert it.offerings == ()
    assert catalog.cite(it, "node_power_kw").url.startswith("https://")


# ------------------------------------------------------------------------------------------ switches


@pytest.mark.parametrize(
    ("switch_id", "fabric", "radix", "port_gbps", "ports_per_cage"),
    [
        pytest.param("qm9700", "infiniband", 64, 400, 2, id="quantum-2-ndr"),
        pytest.param("qm8700", "infiniband", 40, 200, 1, id="quantum-hdr"),
        pytest.param("q3400", "infiniband", 144, 800, 2, id="quantum-x800-xdr"),
        pytest.param("sn5600", "roce", 64, 800, 1, id="spectrum-4"),
    ],
)
def test_switches_have_their_published_radix(
    catalog: Catalog, switch_id: str, fabric: str, radix: int, port_gbps: int, ports_per_cage: int
) -> None:
    sw = catalog.switch(switch_id)
    assert sw is not None
    assert (sw.fabric, sw.radix, sw.port_gbps, sw.modes[0].ports_per_cage) == (fabric, radix, port_gbps, ports_per_cage)
    assert catalog.cite(sw, "modes").url.startswith("https://")


def test_the_sn5600_breaks_out_to_128_ports_of_400g(catalog: Catalog) -> None:
    sw = catalog.switch("sn5600")
    assert sw is not None
    mode = sw.mode(400)
    assert mode is not None
    assert (mode.radix, mode.ports_per_cage) == (128, 2)
    assert sw.mode(100) is None


def test_a_switch_mode_that_does_not_fill_its_cages_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    path = data / "switches.yaml"
    text = path.read_text()
    old = "{port_gbps: 400, radix: 64, ports_per_cage: 2}"
    assert old in text
    path.write_text(text.replace(old, "{port_gbps: 400, radix: 66, ports_per_cage: 2}"))
    with pytest.raises(CatalogError, match=re.escape("qm9700: 66 ports at 400G are not 32 cages x 2")):
        load_catalog(data)


def test_a_switch_citing_an_unknown_source_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    path = data / "switches.yaml"
    path.write_text(path.read_text().replace("source: onprem-qm8700", "source: onprem-nowhere"))
    with pytest.raises(CatalogError, match="switch qm8700: unknown source id 'onprem-nowhere'"):
        load_catalog(data)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        pytest.param(
            "        RESTART_BM: Replace\n",
            "        RESTART_BM: NoAction\n",
            "RESTART_BM -> NoAction disagrees with the XID catalog",
            id="a-draining-bucket-told-no-action",
        ),
        pytest.param(
            "        IGNORE: NoAction\n",
            "        IGNORE: Reboot\n",
            "IGNORE -> Reboot disagrees with the XID catalog",
            id="an-application-bucket-told-to-reboot",
        ),
        pytest.param(
            "        IGNORE: NoAction\n",
            "        RESET: NoAction\n",
            "'RESET' is not an XID action bucket",
            id="unknown-bucket",
        ),
        pytest.param(
            '      xid_reason: "NvidiaXID{xid}Error"\n',
            '      xid_reason: "NvidiaXIDError"\n',
            "xid_reason needs xid_list and an {xid} field",
            id="reason-without-the-number",
        ),
    ],
)
def test_the_catalog_refuses_an_eks_repair_that_contradicts_the_xid_table(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    path = data / "kubernetes.yaml"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    with pytest.raises(CatalogError, match=re.escape(problem)):
        load_catalog(data)
