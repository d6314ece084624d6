"""The Ansible inventory the tuning step runs on: a pure function of the plan, the stack outputs and (where
the cloud does not say) the nodes' addresses.

Hosts are the plan's node names (`PlannedPool.node_names()`, the names Slurm uses too), grouped by pool
(`pool_<name>`), provider (`provider_<aws|azure|gcp|onprem>`), fabric (`fabric_<efa|infiniband|...>`), site
(`site_<name>`, owned pools), NVLink domain (`nvlink_<domain>`, children of `nvlink_domains`: the nodes of one GB200
NVL72 rack or sub-block, whose group_vars give the IMEX domain) and role (`slurm_controller`, `slurm_compute`). A
rack-scale host also carries its domain as `nvlink_domain`. Owned hosts come from the stack: a
pool's listed hosts and the controller host get `ansible_host` = the address the stack gives (an address passed with
--hosts wins, for a host reached another way); nothing is discovered for them. Each host knows its index in the pool
and its fabric domain (the Azure scale set, GCP placement group or TPU slice it shares a fabric with). group_vars
carry what the roles need: the pool's platform facts from the plan and the handles the stack outputs add (mount
commands, scale sets, instance groups). Values the outputs do not know yet (an offline preview, or before `up`) are
left out rather than written as placeholders; secret outputs are never written.
"""

from __future__ import annotations

import importlib.metadata
import ipaddress
import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aicluster.catalog import Catalog, load_catalog
from aicluster.files import DirectoryBusy, lock_directory, write_atomic
from aicluster.plan import ClusterPlan, PlannedNvlinkDomain, PlannedPool
from aicluster.plan.registry import SCHEDULERS
from aicluster.render import burst, nccl, repair
from aicluster.schedulers.base import Suggest, placeholder
from aicluster.schedulers.slurm import render as slurm
from aicluster.spec.base import clip

# What an output value is when it is not known (offline preview) or must not be written (a secret).
HIDDEN = frozenset({"<computed>", "[secret]"})
# The project's own pins, which the aicluster_programs role installs with aicluster's programs on the nodes (aicluster
# is on no package index): pyproject.toml of the checkout the inventory is rendered from, else the installed
# distribution's metadata.
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
# What every node program needs (aicluster/burst, aicluster/health: the standard library and pydantic); the cloud
# SDKs of the bursting programs are the extras named by provider.
PROGRAM_BASE_REQUIREMENT = "pydantic"


def program_requirements(extras: list[str], pyproject: Path = PYPROJECT) -> list[str]:
    """The pinned requirements of a node program: pydantic and the named extras (a bursting provider's SDK),
    exactly as pyproject.toml pins them (never re-typed here)."""
    base: list[str]
    optional: dict[str, list[str]]
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        base = list(project["dependencies"])
        optional = {k: list(v) for k, v in project.get("optional-dependencies", {}).items()}
    else:
        base, optional = [], {}
        for req in importlib.metadata.requires("aicluster") or []:
            spec, _, marker = req.partition(";")
            found = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
            (optional.setdefault(found[1], []) if found else base).append(spec.strip())
    pydantic = [r for r in base if re.match(rf"{PROGRAM_BASE_REQUIREMENT}\s*[=<>~!]", r)]
    missing = [e for e in extras if e not in optional]
    if len(pydantic) != 1 or missing:
        raise ValueError(
            f"{pyproject}: expected one pinned {PROGRAM_BASE_REQUIREMENT} in [project] dependencies and an extra per "
            f"bursting provider in [project.optional-dependencies] (missing: {', '.join(missing) or 'none'})"
        )
    return [*pydantic, *(r for e in extras for r in optional[e])]


