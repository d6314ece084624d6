"""Alert routing from the stack (`monitoring.alerts`): Alertmanager's configuration, for the controller's
Alertmanager (self-hosted) or the alert manager of Amazon Managed Service for Prometheus (managed, on AWS).

Routes match on the alert's `severity` label and, for a rule group, on the names of the alerts that group holds (the
rules carry no group label; the names are exact, taken from the very groups `aicluster monitoring` writes). A secret
is never here: each receiver's secret goes in through the field Alertmanager reads from a file (catalog
monitoring.alertmanager.secret_file_fields), and the file is named after the Pulumi secret's key, below
SECRET_DIR; the alertmanager role writes it from the Pulumi secret (or a vault variable) with no_log.

A pure `plan -> text` function: it reads the plan, the catalog and the rule groups, nothing else.
"""

from __future__ import annotations

from typing import Any

import yaml

from aicluster.catalog import MonitoringData
from aicluster.plan.models import ClusterPlan, PlannedMonitoring
from aicluster.render.monitoring import ALERTMANAGER_SECRET, ALERTMANAGER_SECRETS_DIR

from .rules import Group

# Where the controller's role writes the receivers' secrets: one file per Pulumi secret key, named after the key
# (aicluster:slackWebhook -> slackWebhook), readable by root and the prometheus group (the Alertmanager's user).
SECRET_DIR = "/etc/prometheus/alertmanager-secrets"
# Notifications for the same alert name in the same cluster go out together.
GROUP_BY = ("alertname", "cluster")


def secret_name(key: str) -> str:
    """A receiver's secret as a file (or Kubernetes Secret key) is named: its Pulumi config key less the namespace."""
    return key.partition(":")[2] or key


def secret_file(key: str, directory: str = SECRET_DIR) -> str:
    """The file a receiver's secret (named by its Pulumi config key) is read from: on the controller, or, in a
    Kubernetes cluster, in the Alertmanager pod where the Prometheus Operator mounts the receivers' Secret."""
    return f"{directory}/{secret_name(key)}"


def secret_keys(monitoring: PlannedMonitoring) -> list[str]:
    """The Pulumi config keys of the receivers' secrets (never their values), in order, once each."""
    found: list[str] = []
    alerts = monitoring.alerts
    for r in alerts.receivers if alerts is not None else ():
        key = {
            "email": getattr(r, "password_secret", None),
            "slack": getattr(r, "webhook_secret", None),
            "pagerduty": getattr(r, "routing_key_secret", None),
            "webhook": getattr(r, "token_secret", None),
        }.get(r.kind)
        if key is not None and key not in found:
            found.append(key)
    return found


def _set_path(entry: dict[str, Any], dotted: str, value: str) -> None:
    *parents, last = dotted.split(".")
    for p in parents:
        entry = entry.setdefault(p, {})
    entry[last] = value


def _receiver(r: Any, mon: MonitoringData, region: str | None, directory: str) -> dict[str, Any]:
    fields = mon.alertmanager.secret_file_fields
    if r.kind == "email":
        entry: dict[str, Any] = {
            "to": ", ".join(r.to),
            "from": r.sender,
            "smarthost": r.smarthost,
            "require_tls": r.require_tls,
            "send_resolved": True,
        }
        if r.username is not None and r.password_secret is not None:
            entry["auth_username"] = r.username
            _set_path(entry, fields["email"], secret_file(r.password_secret, directory))
        return {"name": r.name, "email_configs": [entry]}
    if r.kind == "slack":
        entry = {"send_resolved": True}
        _set_path(entry, fields["slack"], secret_file(r.webhook_secret, directory))
        if r.channel is not None:
            entry["channel"] = r.channel
        return {"name": r.name, "slack_configs": [entry]}
    if r.kind == "pagerduty":
        entry = {"send_resolved": True}
        _set_path(entry, fields["pagerduty"], secret_file(r.routing_key_secret, directory))
        return {"name": r.name, "pagerduty_configs": [entry]}
    if r.kind == "webhook":
        entry = {"url": r.url, "send_resolved": True}
        if r.token_secret is not None:
            entry["http_config"] = {"authorization": {"type": "Bearer"}}
            _set_path(entry, fields["webhook"], secret_file(r.token_secret, directory))
        return {"name": r.name, "webhook_configs": [entry]}
    # sns: the AWS managed service signs with its own identity, in the topic's region (required there)
    topic_region = r.topic_arn.split(":")[3] or region
    return {
        "name": r.name,
        "sns_configs": [{"topic_arn": r.topic_arn, "sigv4": {"region": topic_region}, "send_resolved": True}],
    }


