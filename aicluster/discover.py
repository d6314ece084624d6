"""Finding a live stack's nodes in the clouds and giving each the plan's node name.

Pools are Auto Scaling groups, VM scale sets and managed instance groups: the cloud creates the VMs, so the
stack outputs hold no node addresses. Discovery asks each cloud through Ansible's own dynamic-inventory
plugins (amazon.aws.aws_ec2, azure.azcollection.azure_rm, google.cloud.gcp_compute) with the operator's
credentials, filtered to the cluster's tags (GCP: labels), and reads back, per VM, the few facts the plugin
configs compose into `aicluster_*` host variables: provider, id, cloud hostname, private address, pool and
cluster tags, scale set, creation time.

Each VM then gets a plan node name (`PlannedPool.node_names()`, the Slurm names) by `assign`:
- within its pool's fabric domain: an Azure VM takes a name from its scale set's range and a GCP VM from its
  placement group's (matched by the scale set's name from the stack outputs or the hostname prefix the plan
  gave it), so topology.conf's switches hold the VMs that really share a fabric;
- stable: a VM keeps the name it had at the previous discovery (the caller passes the last assignment), and a
  replacement VM takes the lowest free name; new VMs are ordered by creation time, then id;
- nothing is guessed: VMs beyond a domain's planned size, of an unknown pool or another cluster are reported
  as strays with the reason, planned nodes without a VM as missing. The cluster's VMs without a pool tag (the
  Slurm controller, which the stack outputs address) are not pool nodes and are left out.

TPU VMs are not Compute Engine instances and have no inventory plugin: their addresses still come from
`--hosts`. This module runs no cloud API itself and the assignment is a pure function, tested with the same
host variables the plugins produce.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicluster.plan import ClusterPlan, PlannedPool
from aicluster.plan.registry import SCHEDULERS
from aicluster.schedulers.base import Suggest, placeholder
from aicluster.spec import gcp_label

# provider -> (plugin, config file name the plugin accepts: each checks its own suffix)
PLUGINS = {
    "aws": ("amazon.aws.aws_ec2", "aws_ec2.yml"),
    "azure": ("azure.azcollection.azure_rm", "azure_rm.yml"),
    "gcp": ("google.cloud.gcp_compute", "gcp_compute.yml"),
}
# What each plugin needs besides its collection (playbooks/requirements.yml installs the collections).
PLUGIN_NEEDS = {
    "aws": "pip install boto3",
    "azure": "pip install -r ansible_collections/azure/azcollection/requirements.txt",
    "gcp": "pip install google-auth requests",
}
CLUSTER_TAG = "aicluster:cluster"
POOL_TAG = "aicluster:pool"


class DiscoveryError(Exception):
    """Discovery could not run (no plugin, no credentials, no project): the message says what to do."""


@dataclass(frozen=True)
class Instance:
    """One VM as a plugin reported it."""

    provider: str
    id: str
    name: str  # the cloud's hostname for it: EC2 instance id, Azure computer name, GCP instance name
    address: str | None  # private IPv4 address
    pool: str | None  # the aicluster:pool tag (GCP: label value)
    cluster: str | None
    group: str | None = None  # Azure: the scale set's name
    created: str = ""  # ISO 8601 creation/launch time, for a stable order


@dataclass
class Assignment:
    nodes: dict[str, Instance] = field(default_factory=dict)  # plan node name -> VM
    strays: list[tuple[Instance, str]] = field(default_factory=list)  # VMs given no name, and why
    missing: list[str] = field(default_factory=list)  # plan nodes no VM was found for

    @property
    def addresses(self) -> dict[str, str]:
        return {n: i.address for n, i in self.nodes.items() if i.address}

    def ids(self) -> dict[str, str]:
        """Node name -> VM id: what the next discovery keeps."""
        return {n: i.id for n, i in self.nodes.items()}


def discoverable(pool: PlannedPool) -> bool:
    return pool.provider in PLUGINS and pool.tpu is None


def plugin_configs(
    plan: ClusterPlan, stack_config: Mapping[str, Any], suggest: Suggest = placeholder
) -> dict[str, dict[str, Any]]:
    """File name -> plugin configuration, one per cloud the stack has discoverable pools in. Every config
    composes the same `aicluster_*` host variables, so `instances` reads all clouds alike. A stack whose scheduler
    owns its nodes (Kubernetes: found through the control plane, with kubectl) is refused: DiscoveryError."""
    refused = SCHEDULERS[plan.scheduler].why_no_discovery(plan, suggest)
    if refused is not None:
        raise DiscoveryError(refused)
    pools = [p for p in plan.pools if discoverable(p)]
    providers = sorted({p.provider for p in pools})
    configs: dict[str, dict[str, Any]] = {}
    for provider in providers:
        plugin, filename = PLUGINS[provider]
        mine = [p for p in pools if p.provider == provider]
        if provider == "aws":
            configs[filename] = {
                "plugin": plugin,
                "regions": sorted({p.region for p in mine}),
                "filters": {f"tag:{CLUSTER_TAG}": plan.name, "instance-state-name": "running"},
                "hostnames": ["instance-id"],
                "compose": {
                    "aicluster_provider": "'aws'",
                    "aicluster_id": "instance_id",
                    "aicluster_name": "instance_id",
                    "aicluster_address": "private_ip_address",
                    "aicluster_pool": f"tags['{POOL_TAG}']",
                    "aicluster_cluster": f"tags['{CLUSTER_TAG}']",
                    "aicluster_created": "launch_time",
                },
            }
        elif provider == "azure":
            groups = sorted({p.azure.resource_group for p in mine if p.azure is not None and p.azure.resource_group})
            own = any(p.azure is not None and p.azure.resource_group is None for p in mine)
            configs[filename] = {
                "plugin": plugin,
                "auth_source": "auto",
                # pools are scale sets; the cluster's own resource group has a generated name, hence '*'
                "include_vm_resource_groups": [],
                "include_vmss_resource_groups": ["*"] if own or not groups else groups,
                "hostvar_expressions": {
                    "aicluster_provider": "'azure'",
                    "aicluster_id": "vmid",
                    "aicluster_name": "computer_name",
                    "aicluster_address": "private_ipv4_addresses | first",
                    "aicluster_pool": f"tags['{POOL_TAG}']",
                    "aicluster_cluster": f"tags['{CLUSTER_TAG}']",
                    "aicluster_group": "vmss.name",
                    "aicluster_created": "creation_time",
                },
            }
        else:
            project = stack_config.get("gcp:project")
            if not isinstance(project, str) or not project:
                raise DiscoveryError(
                    "discovering GCP nodes needs the project: set gcp:project in the stack's config "
                    "(pulumi config set gcp:project <project>)"
                )
            configs[filename] = {
                "plugin": plugin,
                "auth_kind": "application",
                "projects": [project],
                "zones": sorted({p.zone for p in mine if p.zone}),
                "filters": [
                    f'labels.{gcp_label(CLUSTER_TAG, key=True)} = "{gcp_label(plan.name)}"',
                    "status = RUNNING",
                ],
                "hostnames": ["name"],
                "compose": {
                    "aicluster_provider": "'gcp'",
                    "aicluster_id": "id",
                    "aicluster_name": "name",
                    "aicluster_address": "networkInterfaces[0].networkIP",
                    "aicluster_pool": f"labels['{gcp_label(POOL_TAG, key=True)}']",
                    "aicluster_cluster": f"labels['{gcp_label(CLUSTER_TAG, key=True)}']",
                    "aicluster_created": "creationTimestamp",
                },
            }
    return configs


def list_hosts(directory: Path, env: Mapping[str, str] | None = None, timeout: float = 300) -> dict[str, Any]:
    """`ansible-inventory --list` over the plugin configs in `directory`; a config the plugin cannot read
    (missing collection or SDK, no credentials) is an error, not an empty cloud."""
    here = Path(sys.executable).parent / "ansible-inventory"
    program = str(here) if here.exists() else "ansible-inventory"
    run_env = {
        **os.environ,
        "ANSIBLE_INVENTORY_ENABLED": ",".join(sorted(p for p, _ in PLUGINS.values())),
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
        "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
        "ANSIBLE_NOCOLOR": "True",
        **(env or {}),
    }
    try:
        proc = subprocess.run(
            [program, "-i", str(directory), "--list"],
            capture_output=True,
            text=True,
            check=False,
            env=run_env,
            timeout=timeout,
        )
    except FileNotFoundError:
        raise DiscoveryError("ansible-inventory is not installed (pip install ansible-core)") from None
    except subprocess.TimeoutExpired:
        raise DiscoveryError(f"ansible-inventory did not answer within {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise DiscoveryError(_plugin_failure(proc.stderr))
    try:
        listing = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise DiscoveryError("ansible-inventory printed no JSON inventory") from None
    return _plain(listing) if isinstance(listing, dict) else {}


def _plain(value: Any) -> Any:
    """ansible-core 2.19 writes values it did not make itself as {"__ansible_unsafe": value}: unwrap them."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return _plain(value["__ansible_unsafe"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _plugin_failure(stderr: str) -> str:
    """The plugin's own reason, line by line and never cut mid-word, and what to install when it is a missing
    collection or SDK."""
    requirements = "ansible-galaxy collection install -r playbooks/requirements.yml"
    by_plugin = {plugin: provider for provider, (plugin, _) in PLUGINS.items()}
    missing = dict(re.findall(r"Error loading plugin '([\w.]+)': ([^\n]+)", stderr))
    unloaded = [(p, why.strip()) for p, why in missing.items() if p in by_plugin]
    if unloaded:
        return "discovery failed:\n" + "\n".join(
            f"  the inventory plugin {plugin} did not load ({why}); install it: {requirements}, "
            f"then {PLUGIN_NEEDS[by_plugin[plugin]]}"
            for plugin, why in unloaded
        )
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.lstrip().startswith("[DEPRECATION")]
    shown = [ln if len(ln) <= 300 else ln[:300].rsplit(" ", 1)[0] + " ..." for ln in lines[:8]]
    reason = "\n".join(f"  {ln}" for ln in shown) + ("\n  ..." if len(lines) > 8 else "") or "  no message"
    hints = []
    for provider, (plugin, _) in PLUGINS.items():
        if plugin in stderr or plugin.rsplit(".", 1)[1] in stderr:
            hints.append(f"{provider}: {requirements}; {PLUGIN_NEEDS[provider]}; and the cloud's credentials")
    return f"discovery failed:\n{reason}" + (f"\n  needs: {' | '.join(hints)}" if hints else "")