def group_name(kind: str, name: str) -> str:
    """An Ansible group name: letters, digits and `_` (a `-` in a group name is deprecated)."""
    return f"{kind}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def known(value: Any) -> Any:
    """`value` without unknown or secret leaves; whole numbers the engine sent as floats become ints."""
    if isinstance(value, Mapping):
        out = {str(k): known(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None}
    if isinstance(value, list):
        return [v for v in (known(v) for v in value) if v is not None]
    if isinstance(value, str) and value in HIDDEN:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _nccl_vars(pool: PlannedPool, catalog: Catalog) -> dict[str, Any]:
    """The pool's NCCL profile: the files the nccl role installs and the acceptance gate's expectation.
    A GPU platform the catalog has no profile for is said so (the role then refuses to guess)."""
    versions = nccl.library_versions(pool, catalog)  # what the roles install, so the profile fits the node
    # the acceptance gate's expectation: the collective model at the test's shape (a ring on a pair of nodes), for
    # every GPU type, profile or not (a published figure of another shape, e.g. a 2-node tree, would fail a healthy
    # fabric)
    gate = nccl.acceptance_busbw(pool, catalog, nccl.ACCEPTANCE_PAIR_NODES)
    expected = (
        {
            "nccl_expected_busbw_gb_s": gate.busbw_gb_s,
            "nccl_expected_busbw_nodes": gate.nodes,
            "nccl_expected_busbw_basis": gate.basis,
        }
        if gate is not None
        else {}
    )
    try:
        profile = nccl.profile_for(pool, catalog)
    except nccl.NcclProfileError as exc:
        return {"nccl_profile": None, "nccl_profile_missing": str(exc), "nccl_library_versions": versions, **expected}
    if profile is None:  # TPU, Trainium, plain ethernet: nothing of NCCL's to set
        return {"nccl_profile": None}
    return {
        "nccl_profile": profile.id,
        "nccl_library_versions": versions,
        "nccl_conf": nccl.nccl_conf(pool, catalog),
        "nccl_env": nccl.nccl_env(pool, catalog),
        **expected,
    }


def _pool_vars(pool: PlannedPool, outputs: Mapping[str, Any], catalog: Catalog) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "pool": pool.name,
        "provider": pool.provider,
        "region": pool.region,
        "zone": pool.zone,
        "instance_type": pool.instance_type,
        "accelerator": pool.accelerator,
        "accelerators_per_node": pool.accelerators_per_node,
        "fabric": pool.fabric,
        "network_bandwidth_gbps": pool.network_bandwidth_gbps,
        "vcpus_per_node": pool.vcpus_per_node,
        "memory_gib_per_node": pool.memory_gib_per_node,
        # the hosts' architecture (Grace: arm64): the roles pick packages and repositories by it, and check the host
        "cpu_arch": pool.cpu_arch,
        "fabric_domains": [
            {"name": name, "first_node": nodes.start, "nodes": len(nodes)} for name, nodes in pool.fabric_domains()
        ],
    }
    if pool.nvlink is not None:
        # a rack-scale pool (GB200/GB300 NVL72): NVLink spans the nodes of each domain (fabric_domains names them);
        # the roles install IMEX for domains of more than one node
        facts["nvlink"] = {
            "unit": pool.nvlink.unit,
            "nodes_per_domain": pool.nvlink.nodes_per_domain,
            "gpus_per_domain": pool.nvlink.gpus_per_domain,
        }
    if pool.aws is not None:
        facts["efa_devices"] = pool.aws.efa_devices
    if pool.azure is not None:
        facts["infiniband"] = pool.azure.infiniband
    if pool.gcp is not None:
        facts["gpu_nics"] = [n.model_dump() for n in pool.gcp.nics]
    if pool.onprem is not None:
        facts["site"] = pool.onprem.site
        facts["site_fabric"] = pool.onprem.fabric
        racks = {h.name: {"rack": h.rack, "u": h.u} for h in pool.onprem.hosts if h.rack is not None}
        if racks:
            facts["racks"] = racks
    if pool.tpu is not None:
        facts["tpu"] = {
            "accelerator_type": pool.tpu.accelerator_type,
            "chips_per_host": pool.tpu.chips_per_host,
            "hosts_per_slice": pool.tpu.hosts_per_slice,
            "runtime_version": pool.tpu.runtime_version,
        }
    facts.update(_nccl_vars(pool, catalog))
    handles = known(outputs.get("pools", {}).get(pool.name, {}))
    if handles:
        facts["outputs"] = handles
    return facts


def _nvlink_vars(domain: PlannedNvlinkDomain, address: Mapping[str, str]) -> dict[str, Any]:
    """An NVLink domain's group_vars: the domain as the plan has it, and the IMEX domain the nvidia_imex role
    configures on each of its nodes: nodes_config.cfg lists their addresses in plan order, the same file on every
    node. Written only when every node's address is known; else the nodes without one (the role says what to do)."""
    missing = [n for n in domain.nodes if n not in address]
    return {
        "nvlink_domain_pool": domain.pool,
        "nvlink_domain_unit": domain.unit,
        "nvlink_domain_gpus": domain.gpus,
        "nvlink_domain_whole": domain.whole,
        **({"nvlink_domain_rack": domain.rack} if domain.rack is not None else {}),
        "nvidia_imex_domain": domain.id,
        "nvidia_imex_nodes": list(domain.nodes),
        **(
            {"nvidia_imex_unaddressed": missing}
            if missing
            else {"nvidia_imex_addresses": [address[n] for n in domain.nodes]}
        ),
    }


