"""The Pulumi program: stack config -> spec -> plan -> AiCluster. A project's `__main__.py` calls main(): this
repository's, and the one `aicluster init` writes, so a project made with the installed package runs the same program.
Run by `pulumi up` and, under Pulumi's mocks, by `aicluster preview`.

A function, not module-level code: the offline preview runs the project's `__main__.py` once per stack in one process,
and a module runs its body only on its first import."""

from __future__ import annotations

import os

import pulumi

from aicluster.catalog import load_catalog
from aicluster.monitoring import in_cluster, managed_alertmanager, managed_rules
from aicluster.plan import plan
from aicluster.spec import SpecError, parse_cluster
from components import AiCluster


def main() -> None:
    """Read the stack's config, plan it, and declare the AiCluster; export its outputs."""
    # The stack file as the user named it: `aicluster preview path/to/Pulumi.x.yaml` says so; under the Pulumi CLI the
    # stack's file in stackConfigDir.
    stack_file = os.environ.get("AICLUSTER_STACK_FILE") or f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
    try:
        spec = parse_cluster(pulumi.Config("aicluster").require_object("cluster"), stack_file)
        catalog = load_catalog()
        cluster_plan = plan(spec, catalog)
    except SpecError as err:
        raise pulumi.RunError(str(SpecError(stack_file, err.problems))) from None

    # On-prem BMC passwords: each host names the config key of the Pulumi secret that holds its password (`bmc_secret`,
    # e.g. aicluster:bmcPassword). A preview without them set still runs (offline, in CI) and warns; `pulumi up` refuses
    # to record a site whose hosts' credentials are missing, naming every one and the command that sets it. A password
    # the stack file holds in clear text (no `secure:`) is refused by both, never shown.
    bmc_credentials: dict[str, pulumi.Output[str]] = {}
    missing: list[tuple[str, str]] = []
    clear: dict[str, str] = {}
    for pool in cluster_plan.pools:
        for host in pool.onprem.hosts if pool.onprem is not None else ():
            if host.bmc_secret is None:
                continue
            namespace, _, name = host.bmc_secret.partition(":")
            secret = pulumi.Config(namespace).get_secret(name)
            if secret is None:
                missing.append((host.bmc_secret, host.name))
            elif not pulumi.runtime.is_config_secret(host.bmc_secret):
                clear.setdefault(host.bmc_secret, host.name)
            else:
                bmc_credentials[host.name] = secret
    if clear:
        raise pulumi.RunError(
            "; ".join(
                f"{stack_file}: {key} holds the BMC password of host {host} in clear text (not shown): encrypt it with "
                f"`pulumi config set --secret {key}`, and change the password (the clear one is in the file's history)"
                for key, host in clear.items()
            )
        )
    if missing:
        hosts_of: dict[str, list[str]] = {}
        for name, host_name in missing:
            hosts_of.setdefault(name, []).append(host_name)
        unset = ", ".join(
            f"{name} (host {h[0]})" if len(h) == 1 else f"{name} ({len(h)} hosts: {h[0]}, ...)"
            for name, h in hosts_of.items()
        )
        what = f"{stack_file}: BMC secrets not set: {unset}; set each with `pulumi config set --secret NAME`"
        if not pulumi.runtime.is_dry_run():
            raise pulumi.RunError(what)
        pulumi.log.warn(f"{what} before `pulumi up` (this preview records those hosts without a credential)")

    # a Prometheus the stack deploys in its Kubernetes cluster gets the same rules, routing and dashboards, and the
    # alert receivers' secrets for its Alertmanager's Secret (checked as the BMC passwords are)
    monitoring = in_cluster(cluster_plan, catalog)
    alert_secrets: dict[str, pulumi.Output[str]] = {}
    for key in monitoring["secrets"] if monitoring is not None and monitoring["alertmanager"] is not None else ():
        namespace, _, name = key.partition(":")
        secret = pulumi.Config(namespace).get_secret(name)
        what = f"{stack_file}: the alert receivers' secret {key}"
        if secret is None:
            if not pulumi.runtime.is_dry_run():
                raise pulumi.RunError(f"{what} is not set; set it with `pulumi config set --secret {key}`")
            pulumi.log.warn(f"{what} is not set; set it with `pulumi config set --secret {key}` before `pulumi up`")
        elif not pulumi.runtime.is_config_secret(key):
            raise pulumi.RunError(
                f"{what} is in clear text (not shown): encrypt it with `pulumi config set --secret {key}`, and "
                "change it at the receiver (the clear one is in the file's history)"
            )
        else:
            alert_secrets[key] = secret

    # a managed Prometheus gets the alert rules `aicluster monitoring` writes (components read no catalog)
    # and the alert manager definition that routes them, where the stack routes alerts (monitoring.alerts)
    rules = managed_rules(cluster_plan, catalog)
    routing = managed_alertmanager(cluster_plan, catalog)
    cluster = AiCluster(
        cluster_plan.name,
        {
            "plan": cluster_plan,
            "bmc_credentials": bmc_credentials,
            "alert_rules": rules,
            "alert_manager": routing,
            "in_cluster_monitoring": monitoring,
            "alert_secrets": alert_secrets,
        },
    )
    for key, value in cluster.outputs.items():
        pulumi.export(key, value)
