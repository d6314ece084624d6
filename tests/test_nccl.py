"""NCCL profiles: golden /etc/nccl.conf and /etc/profile.d/nccl.sh per platform, version-range selection, sources,
and the settings vendors say not to set.

Regenerate the golden files with `UPDATE_GOLDEN=1 pytest tests/test_nccl.py`."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aicluster.catalog import DATA_DIR, Catalog, CatalogError, load_catalog
from aicluster.catalog.models import NCCL_PLUGIN_PREFIXES, version_in_range
from aicluster.plan import PlannedPool
from aicluster.render.nccl import (
    NcclProfileError,
    expected_busbw,
    mnnvl_settings,
    multi_node_nvlink,
    nccl_conf,
    nccl_env,
    profile_for,
)
from tests.helpers import (
    azure_cluster,
    azure_pool,
    cluster,
    gcp_cluster,
    gcp_pool,
    onprem_site_cluster,
    plan_of,
    pool,
    tpu_pool,
)

GOLDEN = Path(__file__).parent / "golden" / "nccl"
LEGACY_OFI = {"aws-ofi-nccl": "1.5.0"}


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; review and regenerate with UPDATE_GOLDEN=1"


def gcp_gpu_pool(catalog: Catalog, machine: str, zone: str = "us-central1-a") -> PlannedPool:
    data = gcp_cluster(
        pools=[gcp_pool(instance_type=machine, zone=zone)],
        storage=[],
        pricing={"overrides": [{"sku": machine, "usd_per_hour": 80.0}]},
    )
    return plan_of(catalog, data).pools[0]


def a4x_pool(catalog: Catalog, nodes: int = 36) -> PlannedPool:
    """A4X (GB200 NVL72 as VMs, arm64): whole sub-blocks of 18 VMs from a reservation."""
    data = gcp_cluster(
        pools=[
            gcp_pool(
                instance_type="a4x-highgpu-4g",
                region="us-east1",
                zone="us-east1-d",
                nodes=nodes,
                market="reserved",
                reservation="projects/p/reservations/gb200",
            )
        ],
        storage=[],
        pricing={
            "overrides": [
                {
                    "sku": "a4x-highgpu-4g",
                    "region": "us-east1",
                    "offered": True,  # the catalog lists no A4X in us-east1; a rate alone never makes it offered
                    "reason": "reservation in us-east1-d",
                    "market": "reserved",
                    "usd_per_hour": 40.0,
                }
            ]
        },
    )
    return plan_of(catalog, data).pools[0]


def platform_pool(catalog: Catalog, platform: str) -> PlannedPool:
    if platform == "gcp-a4x-highgpu":
        return a4x_pool(catalog)
    if platform.startswith("onprem-"):
        data = onprem_site_cluster()
        data["pools"][0].update(instance_type=platform.removeprefix("onprem-"), nodes=4)
        return plan_of(catalog, data).pools[0]
    if platform.startswith("aws-"):
        instance_type = {"aws-p5": "p5.48xlarge", "aws-p4d": "p4d.24xlarge", "aws-p5en": "p5en.48xlarge"}[platform]
        return plan_of(catalog, cluster(pools=[pool(instance_type=instance_type)])).pools[0]
    if platform.startswith("azure-"):
        size = {"azure-nd-h100-v5": "Standard_ND96isr_H100_v5", "azure-nd-a100-v4": "Standard_ND96asr_v4"}[platform]
        return plan_of(catalog, azure_cluster(pools=[azure_pool(instance_type=size)])).pools[0]
    machine, zone = {
        "gcp-a3-highgpu": ("a3-highgpu-8g", "us-central1-a"),
        "gcp-a3-megagpu": ("a3-megagpu-8g", "us-central1-a"),
        "gcp-a3-ultragpu": ("a3-ultragpu-8g", "us-central1-b"),
        "gcp-a4-highgpu": ("a4-highgpu-8g", "us-central1-b"),
    }[platform]
    return gcp_gpu_pool(catalog, machine, zone)


GOLDEN_CASES = [
    pytest.param("aws-p5", None, "aws-efa-ofi-1.7", id="aws-p5-efa-current-plugin"),
    pytest.param("aws-p5", LEGACY_OFI, "aws-efa-ofi-legacy", id="aws-p5-efa-legacy-plugin"),
    pytest.param("azure-nd-h100-v5", None, "azure-ndv5", id="azure-nd-h100-v5-infiniband"),
    pytest.param("gcp-a3-highgpu", None, "gcp-a3high-tcpx", id="gcp-a3-highgpu-tcpx"),
    pytest.param("gcp-a3-megagpu", None, "gcp-a3mega-tcpxo", id="gcp-a3-megagpu-tcpxo"),
    pytest.param("gcp-a3-ultragpu", None, "gcp-a3ultra-gib", id="gcp-a3-ultragpu-rdma-gib"),
    pytest.param("gcp-a4-highgpu", None, "gcp-a3ultra-gib", id="gcp-a4-highgpu-rdma-gib"),
    pytest.param("gcp-a4x-highgpu", None, "gcp-a3ultra-gib", id="gcp-a4x-highgpu-rdma-gib-mnnvl"),
    pytest.param("onprem-dgx-h100", None, "onprem-dgx-h100-ib", id="onprem-dgx-h100-infiniband"),
]


def golden_name(platform: str, versions: dict[str, str] | None) -> str:
    return platform + ("-ofi-legacy" if versions == LEGACY_OFI else "")


@pytest.mark.parametrize(("platform", "versions", "profile_id"), GOLDEN_CASES)
def test_nccl_conf_and_env_profile_match_the_golden_files(
    catalog: Catalog, platform: str, versions: dict[str, str] | None, profile_id: str
) -> None:
    p = platform_pool(catalog, platform)
    profile = profile_for(p, catalog, versions)
    assert profile is not None
    assert profile.id == profile_id
    name = golden_name(platform, versions)
    golden(f"{name}.conf", nccl_conf(p, catalog, versions))
    golden(f"{name}.sh", nccl_env(p, catalog, versions))


def _assignments(text: str, export: bool) -> dict[str, str]:
    pattern = r'^export ([A-Z][A-Z0-9_]*)="([^"]*)"$' if export else r"^([A-Z][A-Z0-9_]*)=(\S*)$"
    return dict(re.findall(pattern, text, flags=re.MULTILINE))


def rendered(catalog: Catalog, platform: str, versions: dict[str, str] | None = None) -> dict[str, str]:
    p = platform_pool(catalog, platform)
    conf = _assignments(nccl_conf(p, catalog, versions), export=False)
    env = _assignments(nccl_env(p, catalog, versions), export=True)
    return {**{f"conf:{k}": v for k, v in conf.items()}, **{f"env:{k}": v for k, v in env.items()}}


def test_no_two_platforms_share_one_list(catalog: Catalog) -> None:
    seen: dict[tuple[tuple[str, str], ...], tuple[str, str]] = {}
    for case in GOLDEN_CASES:
        platform, versions, profile_id = case.values
        assert isinstance(platform, str)
        assert isinstance(profile_id, str)
        settings = tuple(sorted(rendered(catalog, platform, versions).items()))  # type: ignore[arg-type]
        assert settings, platform
        other = seen.setdefault(settings, (platform, profile_id))
        # machines of one profile (A3 Ultra and A4: one gIB recipe) may share settings; profiles may not
        assert other[1] == profile_id, f"{platform} renders the same settings as {other[0]}"
    data_lists: dict[tuple[Any, ...], str] = {}
    for prof in catalog.nccl.profiles:
        key = tuple((s.name, s.value, s.derive, s.per_gpu_nic, s.file) for s in prof.settings)
        key += (prof.script.path,) if prof.script else ()
        assert key not in data_lists, f"profile {prof.id} repeats {data_lists[key]}"
        data_lists[key] = prof.id


@pytest.mark.parametrize(
    ("versions", "profile_id"),
    [
        pytest.param(None, "aws-efa-ofi-1.7", id="catalog-default"),
        pytest.param({"aws-ofi-nccl": "1.7.0"}, "aws-efa-ofi-1.7", id="1.7.0-is-current"),
        pytest.param({"aws-ofi-nccl": "v1.7.4-aws"}, "aws-efa-ofi-1.7", id="tag-spelling"),
        pytest.param({"aws-ofi-nccl": "1.10.0"}, "aws-efa-ofi-1.7", id="1.10-above-1.9"),
        pytest.param({"aws-ofi-nccl": "1.6.0"}, "aws-efa-ofi-1.6", id="1.6.0"),
        pytest.param({"aws-ofi-nccl": "1.6.9"}, "aws-efa-ofi-1.6", id="1.6.9"),
        pytest.param({"aws-ofi-nccl": "1.5.0"}, "aws-efa-ofi-legacy", id="1.5.0"),
        pytest.param({"aws-ofi-nccl": "1.2"}, "aws-efa-ofi-legacy", id="1.2"),
    ],
)
def test_plugin_version_picks_the_profile(catalog: Catalog, versions: dict[str, str] | None, profile_id: str) -> None:
    profile = profile_for(platform_pool(catalog, "aws-p5"), catalog, versions)
    assert profile is not None
    assert profile.id == profile_id


def test_the_1_6_profile_asks_for_device_rdma_and_the_legacy_one_also_forces_provider_and_protocol(
    catalog: Catalog,
) -> None:
    mid = rendered(catalog, "aws-p5", {"aws-ofi-nccl": "1.6.2"})
    assert mid["env:FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert "env:FI_PROVIDER" not in mid
    assert "conf:NCCL_PROTO" not in mid
    old = rendered(catalog, "aws-p5", LEGACY_OFI)
    assert (old["env:FI_EFA_USE_DEVICE_RDMA"], old["env:FI_PROVIDER"], old["conf:NCCL_PROTO"]) == ("1", "efa", "simple")


@pytest.mark.parametrize(
    ("versions", "workaround"),
    [
        pytest.param({"nccl": "2.19.3", "efa-installer": "1.29.0"}, True, id="nccl-2.19-efa-1.29.0"),
        pytest.param({"nccl": "2.21.5", "efa-installer": "1.28.0"}, True, id="nccl-2.21-efa-1.28"),
        pytest.param({"nccl": "2.19.3", "efa-installer": "1.29.1"}, False, id="efa-1.29.1-fixed"),
        pytest.param({"nccl": "2.18.5", "efa-installer": "1.28.0"}, False, id="nccl-2.18-unaffected"),
        pytest.param(None, False, id="catalog-defaults"),
    ],
)
def test_cuda_sync_memops_workaround_only_for_nccl_2_19_on_old_efa_installers(
    catalog: Catalog, versions: dict[str, str] | None, workaround: bool
) -> None:
    env = nccl_env(platform_pool(catalog, "aws-p5"), catalog, versions)
    assert ('export FI_EFA_SET_CUDA_SYNC_MEMOPS="0"' in env) is workaround


@pytest.mark.parametrize("platform", ["aws-p5", "aws-p4d", "aws-p5en"])
def test_settings_aws_says_not_to_set_are_absent_from_the_current_profile(catalog: Catalog, platform: str) -> None:
    p = platform_pool(catalog, platform)
    profile = profile_for(p, catalog)
    assert profile is not None
    assert profile.id == "aws-efa-ofi-1.7"
    text = nccl_conf(p, catalog) + nccl_env(p, catalog)
    names = {k.split(":", 1)[1] for k in rendered(catalog, platform)}
    forbidden = {
        "FI_EFA_USE_DEVICE_RDMA",  # not needed with libfabric >= 1.18 / aws-ofi-nccl >= 1.7
        "FI_EFA_FORK_SAFE",  # the plugin sets it
        "FI_EFA_ENABLE_SHM_TRANSFER",  # a no-op
        "FI_PROVIDER",  # legacy (aws-ofi-nccl <= 1.5)
        "NCCL_PROTO",  # legacy (aws-ofi-nccl <= 1.5)
        "NCCL_MIN_CHANNELS",  # leave the default
        "NCCL_MIN_NCHANNELS",
        "NCCL_BUFFSIZE",  # leave the default
        "NCCL_SOCKET_NTHREADS",  # not applicable to EFA
        "NCCL_NSOCKS_PERTHREAD",  # not applicable to EFA
        "RDMAV_FORK_SAFE",  # can break things on newer kernels
    }
    assert not names & forbidden
    assert "RDMAV_" not in text


def test_every_setting_cites_a_source_of_the_catalog(catalog: Catalog) -> None:
    data = catalog.nccl
    assert data.profiles
    for prof in data.profiles:
        assert catalog.sources[prof.source].url.startswith("https://"), prof.id
        if prof.script is not None:
            assert catalog.sources[prof.script.source].url.startswith("https://"), prof.id
        for s in prof.settings:
            for sid in {s.source, *s.field_sources.values()}:
                assert catalog.sources[sid].url.startswith("https://"), f"{prof.id} {s.name}"
    for rec in (*data.default_versions, *data.guest_nic_names, *data.busbw):
        assert catalog.sources[rec.source].url.startswith("https://")


def test_nccl_conf_holds_only_literal_nccl_core_settings(catalog: Catalog) -> None:
    for path in sorted(GOLDEN.glob("*.conf")):
        for line in path.read_text().splitlines():
            if not line or line.startswith("#"):
                continue
            assert re.fullmatch(r"NCCL_[A-Z0-9_]+=[^\s\"'`$#]+", line), f"{path.name}: {line!r}"
            assert not line.startswith(NCCL_PLUGIN_PREFIXES), f"{path.name}: plugin variable {line!r}"


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_env_profiles_parse_and_set_their_values_in_posix_sh_and_bash(shell: str) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} not installed")
    for path in sorted(GOLDEN.glob("*.sh")):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # no LD_LIBRARY_PATH: no empty entry may appear
        out = subprocess.run(
            [exe, "-c", f'. "{path}" && echo "LD=${{LD_LIBRARY_PATH:-}}"'],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout
        ld = out.strip().removeprefix("LD=")
        assert "" not in ld.split(":") or not ld, f"{path.name}: empty LD_LIBRARY_PATH entry in {ld!r}"


def test_gpu_nic_names_follow_the_plans_nic_order_not_a_copied_list(catalog: Catalog) -> None:
    p = platform_pool(catalog, "gcp-a3-megagpu")
    assert p.gcp is not None
    names = next(g.names for g in catalog.nccl.guest_nic_names if g.instance_type == "a3-megagpu-8g")
    gpu_nics = [n for n in p.gcp.nics if n.subnet_role == "gpu"]
    assert len(gpu_nics) == 8
    env = _assignments(nccl_env(p, catalog), export=True)
    assert env["NCCL_FASTRAK_IFNAME"] == ",".join(names[n.index] for n in gpu_nics)
    assert env["NCCL_FASTRAK_CTRL_DEV"] == env["NCCL_SOCKET_IFNAME"] == names[0]
    # a plan with fewer GPU NICs names fewer interfaces: the list is computed from the plan
    fewer = p.model_copy(update={"gcp": p.gcp.model_copy(update={"nics": p.gcp.nics[:5]})})
    assert _assignments(nccl_env(fewer, catalog), export=True)["NCCL_FASTRAK_IFNAME"] == ",".join(names[1:5])


def test_a3_ultra_bootstraps_over_both_gvnics_and_a3_high_binds_cpus_per_gpu_nic(catalog: Catalog) -> None:
    ultra = rendered(catalog, "gcp-a3-ultragpu")
    assert ultra["env:NCCL_SOCKET_IFNAME"] == "enp0s19,enp192s20"
    assert ultra["env:NCCL_NET"] == "gIB"
    high = rendered(catalog, "gcp-a3-highgpu")
    assert high["env:NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"] == "enp6s0,enp12s0,enp134s0,enp140s0"
    assert high["env:NCCL_GPUDIRECTTCPX_TX_BINDINGS"].split(";")[0] == "enp6s0:8-21,112-125"
    assert high["conf:NCCL_SOCKET_IFNAME"] == "enp0s12"


def test_tpu_ethernet_and_trainium_pools_have_no_nccl_profile(catalog: Catalog) -> None:
    tpu = plan_of(catalog, gcp_cluster(pools=[tpu_pool()], storage=[])).pools[0]
    a2 = gcp_gpu_pool(catalog, "a2-ultragpu-8g")
    trn_pool = pool(instance_type="trn1.32xlarge", image="ami-0123456789abcdef0")
    trn = plan_of(catalog, cluster(pools=[trn_pool])).pools[0]
    for p in (tpu, a2, trn):
        assert profile_for(p, catalog) is None, p.instance_type
        assert expected_busbw(p, catalog) is None
        with pytest.raises(NcclProfileError, match="does not use NCCL"):
            nccl_conf(p, catalog)


def test_a_gpu_platform_without_a_profile_is_an_error_that_names_the_data_file(catalog: Catalog) -> None:
    a4 = platform_pool(catalog, "gcp-a4-highgpu")
    profiles = tuple(
        p.model_copy(update={"instance_types": ("a3-ultragpu-8g",)}) if p.id == "gcp-a3ultra-gib" else p
        for p in catalog.nccl.profiles
    )
    without_a4 = dataclasses.replace(catalog, nccl=catalog.nccl.model_copy(update={"profiles": profiles}))
    with pytest.raises(NcclProfileError, match=r"no NCCL profile for gcp a4-highgpu-8g .*nccl\.yaml"):
        profile_for(a4, without_a4)


def test_a_version_the_profiles_depend_on_must_be_known(catalog: Catalog) -> None:
    no_defaults = dataclasses.replace(catalog, nccl=catalog.nccl.model_copy(update={"default_versions": ()}))
    p = platform_pool(catalog, "aws-p5")
    with pytest.raises(NcclProfileError, match="depends on the aws-ofi-nccl version"):
        profile_for(p, no_defaults)
    profile = profile_for(p, no_defaults, {"aws-ofi-nccl": "1.7"})
    assert profile is not None
    with pytest.raises(NcclProfileError, match="depends on the nccl version"):
        nccl_env(p, no_defaults, {"aws-ofi-nccl": "1.7"})  # the workaround's condition needs it


def test_expected_busbw_gives_figure_nodes_and_size_only_where_a_source_does(catalog: Catalog) -> None:
    p5 = platform_pool(catalog, "aws-p5")
    bw = expected_busbw(p5, catalog)
    assert bw is not None
    assert (bw.busbw_gb_s, bw.nodes, bw.message_bytes, bw.collective) == (487.09, 2, 16 * 2**30, "all_reduce")
    assert expected_busbw(p5, catalog, LEGACY_OFI) is None  # measured with a current plugin only
    nd = expected_busbw(platform_pool(catalog, "azure-nd-h100-v5"), catalog)
    assert nd is not None
    assert (nd.busbw_gb_s, nd.nodes) == (460.0, 1)  # AzNHC: one VM, NVLink only
    for platform in ("gcp-a3-highgpu", "gcp-a3-megagpu", "gcp-a3-ultragpu"):
        assert expected_busbw(platform_pool(catalog, platform), catalog) is None, platform
        rec = next(b for b in catalog.nccl.busbw if b.instance_type == platform_pool(catalog, platform).instance_type)
        assert rec.busbw_gb_s is None
        assert "none published" in rec.note


@pytest.mark.parametrize(
    ("version", "spec", "inside"),
    [
        pytest.param("1.7.0", ">=1.7", True, id="equal-padded"),
        pytest.param("1.10.0", ">=1.9", True, id="numeric-not-lexical"),
        pytest.param("1.6.9", ">=1.6,<1.7", True, id="range"),
        pytest.param("1.7.0", ">=1.6,<1.7", False, id="range-upper-bound"),
        pytest.param("2.27.7-1", ">=2.19", True, id="release-suffix"),
        pytest.param("1.29.1", "<1.29.1", False, id="strict"),
    ],
)
def test_version_ranges(version: str, spec: str, inside: bool) -> None:
    assert version_in_range(version, spec) is inside


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        pytest.param(
            "source: nccl-azhpc-ndv4}", "source: nope}", "unknown source id 'nope'", id="setting-without-source"
        ),
        pytest.param(
            'requires: {aws-ofi-nccl: ">=1.6,<1.7"}',
            'requires: {aws-ofi-nccl: ">=1.6"}',
            "matches profiles ['aws-efa-ofi-1.7', 'aws-efa-ofi-1.6']",
            id="overlapping-version-ranges",
        ),
        pytest.param(
            "  - {provider: aws, instance_type: p5en.48xlarge,",
            "  - {provider: aws, instance_type: p5e.48xlarge,",
            "aws/p5en.48xlarge has no busbw record",
            id="covered-type-without-busbw-record",
        ),
        pytest.param(
            '{name: FI_EFA_USE_DEVICE_RDMA, value: "1", file: profile,',
            '{name: FI_EFA_USE_DEVICE_RDMA, value: "1", file: nccl.conf,',
            "only NCCL core variables go in nccl.conf",
            id="libfabric-variable-in-nccl-conf",
        ),
    ],
)
def test_the_catalog_refuses_inconsistent_nccl_data(tmp_path: Path, old: str, new: str, problem: str) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    text = (data / "nccl.yaml").read_text()
    assert old in text
    (data / "nccl.yaml").write_text(text.replace(old, new, 1))
    with pytest.raises(CatalogError, match=re.escape(problem)):
        load_catalog(data)


def test_owned_dgx_h100_and_h200_use_exactly_their_eight_compute_hcas(catalog: Catalog) -> None:
    for shape in ("dgx-h100", "dgx-h200"):
        p = platform_pool(catalog, f"onprem-{shape}")
        profile = profile_for(p, catalog)
        assert profile is not None
        assert profile.id == "onprem-dgx-h100-ib"
        conf = _assignments(nccl_conf(p, catalog), export=False)
        assert conf["NCCL_IB_HCA"].startswith("=")  # exact names: a prefix mlx5_1 would take mlx5_10 and mlx5_11
        hcas = conf["NCCL_IB_HCA"][1:].split(",")
        it = catalog.instance_type("onprem", shape)
        assert it is not None
        assert len(set(hcas)) == len(hcas) == it.network.gpu_nics == 8
        assert not _assignments(nccl_env(p, catalog), export=True)  # nothing for the environment: no plugin


def test_an_owned_shape_whose_hcas_are_unsourced_has_no_profile_and_says_so(catalog: Catalog) -> None:
    b200 = platform_pool(catalog, "onprem-dgx-b200")
    with pytest.raises(NcclProfileError, match=r"no NCCL profile for onprem dgx-b200 \(fabric infiniband\)"):
        profile_for(b200, catalog)


def test_multi_node_nvlink_pools_get_the_mnnvl_settings_after_the_vendor_script(catalog: Catalog) -> None:
    """A4X: NVLink across the 18 VMs of a sub-block needs cuMem and MNNVL on; gIB's vendor script may set NCCL
    variables of its own, so the settings follow it in the profile (the environment wins over nccl.conf)."""
    env = nccl_env(a4x_pool(catalog), catalog)
    script = env.index("set_nccl_env.sh\nfi")
    assert env.index('export NCCL_MNNVL_ENABLE="1"') > script
    assert env.index('export NCCL_CUMEM_ENABLE="1"') > script
    assert "MNNVL" not in nccl_conf(a4x_pool(catalog), catalog)
    a4 = platform_pool(catalog, "gcp-a4-highgpu")  # 8 GPUs: NVLink ends at the node
    assert a4.nvlink is None
    assert "MNNVL" not in nccl_env(a4, catalog) + nccl_conf(a4, catalog)


def test_without_a_vendor_script_the_mnnvl_settings_go_to_nccl_conf(catalog: Catalog) -> None:
    pool = a4x_pool(catalog)
    profile = profile_for(pool, catalog)
    assert profile is not None
    plain = profile.model_copy(update={"script": None})
    assert [(s.name, s.value, s.file) for s in mnnvl_settings(pool, catalog, plain)] == [
        ("NCCL_MNNVL_ENABLE", "1", "nccl.conf"),
        ("NCCL_CUMEM_ENABLE", "1", "nccl.conf"),
    ]
    assert [s.file for s in mnnvl_settings(pool, catalog, profile)] == ["profile", "profile"]
    assert multi_node_nvlink(pool)
    assert not multi_node_nvlink(platform_pool(catalog, "gcp-a3-ultragpu"))