# What of `aicluster monitoring`'s files the controller's Prometheus reads (not the promtool tests, the dashboards
# or dcgm-exporter's counters, which go to the GPU nodes on their own).
PROMETHEUS_FILES = re.compile(r"^(prometheus\.yml|rules/[^/]+\.yml|targets/[^/]+\.yml)$")


def _monitoring_vars(
    plan: ClusterPlan, outputs: Mapping[str, Any], catalog: Catalog, addresses: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(all, slurm_controller) group_vars of the monitoring roles: the exporters' ports and dcgm-exporter's counters
    for every node; the controller's Prometheus files, rendered by aicluster.monitoring as `aicluster monitoring`
    writes them, with the managed workspace's remote_write when the stack asks for one (its URL is a stack output:
    until `up` has run, `prometheus_remote_write_missing` says so and the prometheus role stops there). Nodes whose
    address the inventory knows (`addresses`, checked) are scraped at it; the others by name."""
    from aicluster.monitoring import render as monitoring_files
    from aicluster.monitoring.alerting import secret_file, secret_keys
    from aicluster.monitoring.rules import monitoring_data
    from aicluster.monitoring.scrape import counters_csv, slurm_exporter_args

    m = plan.monitoring
    every = {
        "monitoring_prometheus": m.prometheus,
        "node_exporter_port": m.node_exporter_port,
        "dcgm_exporter_port": m.dcgm_exporter_port,
        "dcgm_exporter_counters": counters_csv(),
    }
    if plan.controller is None:
        return every, {}
    url = None
    controller: dict[str, Any] = {}
    if m.collector == "remote-write":
        url = known(outputs.get("monitoring", {})).get("remote_write_url")
        if not url:
            controller["prometheus_remote_write_missing"] = (
                f"monitoring.prometheus is managed: the controller's Prometheus writes to the {m.service_name} "
                "workspace, whose address is a stack output; run `pulumi up`, then render the inventory again"
            )
    # the slurm_exporter role installs what the stack chose, which is what prometheus.yml scrapes (none: neither)
    mon = monitoring_data(catalog)
    controller["slurm_exporter_source"] = m.slurm_exporter
    controller["slurm_exporter_port"] = mon.exporters.slurm_exporter_port
    if m.slurm_exporter != "none":  # what the role runs: the catalog's release, its flags and collectors
        controller["slurm_exporter_args"] = slurm_exporter_args(mon)
        controller["slurm_exporter_version"] = mon.slurm_exporter.version
        controller["slurm_exporter_archives"] = dict(mon.slurm_exporter.archives)
        controller["slurm_exporter_checksums"] = mon.slurm_exporter.checksums
    files = monitoring_files(plan, catalog, remote_write_url=url, addresses=addresses)
    controller["prometheus_files"] = {k: v for k, v in files.items() if PROMETHEUS_FILES.match(k)}
    if "alertmanager.yml" in files:  # monitoring.alerts, self-hosted: the alertmanager role's configuration
        controller["alertmanager_config"] = files["alertmanager.yml"]
        controller["alertmanager_secrets"] = [{"key": k, "file": secret_file(k)} for k in secret_keys(m)]
    return every, controller


def stack_addresses(plan: ClusterPlan) -> dict[str, str]:
    """Node name -> address the stack itself gives: owned hosts (pools[].hosts) and an on-prem controller host."""
    found = {h.name: h.address for p in plan.pools if p.onprem is not None for h in p.onprem.hosts}
    if plan.controller is not None and plan.controller.address is not None:
        found[plan.controller_host()] = plan.controller.address
    return found


class AddressError(ValueError):
    """An address that would reach ssh as ansible_host is not one (an IP literal or a DNS host name)."""


class NoInventoryError(ValueError):
    """The stack's scheduler owns its nodes: there is no Ansible inventory of them (see `no_inventory_reason`)."""


def no_inventory_reason(plan: ClusterPlan, stack: str = "STACK", suggest: Suggest = placeholder) -> str | None:
    """Why the stack's nodes have no inventory, or None when they have one (Slurm's VMs, site hosts and
    controller). A Kubernetes stack's nodes are Kubernetes nodes that the managed node groups create and replace: the
    control plane names and addresses them, and the add-ons or the service itself configure them, not Ansible."""
    return SCHEDULERS[plan.scheduler].why_no_inventory(plan, stack, suggest)