def _matchers(severities: list[str], groups: list[str], by_group: dict[str, list[str]]) -> list[str]:
    matchers = []
    if severities:
        matchers.append(f'severity=~"{"|".join(severities)}"')
    if groups:
        names = sorted({n for g in groups for n in by_group.get(g, ())})
        matchers.append(f'alertname=~"{"|".join(names)}"')
    return matchers


def alertmanager_config(
    plan: ClusterPlan, mon: MonitoringData, groups: list[Group], secret_dir: str | None = None
) -> dict[str, Any] | None:
    """Alertmanager's configuration for the stack's `monitoring.alerts` (None: the stack routes no alerts); the
    receivers' secrets are read from files below `secret_dir` (default: the controller's; a Kubernetes stack's
    Alertmanager: where the operator mounts the receivers' Secret)."""
    if secret_dir is None:
        secret_dir = ALERTMANAGER_SECRETS_DIR if plan.kubernetes is not None else SECRET_DIR
    alerts = plan.monitoring.alerts
    if alerts is None:
        return None
    by_group = {g.file: [a.name for a in g.alerts] for g in groups}
    routes = []
    for route in alerts.routes:
        entry: dict[str, Any] = {"receiver": route.receiver}
        matchers = _matchers(list(route.severities), list(route.groups), by_group)
        if matchers:
            entry["matchers"] = matchers
        routes.append(entry)
    doc: dict[str, Any] = {
        "route": {"receiver": alerts.receiver, "group_by": list(GROUP_BY), **({"routes": routes} if routes else {})},
        "receivers": [_receiver(r, mon, plan.monitoring.region, secret_dir) for r in alerts.receivers],
    }
    return doc


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=1 << 16, allow_unicode=True)


def alertmanager_yml(plan: ClusterPlan, mon: MonitoringData, groups: list[Group]) -> str | None:
    """alertmanager.yml for the controller's Alertmanager; None unless the stack routes alerts there (self-hosted)."""
    doc = alertmanager_config(plan, mon, groups)
    if doc is None or plan.monitoring.service is not None:
        return None
    keys = secret_keys(plan.monitoring)
    head = (
        f"# Alertmanager for the aicluster cluster {plan.name}, written by `aicluster monitoring` from "
        "monitoring.alerts;\n# regenerate rather than edit. Check it with `amtool check-config alertmanager.yml`.\n"
    )
    if plan.kubernetes is not None:
        head = (
            f"# Alertmanager for the aicluster cluster {plan.name}, from monitoring.alerts: `pulumi up` gives it to\n"
            "# the kube-prometheus-stack release's Alertmanager (alertmanager.config); this copy is for reading and\n"
            "# `amtool check-config`.\n"
        )
        if keys:
            head += (
                f"# Secrets are read from files below {ALERTMANAGER_SECRETS_DIR}: the Kubernetes Secret\n"
                f"# {ALERTMANAGER_SECRET}, which `pulumi up` writes from the Pulumi secrets {', '.join(keys)}.\n"
            )
    elif keys:
        head += (
            f"# Secrets are read from files below {SECRET_DIR}, which `aicluster tune` writes from the Pulumi\n"
            f"# secrets {', '.join(keys)}.\n"
        )
    return head + _dump(doc)


def managed_definition(plan: ClusterPlan, mon: MonitoringData, groups: list[Group]) -> str | None:
    """The alert manager definition of the stack's managed workspace (AMP: `alertmanager_config:` holding the
    configuration as text); None unless the stack routes alerts to a managed service that takes them."""
    doc = alertmanager_config(plan, mon, groups)
    if doc is None or plan.monitoring.service is None:
        return None
    body = "".join(f"  {line}\n" for line in _dump(doc).splitlines())
    return "alertmanager_config: |\n" + body  # AMP's format: the configuration as a block of text
