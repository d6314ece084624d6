"""NCCL node settings: `/etc/nccl.conf` and `/etc/profile.d/nccl.sh` for a GPU pool, from catalog data.

The settings are data (``aicluster/catalog/data/nccl.yaml``, every one with a source), keyed by platform (provider +
fabric, optionally instance types) and by library versions; nothing here is a hard-coded list. The only values
computed here are interface names: the pool's NICs (plan order) mapped to the guest names the catalog records for
the instance type, so a stack never copies `enp6s0,...` lists.

Which pools have a profile:
- GPU pools on a GPU fabric (efa, infiniband, gpudirect-tcpx/-tcpxo/-rdma): exactly one profile, chosen by the pool's
  platform and the library versions (the platform's defaults from the catalog, overridden by `versions`). A GPU
  platform the catalog has no profile for is an error (`NcclProfileError`), never an empty file.
- TPU slices (ICI, no NCCL), Trainium pools (Neuron collectives, not NCCL) and GPU pools on plain ethernet (NCCL's
  defaults over TCP): no profile; `profile_for` returns None and there is nothing to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aicluster.catalog import Catalog, NcclProfile
from aicluster.catalog.models import NcclBusbw, NcclLibrary, NcclSetting, version_in_range
from aicluster.plan import PlannedPool
from aicluster.render import render

NO_NCCL_FABRICS = frozenset({"ici", "ethernet"})


class NcclProfileError(ValueError):
    """No single NCCL profile fits the pool (no profile for the platform, or versions that match none or several)."""


@dataclass(frozen=True)
class ResolvedSetting:
    name: str
    value: str
    note: str | None
    condition: str | None  # the version condition that switched it on, for the comment


def library_versions(pool: PlannedPool, catalog: Catalog, versions: dict[str, str] | None = None) -> dict[str, str]:
    """The platform's default library versions (catalog), overridden by `versions`."""
    defaults = next(
        (
            {str(k): v for k, v in d.versions.items()}
            for d in catalog.nccl.default_versions
            if (d.provider, d.fabric) == (pool.provider, pool.fabric)
        ),
        {},
    )
    return {**defaults, **(versions or {})}


def _uses_nccl(pool: PlannedPool, catalog: Catalog) -> bool:
    if pool.tpu is not None or pool.fabric in NO_NCCL_FABRICS or pool.accelerator is None:
        return False
    acc = catalog.accelerators.get(pool.accelerator)
    return acc is not None and acc.kind == "gpu"


def _satisfied(ranges: Mapping[NcclLibrary, str], have: dict[str, str], what: str) -> bool:
    for lib, spec in ranges.items():
        if lib not in have:
            raise NcclProfileError(f"{what} depends on the {lib} version; pass it in versions (e.g. {{{lib!r}: ...}})")
        if not version_in_range(have[lib], spec):
            return False
    return True


def profile_for(pool: PlannedPool, catalog: Catalog, versions: dict[str, str] | None = None) -> NcclProfile | None:
    """The one NCCL profile of the pool's platform whose version ranges hold; None for pools without NCCL."""
    if not _uses_nccl(pool, catalog):
        return None
    candidates = [p for p in catalog.nccl.profiles if p.covers(pool.provider, pool.fabric, pool.instance_type)]
    if not candidates:
        raise NcclProfileError(
            f"pool {pool.name}: no NCCL profile for {pool.provider} {pool.instance_type} (fabric {pool.fabric}); "
            "add one, with its sources, to aicluster/catalog/data/nccl.yaml"
        )
    have = library_versions(pool, catalog, versions)
    chosen = [p for p in candidates if _satisfied(p.requires, have, f"NCCL profile {p.id}")]
    if len(chosen) != 1:
        ranges = "; ".join(f"{p.id}: {p.requires}" for p in candidates)
        raise NcclProfileError(
            f"pool {pool.name}: library versions {have} match {len(chosen)} NCCL profiles of "
            f"{pool.provider} {pool.instance_type} (need exactly one; profiles and their ranges: {ranges})"
        )
    return chosen[0]


def _guest_names(pool: PlannedPool, catalog: Catalog) -> tuple[str, ...]:
    rec = next(
        (
            g
            for g in catalog.nccl.guest_nic_names
            if (g.provider, g.instance_type) == (pool.provider, pool.instance_type)
        ),
        None,
    )
    if rec is None:
        raise NcclProfileError(
            f"pool {pool.name}: no guest NIC names for {pool.provider} {pool.instance_type} in the catalog (nccl.yaml)"
        )
    return rec.names