def inventory(
    plan: ClusterPlan,
    outputs: Mapping[str, Any],
    addresses: Mapping[str, str],
    source: str,
    slurm_version: slurm.Version = (22, 5),
    catalog: Catalog | None = None,
    stack_config: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Relative path -> file text: `hosts.yml` and `group_vars/<group>.yml`. The Slurm files the roles install
    (`slurm_files`: target path -> text) are rendered here for the nodes' Slurm version, with the bursting
    configuration when the stack has burst pools and its outputs name their groups (else `burst_config_missing`
    says what is missing)."""
    reason = no_inventory_reason(plan)
    if reason is not None:
        raise NoInventoryError(reason)
    catalog = catalog or load_catalog()
    children: dict[str, Any] = {}
    group_vars: dict[str, dict[str, Any]] = {}

    from_stack = stack_addresses(plan)
    bad: list[str] = []

    def checked(name: str, address: Any, source: str) -> Any:
        """Every address reaches ssh's command line as ansible_host: whatever gave it (--discover's cloud answer, the
        stack's outputs), it passes the --hosts check or the inventory is refused."""
        why = address_problem(address) if isinstance(address, str) else "not a text"
        if why is not None:
            bad.append(f"{name}: ansible_host {clip(str(address), 60)!r} from {source}: {why}")
        return address

    def host(name: str, **hostvars: Any) -> dict[str, Any]:
        address = addresses.get(name, from_stack.get(name))
        if address is not None:
            source = "--hosts, --discover or the previous inventory" if name in addresses else "the stack file"
            hostvars["ansible_host"] = checked(name, address, source)
        return hostvars

    compute: dict[str, Any] = {}
    nvlink_of = {n: d.id for d in plan.nvlink_domains for n in d.nodes}
    by_provider: dict[str, dict[str, Any]] = {}
    by_fabric: dict[str, dict[str, Any]] = {}
    by_site: dict[str, dict[str, Any]] = {}
    for pool in plan.pools:
        group = group_name("pool", pool.name)
        names = pool.node_names()
        domain_of = {i: name for name, nodes in pool.fabric_domains() for i in nodes}
        hosts = {
            n: host(
                n,
                node_index=i,
                **({"fabric_domain": domain_of[i]} if i in domain_of else {}),
                **({"nvlink_domain": nvlink_of[n]} if n in nvlink_of else {}),
            )
            for i, n in enumerate(names)
        }
        children[group] = {"hosts": hosts}
        group_vars[group] = _pool_vars(pool, outputs, catalog)
        compute[group] = {}
        by_provider.setdefault(group_name("provider", pool.provider), {})[group] = {}
        by_fabric.setdefault(group_name("fabric", pool.fabric), {})[group] = {}
        if pool.onprem is not None:
            by_site.setdefault(group_name("site", pool.onprem.site), {})[group] = {}
    for kind in (by_provider, by_fabric, by_site):
        for name, members in sorted(kind.items()):
            children[name] = {"children": members}
    if plan.nvlink_domains:
        domains: dict[str, Any] = {}
        for d in plan.nvlink_domains:
            group = group_name("nvlink", d.id)
            children[group] = {"hosts": {n: {} for n in d.nodes}}
            domains[group] = {}
            group_vars[group] = _nvlink_vars(d, {n: a for n in d.nodes if (a := host(n).get("ansible_host"))})
        children["nvlink_domains"] = {"children": domains}
    children["slurm_compute"] = {"children": compute}
    ctl = plan.controller
    if ctl is not None:
        name = plan.controller_host()
        ctl_outputs = known(outputs.get("controller", {}))
        ctl_vars = host(name)
        if "ansible_host" not in ctl_vars and ctl_outputs.get("private_ip"):  # a VM the stack itself creates
            ctl_vars["ansible_host"] = checked(name, ctl_outputs["private_ip"], "the stack output private_ip")
        children["slurm_controller"] = {"hosts": {name: ctl_vars}}
        group_vars["slurm_controller"] = {
            "provider": ctl.provider,
            "region": ctl.region,
            "zone": ctl.zone,
            "instance_type": ctl.instance_type,
            **({"outputs": ctl_outputs} if ctl_outputs else {}),
        }
    slurm_files: dict[str, str] = {}
    burst_missing: str | None = None
    burst_vars: dict[str, Any] = {}
    repair_vars: dict[str, Any] = {}
    if ctl is not None:  # the files the controller's and the nodes' Slurm roles install
        slurm_files = slurm.files(plan, slurm_version, catalog=catalog)
        try:
            text = burst.burst_json(plan, outputs, stack_config or {}, catalog=catalog)
        except burst.BurstConfigUnknown as exc:
            burst_missing = str(exc)
        else:
            if text is not None:
                slurm_files[f"{slurm.DEFAULT_SETTINGS.conf_dir}/{burst.CONFIG_FILE}"] = text
                # what the slurm_burst role installs on the controller: the SDK of each cloud a pool bursts into
                providers = sorted({p.provider for p in burst.burst_pools(plan)})
                burst_vars = {
                    "slurm_burst_providers": providers,
                    "slurm_burst_requirements": program_requirements(providers),
                }
        # aicluster-repair replaces a node of a group Pulumi keeps at its size through that group: its name is
        # known only from the stack outputs
        fixed = burst.fixed_node_sets(plan, outputs, stack_config or {})
        if fixed:
            conf = slurm.DEFAULT_SETTINGS.conf_dir
            slurm_files[f"{conf}/{repair.CONFIG_FILE}"] = repair.repair_json(
                plan, catalog, slurm.DEFAULT_SETTINGS.scontrol, conf, node_sets=fixed
            )
        # what the slurm_repair role installs: the SDK of each cloud whose nodes it replaces (burst or fixed
        # groups), and the BMC passwords' secret keys (the role reads their values; they are never here)
        clouds = sorted({p.provider for p in burst.burst_pools(plan)} | {s.provider for s in fixed})
        repair_vars = {
            "slurm_repair_requirements": program_requirements(clouds),
            "slurm_repair_bmc_secrets": repair.bmc_secrets(plan),
        }
    fs_out = outputs.get("filesystems", {})
    reached = {**from_stack, **addresses}  # as ansible_host has them (a bad one is refused below)
    if ctl is not None and "ansible_host" in children["slurm_controller"]["hosts"][plan.controller_host()]:
        reached[plan.controller_host()] = children["slurm_controller"]["hosts"][plan.controller_host()]["ansible_host"]
    monitoring_all, monitoring_controller = _monitoring_vars(plan, outputs, catalog, reached)
    if ctl is not None:
        group_vars["slurm_controller"].update(monitoring_controller)
    group_vars["all"] = {
        "cluster": plan.name,
        "scheduler": plan.scheduler,
        "inventory_source": source,
        "slurm_controller_host": plan.controller_host() if ctl is not None else None,
        "slurm_version": f"{slurm_version[0]}.{slurm_version[1]:02d}",
        "slurm_files": slurm_files,
        **({"burst_config_missing": burst_missing} if burst_missing else {}),
        **burst_vars,
        **repair_vars,
        # what the slurm_health role installs on every Slurm node: aicluster-health needs pydantic only
        **({"slurm_health_requirements": program_requirements([])} if ctl is not None else {}),
        **monitoring_all,
        "filesystems": [
            {
                "name": fs.name,
                "kind": fs.kind,
                "service": fs.service,
                "mount": fs.mount,
                "provider": fs.provider,
                "region": fs.region,
                **known(fs_out.get(fs.name, {})),
            }
            for fs in plan.filesystems
        ],
    }
    if bad:
        more = f"; {len(bad) - MAX_HOST_PROBLEMS} more" if len(bad) > MAX_HOST_PROBLEMS else ""
        raise AddressError("; ".join(bad[:MAX_HOST_PROBLEMS]) + more)
    files = {"hosts.yml": _yaml({"all": {"children": children}})}
    for group, variables in group_vars.items():
        files[f"group_vars/{group}.yml"] = _yaml(variables)
    return files


class _Dumper(yaml.SafeDumper):
    """Every string is written `!unsafe`: a value from the stack or the plan is data to Ansible, never a template
    (a `{{ lookup('pipe', ...) }}` in a mount path stays that text; Ansible never evaluates it on the controller).
    Multi-line strings (rendered files) are literal blocks, so group_vars stay readable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(UNSAFE, value, style="|" if "\n" in value else None)


def _dict(dumper: yaml.SafeDumper, value: Mapping[Any, Any]) -> yaml.MappingNode:
    pairs = [(yaml.ScalarNode("tag:yaml.org,2002:str", str(k)), dumper.represent_data(v)) for k, v in value.items()]
    return yaml.MappingNode("tag:yaml.org,2002:map", pairs, flow_style=False)


UNSAFE = "!unsafe"
_Dumper.add_representer(str, _str)
_Dumper.add_representer(dict, _dict)


def _yaml(data: Any) -> str:
    # Keys stay plain (they are names); only values carry the tag.
    return "---\n" + yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


class _Loader(yaml.SafeLoader):
    """Reads the files `inventory` writes: `!unsafe` strings as the plain strings they are."""


_Loader.add_constructor(UNSAFE, lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]


def read_yaml(text: str) -> Any:
    """A hosts.yml or group_vars file as `inventory` wrote it, as plain data."""
    return yaml.load(text, Loader=_Loader)


# ------------------------------------------------------------------------------------------------
# Writing the files: only into a directory aicluster made (or an empty one), and cleaning only what it wrote
# ------------------------------------------------------------------------------------------------

MARKER = ".aicluster-inventory.json"  # what aicluster wrote here: its files and the addresses it was given
LOCK = ".aicluster-inventory.lock"  # held by the run writing here (its pid in it); stays, empty, after


@dataclass(frozen=True)
class OutputKind:
    """What kind of directory `write` writes: its marker and lock file names (so one kind never takes another's
    directory for its own), the flag and the example a refusal names, and the modes of what it makes."""

    marker: str
    lock: str
    flag: str
    example: str
    file_mode: int = 0o600
    dir_mode: int = 0o700


INVENTORY = OutputKind(MARKER, LOCK, "--out", ".work/<stack>/inventory, the default")


class InventoryDirError(ValueError):
    """The directory cannot take an inventory (not aicluster's, a symbolic link, a path that escapes)."""


@dataclass(frozen=True)
class Written:
    target: Path
    files: list[str]
    addresses: dict[str, str]  # the node addresses this inventory was written with (--hosts, --discover)


# --hosts FILE: node name -> address. An address reaches Ansible as ansible_host and ssh's command line: an IP
# literal or a DNS host name, nothing else (no whitespace, no `{{`, no shell).
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_SCOPE_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_HOST_PROBLEMS = 20  # one line each; past that, a count (a file of 100,000 wrong lines is one mistake)
HOSTS_EXAMPLE = "h100-000: 10.0.0.5"


def address_problem(value: str) -> str | None:
    """Why `value` is not a node address (an IPv4 or IPv6 literal, or a DNS host name), or None."""
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        pass
    else:
        scope = getattr(ip, "scope_id", None)
        if scope is not None and not _SCOPE_ID.fullmatch(scope):
            return "an IPv6 zone (after %) is letters, digits, '_', '.' or '-'"
        return None
    labels = value.split(".")
    if len(value) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
        return (
            "not an address: give an IPv4 or IPv6 address or a DNS host name (letters, digits, '-' and '.'; "
            "no spaces, quotes, templates or shell characters)"
        )
    if labels[-1].isdigit():
        return "not an IPv4 address (four numbers 0-255, e.g. 10.0.0.5) nor a DNS host name"
    return None


def _address_key(value: str) -> str:
    """Two ways to write one address compare equal (10.0.0.5 / 10.0.0.5, ::1 / 0::1, Node-1 / node-1)."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return value.lower()


def read_hosts(path: Path, names: set[str]) -> dict[str, str]:
    """--hosts FILE: a YAML mapping of node name -> address, read with the stack file's hardened loader; every
    key a node of the plan, every value an address, no address twice. SpecError naming the line otherwise."""
    from .spec import Problem, SpecError, did_you_mean
    from .stackfile import MAX_STACK_BYTES, MAX_VALUES, line_map, read_yaml_file

    source = str(path)
    data, root = read_yaml_file(
        path,
        source,
        "a hosts file",
        max_bytes=MAX_STACK_BYTES + 256 * len(names),  # a line per node
        max_values=MAX_VALUES + 3 * len(names),
    )
    lines = line_map(root)
    lines.pop((), None)  # a whole-file problem names the file, not line 1
    shape = f"expected a mapping of node name -> address, one a line (e.g. {HOSTS_EXAMPLE})"
    if not isinstance(data, Mapping) or not data:
        got = "an empty file" if data is None else "an empty mapping" if isinstance(data, Mapping) else None
        problem = Problem((), shape, data, has_value=got is None)
        if got is not None:
            problem = Problem((), f"{got}; {shape}")
        raise SpecError(source, [problem], lines)
    known = sorted(names)
    listed = f"nodes: {', '.join(known[:8])}{' ...' if len(known) > 8 else ''}"
    problems: list[Problem] = []
    first_at: dict[str, str] = {}
    out: dict[str, str] = {}
    for key, value in data.items():
        where: tuple[str | int, ...] = (key if isinstance(key, str) else str(key),)
        if not isinstance(key, str) or key not in names:
            hint = did_you_mean(key, known) if isinstance(key, str) and len(problems) < 5 else None
            kind = "" if isinstance(key, str) else " (a node name is text, e.g. h100-000)"
            problems.append(Problem(where, f"not a node of this stack{kind}; {listed}", hint=hint))
            continue
        if not isinstance(value, str):
            problems.append(Problem(where, f"must be the node's address, e.g. {HOSTS_EXAMPLE}", value, has_value=True))
            continue
        why = address_problem(value)
        if why is not None:
            problems.append(Problem(where, why, value, has_value=True))
            continue
        same = first_at.setdefault(_address_key(value), key)
        if same != key:
            line = lines.get((same,))
            problems.append(
                Problem(
                    where,
                    f"the same address as {same}"
                    + (f" (line {line})" if line else "")
                    + "; each node needs its own address",
                    value,
                    has_value=True,
                )
            )
            continue
        out[key] = value
    if problems:
        shown = problems[:MAX_HOST_PROBLEMS]
        if len(problems) > MAX_HOST_PROBLEMS:
            more = len(problems) - MAX_HOST_PROBLEMS
            shown.append(Problem((), f"{more} more line(s) like these; fix the ones above first"))
        raise SpecError(source, shown, lines)
    return out


MARKER_FIX = (
    "aicluster wrote only addresses that pass this check here, so the file was changed since: give the addresses "
    "again with --hosts FILE (that rewrites it), or remove the file"
)


def check_inventory_dir(target: Path, shown: str) -> None:
    """Refuse an inventory directory (and the marker in it) that someone else could have changed, as ssh refuses a
    key file others can write: the marker's addresses become ssh's host argument, and its file list says what a
    rewrite removes. Nothing there yet (or not a directory, which `write` refuses): nothing to judge."""
    from aicluster.files import unsafe_permissions

    if target.is_symlink() or not target.is_dir():
        return
    for path, name in ((target, shown), (target / MARKER, f"{shown}/{MARKER}")):
        if path is not target and (path.is_symlink() or not path.is_file()):
            continue
        why = unsafe_permissions(path)
        if why is not None:
            raise InventoryDirError(
                f"{name}: {why}; aicluster reads the node addresses of the last inventory from it, so it must be "
                "yours and writable by you alone"
            )


def previous_addresses(target: Path, *, shown: str) -> dict[str, str]:
    """The addresses the last inventory written to `target` was given; {} when there is none (or it is not ours).
    They become ssh's host argument, so they are input like --hosts: InventoryDirError when someone else could
    have changed the directory or the marker, SpecError naming the file, the host, the value and the fix for any
    address the --hosts check refuses (every one at once)."""
    from .spec import Problem, SpecError

    check_inventory_dir(target, shown)
    marker = _read_marker(target)
    if marker is None or "addresses" not in marker:
        return {}
    found = marker["addresses"]
    source = f"{shown}/{MARKER}"
    if not isinstance(found, dict):
        shape = "expected a mapping of node name -> address"
        raise SpecError(source, [Problem(("addresses",), f"{shape}; {MARKER_FIX}", found, has_value=True)])
    problems: list[Problem] = []
    for name, value in found.items():
        where = ("addresses", name)
        if not isinstance(value, str):
            problems.append(Problem(where, f"not an address (a text); {MARKER_FIX}", value, has_value=True))
            continue
        why = address_problem(value)
        if why is not None:
            problems.append(Problem(where, f"{why}; {MARKER_FIX}", value, has_value=True))
    if problems:
        shown_problems = problems[:MAX_HOST_PROBLEMS]
        if len(problems) > MAX_HOST_PROBLEMS:
            shown_problems.append(Problem((), f"{len(problems) - MAX_HOST_PROBLEMS} more address(es) like these"))
        raise SpecError(source, shown_problems)
    return dict(found)


def _read_marker(target: Path, marker: str = MARKER) -> dict[str, Any] | None:
    path = target / marker
    if path.is_symlink() or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) and doc.get("written_by") == "aicluster" else None


@contextmanager
def locked(target: Path, *, shown: str, kind: OutputKind = INVENTORY) -> Iterator[None]:
    """Hold `target`'s lock (the LOCK file in it) while writing it: a second run into the same directory exits
    with InventoryDirError naming the run that writes it, never mistaking that run's files for someone else's."""
    try:
        with lock_directory(target, kind.lock, label=shown):
            yield
    except DirectoryBusy as exc:
        by = f" (pid {exc.pid})" if exc.pid else ""
        raise InventoryDirError(
            f"{shown} is being written by another aicluster run{by}; wait for it or choose another {kind.flag}"
        ) from None


def _ours(target: Path, kind: OutputKind = INVENTORY) -> bool:
    """Whether aicluster has written into `target`: it has the marker, or the lock file of a run (one that
    was stopped before its marker, or is writing now). aicluster takes a lock only in a directory it made, an
    empty one or one with the marker, so the lock file alone says the directory is aicluster's."""
    lock = target / kind.lock
    return _read_marker(target, kind.marker) is not None or (lock.is_file() and not lock.is_symlink())


def write(
    target: Path,
    files: Mapping[str, str],
    addresses: Mapping[str, str],
    *,
    shown: str,
    kind: OutputKind = INVENTORY,
) -> Written:
    """Write `files` (relative path -> text) under `target`, which must be a directory aicluster made for this
    `kind` (it carries the kind's marker or lock), an empty one, or not exist yet (then it is made with the kind's
    directory mode; files get its file mode: an inventory's are 0600 in a 0700 directory). Files an earlier run wrote
    that this one does not are removed; nothing else is ever removed, and an existing directory's mode is never
    changed. One run at a time writes a directory (its LOCK). `shown` is how messages name the directory (the
    user's spelling)."""
    if target.is_symlink():
        raise InventoryDirError(
            f"{shown}: is a symbolic link; give the directory itself (aicluster never writes through a link)"
        )
    if target.exists():
        if not target.is_dir():
            raise InventoryDirError(f"{shown}: exists and is not a directory; give a new or empty directory")
        if not _ours(target, kind) and any(target.iterdir()):  # refused before a lock file is put in it
            raise InventoryDirError(
                f"{shown}: a non-empty directory aicluster did not write (no {kind.marker} in it); give a new or empty "
                f"directory (e.g. {kind.example})"
            )
    else:
        try:
            target.mkdir(parents=True, mode=kind.dir_mode)
        except FileExistsError:  # another run made it meanwhile: its lock decides
            if target.is_symlink() or not target.is_dir():
                raise InventoryDirError(
                    f"{shown}: exists and is not a directory; give a new or empty directory"
                ) from None
        except OSError as exc:  # under a file, no permission, a name too long
            reason = (exc.strerror or type(exc).__name__).lower()
            raise InventoryDirError(f"{shown}: cannot create the directory ({reason})") from None
        else:
            os.chmod(target, kind.dir_mode)  # mkdir's mode is masked by the umask; this directory is ours
    with locked(target, shown=shown, kind=kind):
        return _write_locked(target, files, addresses, _read_marker(target, kind.marker), shown=shown, kind=kind)


def _write_locked(
    target: Path,
    files: Mapping[str, str],
    addresses: Mapping[str, str],
    marker: dict[str, Any] | None,
    *,
    shown: str,
    kind: OutputKind,
) -> Written:
    """`write` once `target` is known to be aicluster's and its lock is held."""
    root = target.resolve()

    def inside(rel: str) -> bool:  # a relative path whose directory is this one's, not reached through a link
        parent = (target / rel).parent
        if Path(rel).is_absolute() or ".." in Path(rel).parts or (parent.exists() and parent.is_symlink()):
            return False
        resolved = parent.resolve()
        return resolved == root or root in resolved.parents

    outside = [rel for rel in files if not inside(rel)]
    if outside:  # checked before anything is written
        raise InventoryDirError(f"{shown}: {outside[0]} would be written outside it (a link or a `..`)")
    before = [str(f) for f in (marker or {}).get("files", []) if isinstance(f, str)]
    for rel in sorted(set(before) - set(files)):  # what an earlier run wrote that this one does not
        old = target / rel
        if inside(rel) and (old.is_file() or old.is_symlink()):
            old.unlink()
    for rel, text in files.items():
        (target / rel).parent.mkdir(parents=True, exist_ok=True, mode=kind.dir_mode)
        write_atomic(target / rel, text, mode=kind.file_mode)
    record = {"written_by": "aicluster", "files": sorted(files), "addresses": dict(sorted(addresses.items()))}
    write_atomic(target / kind.marker, json.dumps(record, indent=2) + "\n", mode=0o600)
    return Written(target, sorted(files), dict(addresses))