def instances(listing: Mapping[str, Any]) -> list[Instance]:
    """The VMs of an `ansible-inventory --list` answer over `plugin_configs` (hosts without the composed
    variables are not ours and are left out)."""
    hostvars = listing.get("_meta", {}).get("hostvars", {})
    found = []
    for host, hv in sorted(hostvars.items()):
        provider = hv.get("aicluster_provider")
        if provider not in PLUGINS:
            continue
        address = hv.get("aicluster_address")
        found.append(
            Instance(
                provider=provider,
                id=str(hv.get("aicluster_id") or host),
                name=str(hv.get("aicluster_name") or host),
                address=str(address) if address else None,
                pool=_str(hv.get("aicluster_pool")),
                cluster=_str(hv.get("aicluster_cluster")),
                group=_str(hv.get("aicluster_group")),
                created=str(hv.get("aicluster_created") or ""),
            )
        )
    return found


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


@dataclass(frozen=True)
class _Domain:
    pool: PlannedPool
    names: tuple[str, ...]  # the plan node names of the domain, in order
    prefix: str | None  # cloud hostname prefix of its VMs (Azure scale set, GCP MIG); None: any
    group: str | None  # the Azure scale set's real name, when the stack outputs know it


def _domains(plan: ClusterPlan, outputs: Mapping[str, Any]) -> list[_Domain]:
    out = []
    for pool in plan.pools:
        if not discoverable(pool):
            continue
        names = pool.node_names()
        if pool.azure is not None:
            real = outputs.get("pools", {}).get(pool.name, {}).get("scale_sets", {})
            for s in pool.azure.scale_sets:
                group = real.get(s.name) if isinstance(real, Mapping) else None
                out.append(
                    _Domain(pool, tuple(names[s.first_node : s.first_node + s.nodes]), s.computer_name_prefix,
                            group if isinstance(group, str) and not group.startswith(("<", "[")) else None)
                )  # fmt: skip
        elif pool.gcp is not None:
            for g in pool.gcp.groups:
                names_g = tuple(names[g.first_node : g.first_node + g.nodes])
                out.append(_Domain(pool, names_g, f"{g.hostname_prefix}-", None))
        else:
            out.append(_Domain(pool, tuple(names), None, None))
    return out