def _nic_names(pool: PlannedPool, catalog: Catalog, roles: tuple[str, ...]) -> list[str]:
    """Guest interface names of the pool's NICs with one of `roles`, in the plan's NIC order."""
    if pool.gcp is None:
        raise NcclProfileError(f"pool {pool.name}: NIC names are derived from GCP NICs, and the pool has none")
    names = _guest_names(pool, catalog)
    out: list[str] = []
    for nic in pool.gcp.nics:
        if nic.subnet_role not in roles:
            continue
        if nic.index >= len(names):
            raise NcclProfileError(
                f"pool {pool.name}: nic{nic.index} ({nic.subnet_role}) has no guest name for {pool.instance_type} "
                f"(the catalog knows {len(names)}: {', '.join(names)})"
            )
        out.append(names[nic.index])
    if not out:
        raise NcclProfileError(f"pool {pool.name}: no {'/'.join(roles)} NIC to name")
    return out


def _derive(setting: NcclSetting, pool: PlannedPool, catalog: Catalog) -> str:
    if setting.derive == "host_nic":
        return _nic_names(pool, catalog, ("compute",))[0]
    if setting.derive == "host_nics":
        return ",".join(_nic_names(pool, catalog, ("compute", "gvnic")))
    gpu = _nic_names(pool, catalog, ("gpu",))
    if setting.derive == "gpu_nics":
        return ",".join(gpu)
    if len(setting.per_gpu_nic) != len(gpu):
        raise NcclProfileError(
            f"pool {pool.name}: {setting.name} lists {len(setting.per_gpu_nic)} values for {len(gpu)} GPU NICs"
        )
    return ";".join(f"{nic}:{cpus}" for nic, cpus in zip(gpu, setting.per_gpu_nic, strict=True))


def _resolve(
    pool: PlannedPool, catalog: Catalog, versions: dict[str, str] | None, file: str
) -> tuple[NcclProfile, dict[str, str], list[ResolvedSetting]]:
    profile = profile_for(pool, catalog, versions)
    if profile is None:
        raise NcclProfileError(
            f"pool {pool.name}: {pool.provider} {pool.instance_type} ({pool.fabric}) does not use NCCL; "
            "nothing to write (check profile_for first)"
        )
    have = library_versions(pool, catalog, versions)
    out: list[ResolvedSetting] = []
    for s in (*profile.settings, *mnnvl_settings(pool, catalog, profile)):
        if s.file != file or not _satisfied(s.when, have, f"{profile.id} {s.name}"):
            continue
        value = s.value if s.value is not None else _derive(s, pool, catalog)
        if any(c in value for c in '"`\\\n'):
            raise NcclProfileError(f"{profile.id} {s.name}: value {value!r} cannot be written safely")
        condition = ", ".join(f"{lib} {spec}" for lib, spec in s.when.items()) or None
        out.append(ResolvedSetting(s.name, value, s.note, condition))
    return profile, have, out


def multi_node_nvlink(pool: PlannedPool) -> bool:
    """Whether the pool's nodes share NVLink domains of more than one node (GB200/GB300 NVL72)."""
    return pool.nvlink is not None and pool.nvlink.nodes_per_domain > 1


def mnnvl_settings(pool: PlannedPool, catalog: Catalog, profile: NcclProfile) -> tuple[NcclSetting, ...]:
    """The catalog's multi-node NVLink settings for such a pool (none for others), where they take effect: in
    /etc/nccl.conf, or in the profile after the platform's vendor script (which may set NCCL variables itself, and the
    environment wins over nccl.conf)."""
    if not multi_node_nvlink(pool) or catalog.nccl.mnnvl is None:
        return ()
    settings = catalog.nccl.mnnvl.settings
    if profile.script is None:
        return settings
    return tuple(s.model_copy(update={"file": "profile"}) for s in settings)


def _context(pool: PlannedPool, profile: NcclProfile, have: dict[str, str]) -> dict[str, object]:
    return {
        "pool": pool,
        "profile": profile,
        "versions": ", ".join(f"{lib} {v}" for lib, v in sorted(have.items())) or "none recorded",
    }


def nccl_conf(pool: PlannedPool, catalog: Catalog, versions: dict[str, str] | None = None) -> str:
    """`/etc/nccl.conf`: the profile's NCCL core settings (NCCL reads them; the environment overrides them)."""
    profile, have, settings = _resolve(pool, catalog, versions, "nccl.conf")
    return render("nccl/nccl.conf.j2", settings=settings, **_context(pool, profile, have))


def nccl_env(pool: PlannedPool, catalog: Catalog, versions: dict[str, str] | None = None) -> str:
    """`/etc/profile.d/nccl.sh`: libfabric/plugin variables, the vendor script, and what must follow it."""
    profile, have, settings = _resolve(pool, catalog, versions, "profile")
    before_names = {s.name for s in profile.settings if s.before_script}
    return render(
        "nccl/nccl.sh.j2",
        before=[s for s in settings if s.name in before_names],
        after=[s for s in settings if s.name not in before_names],
        **_context(pool, profile, have),
    )


def expected_busbw(pool: PlannedPool, catalog: Catalog, versions: dict[str, str] | None = None) -> NcclBusbw | None:
    """The all_reduce bus bandwidth a source reports for the pool's instance type under its profile, with the node
    count and message size it was measured at; None when the pool has no profile or no source gives a figure (the
    catalog's busbw record for the type then says why). A published figure of its own shape: the acceptance gate is
    `acceptance_busbw`."""
    profile = profile_for(pool, catalog, versions)
    if profile is None:
        return None
    return next(
        (
            b
            for b in catalog.nccl.busbw
            if (b.provider, b.instance_type) == (pool.provider, pool.instance_type)
            and b.busbw_gb_s is not None
            and (not b.profiles or profile.id in b.profiles)
        ),
        None,
    )


# The Slurm acceptance role's test (playbooks/roles/acceptance/defaults/main.yml): all_reduce_perf of one 8 GiB
# message on each pair of a pool's nodes with NCCL_ALGO=Ring (tree and NVLS bus bandwidth can exceed the wire rate
# and would hide a slow fabric). tests/playbooks check the role's defaults say the same.
ACCEPTANCE_MESSAGE_BYTES = 8 * 2**30
ACCEPTANCE_PAIR_NODES = 2
ACCEPTANCE_ALGORITHM = "ring"


@dataclass(frozen=True)
class AcceptanceBusbw:
    """What an acceptance run should reach: the collective model's all_reduce bus bandwidth for the test's shape
    (nodes, message, algorithm), calibrated on published nccl-tests (data/collectives.yaml), and where it comes from."""

    busbw_gb_s: float
    nodes: int
    message_bytes: int
    algorithm: str
    basis: str  # in words, for the inventory and the JobSet's annotation


def acceptance_busbw(
    pool: PlannedPool,
    catalog: Catalog,
    nodes: int,
    *,
    algorithm: str | None = ACCEPTANCE_ALGORITHM,
    message_bytes: int = ACCEPTANCE_MESSAGE_BYTES,
) -> AcceptanceBusbw | None:
    """The expected bus bandwidth of the acceptance test on `nodes` of the pool's nodes, from the collective model:
    every GPU type the catalog has collective records for gets one, at the shape the test runs (a 2-node ring under
    Slurm; the whole node group, NCCL's own choice, under Kubernetes). In-network reduction (SHARP) is left out: the
    tests do not load the CollNet plugin. Inside one NVLink domain the ring is NVLink's. None: no GPU model for the
    type (TPU, Trainium)."""
    from aicluster.sizing.collective import estimate_collective

    if pool.accelerator_kind != "gpu":
        return None
    for name in (algorithm, f"nvlink-{algorithm}") if algorithm else (None,):
        try:
            est = estimate_collective(
                catalog,
                pool.instance_type,
                nodes,
                "all_reduce",
                message_bytes,
                provider=pool.provider,
                sharp=False,
                algorithm=name,
            )
        except ValueError:  # the catalog has no model of the type, or the shape cannot run that algorithm
            continue
        shape = f"{nodes} nodes x {est.gpus_per_node} GPUs, {message_bytes / 2**30:g} GiB, {est.algorithm}"
        return AcceptanceBusbw(
            busbw_gb_s=round(est.busbw_gb_s, 1),
            nodes=nodes,
            message_bytes=message_bytes,
            algorithm=est.algorithm,
            basis=f"collective model ({shape}; sources {', '.join(est.sources)})",
        )
    return None