def _pool_matches(pool: PlannedPool, inst: Instance) -> bool:
    if inst.pool is None:
        return False
    return inst.pool == (gcp_label(pool.name) if pool.provider == "gcp" else pool.name)


def _domain_of(inst: Instance, domains: Sequence[_Domain]) -> _Domain | str:
    """The fabric domain a VM belongs to, or why it has none."""
    mine = [d for d in domains if d.pool.provider == inst.provider]
    if inst.group is not None:  # Azure: the scale set is exact when the outputs name it
        exact = [d for d in mine if d.group == inst.group]
        if exact:
            return exact[0]
    # Azure scale-set VMs may not carry the scale set's tags: then the hostname prefix decides (`assign` passes
    # only Azure VMs without a pool tag)
    pooled = mine if inst.pool is None else [d for d in mine if _pool_matches(d.pool, inst)]
    if not pooled:
        return f"pool tag {inst.pool!r} names no {inst.provider} pool of this stack"
    for d in pooled:
        if d.prefix is None or inst.name.startswith(d.prefix):
            return d
    return f"hostname {inst.name!r} matches no scale set or placement group of pool {pooled[0].pool.name}"


def assign(
    plan: ClusterPlan,
    found: Sequence[Instance],
    outputs: Mapping[str, Any] | None = None,
    previous: Mapping[str, str] | None = None,
) -> Assignment:
    """Plan node names for the VMs found. `previous`: node name -> VM id from the last discovery, kept where
    that VM is still there and still in that node's domain."""
    domains = _domains(plan, outputs or {})
    previous = previous or {}
    result = Assignment()
    members: dict[int, list[Instance]] = {}
    for inst in found:
        if inst.pool is None and inst.provider != "azure":
            continue  # the cluster's other VMs (the Slurm controller): not a pool's, and addressed by the outputs
        if inst.cluster is not None and inst.cluster not in (plan.name, gcp_label(plan.name)):
            result.strays.append((inst, f"belongs to cluster {inst.cluster!r}"))
            continue
        where = _domain_of(inst, domains)
        if isinstance(where, str):
            result.strays.append((inst, where))
            continue
        members.setdefault(domains.index(where), []).append(inst)
    for k, domain in enumerate(domains):
        vms = members.get(k, [])
        by_id = {i.id: i for i in vms}
        taken: dict[str, Instance] = {}
        for name in domain.names:
            had = by_id.get(previous.get(name, ""))
            if had is not None:
                taken[name] = had
        kept = {i.id for i in taken.values()}
        newcomers = sorted((i for i in vms if i.id not in kept), key=lambda i: (i.created, i.id))
        free = [n for n in domain.names if n not in taken]
        for name, inst in zip(free, newcomers, strict=False):
            taken[name] = inst
        for inst in newcomers[len(free) :]:
            result.strays.append((inst, f"more VMs than the {len(domain.names)} planned for {_where(domain)}"))
        result.nodes.update({n: taken[n] for n in domain.names if n in taken})
        result.missing.extend(n for n in domain.names if n not in taken)
    result.nodes = dict(sorted(result.nodes.items()))
    return result


def _where(domain: _Domain) -> str:
    return f"pool {domain.pool.name}" + (f" ({domain.prefix.rstrip('-')}*)" if domain.prefix else "")
