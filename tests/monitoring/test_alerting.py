"""`monitoring.alerts`: where alerts go. For every example stack given receivers and routes, the alertmanager.yml
`aicluster monitoring` writes passes Debian's `amtool check-config` (Alertmanager 0.25, the version the controller
runs), and `amtool config routes test` sends a critical GPU alert to the pager and a warning to chat. Secrets are
named, never given: no written file holds one, each receiver reads its own from a file. Bad input exits 2 with one
located message and writes nothing; a managed service that cannot take the routing says so."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicluster.catalog import Catalog
from aicluster.inventory import inventory, read_yaml
from aicluster.monitoring import groups, managed_alertmanager, render
from aicluster.monitoring.alerting import SECRET_DIR, secret_file
from aicluster.plan import plan
from aicluster.spec import SpecError, parse_cluster
from tests.conftest import ROOT, STACKS, run_cli
from tests.helpers import BASE_CLUSTER, cluster, plan_problems
from tests.targets import system_tool

PAGER_KEY, SLACK_KEY, SMTP_KEY, HOOK_KEY = (
    "aicluster:pagerdutyKey",
    "aicluster:slackWebhook",
    "aicluster:smtpPassword",
    "aicluster:hookToken",
)
# every receiver kind a self-hosted Alertmanager takes, each with its secret named
SELF_HOSTED = {
    "receivers": [
        {"kind": "pagerduty", "name": "pager", "routing_key_secret": PAGER_KEY},
        {"kind": "slack", "name": "chat", "webhook_secret": SLACK_KEY, "channel": "#gpu-alerts"},
        {
            "kind": "email",
            "name": "mail",
            "to": ["gpu-oncall@example.com", "infra@example.com"],
            "sender": "alertmanager@example.com",
            "smarthost": "smtp.example.com:587",
            "username": "alertmanager",
            "password_secret": SMTP_KEY,
        },
        {"kind": "webhook", "name": "tickets", "url": "https://hooks.example.com/aicluster", "token_secret": HOOK_KEY},
    ],
    "routes": [
        {"receiver": "pager", "severities": ["critical"], "groups": ["gpu"]},
        {"receiver": "tickets", "severities": ["critical"]},
        {"receiver": "chat", "severities": ["warning"]},
    ],
    "receiver": "mail",
}
SNS = {
    "receivers": [
        {"kind": "sns", "name": "pager", "topic_arn": "arn:aws:sns:us-east-1:123456789012:gpu-pager"},
        {"kind": "sns", "name": "chat", "topic_arn": "arn:aws:sns:us-east-1:123456789012:gpu-chat"},
    ],
    "routes": [
        {"receiver": "pager", "severities": ["critical"], "groups": ["gpu"]},
        {"receiver": "chat", "severities": ["warning"]},
    ],
    "receiver": "chat",
}


@pytest.fixture(scope="module")
def amtool() -> str:
    return system_tool("amtool", "prometheus-alertmanager")


def stack_doc(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))


def with_alerts(name: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The stack's cluster with receivers its Prometheus can use (None: its managed service takes no routing)."""
    data = copy.deepcopy(stack_doc(name)["config"]["aicluster:cluster"])
    mon = dict(data.get("monitoring") or {})
    managed = mon.get("prometheus") == "managed"
    aws = managed and {p["provider"] for p in data["pools"]} == {"aws"}
    alerts = copy.deepcopy(SNS if aws else SELF_HOSTED)
    if "gpu" not in plan(parse_cluster(data, name), _catalog()).monitoring.alert_groups:  # TPU or Trainium only
        for route in alerts["routes"]:
            route.pop("groups", None)
        # the pager now takes every critical alert: a later critical route would never be reached (refused)
        alerts["routes"] = [r for r in alerts["routes"] if r["receiver"] != "tickets"]
    mon["alerts"] = alerts
    data["monitoring"] = mon
    return data, (None if managed and not aws else alerts)


def amtool_ok(amtool: str, cwd: Path, *args: str) -> str:
    proc = subprocess.run([amtool, *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def routed(amtool: str, cwd: Path, *labels: str) -> str:
    return amtool_ok(amtool, cwd, "config", "routes", "test", "--config.file=alertmanager.yml", *labels).strip()


def critical_gpu_alert(catalog: Catalog, planned: Any) -> str:
    gpu = next(g for g in groups(planned, catalog) if g.file == "gpu")
    return next(a.name for a in gpu.alerts if a.severity == "critical")


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_routes_its_alerts_through_a_config_amtool_accepts(
    catalog: Catalog, stack: str, tmp_path: Path, amtool: str
) -> None:
    data, alerts = with_alerts(stack)
    if alerts is None:  # GKE's and Azure's managed services: refused with the reason (test below)
        assert plan_problems(catalog, data)
        return
    planned = plan(parse_cluster(data, stack), catalog)
    if planned.monitoring.service is None:
        files = render(planned, catalog)
        text = files["alertmanager.yml"]
        prometheus = yaml.safe_load(files["prometheus.yml"])
        if planned.kubernetes is None:  # the controller's Alertmanager, beside its Prometheus
            assert prometheus["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["localhost:9093"]}]}]}
        else:  # the kube-prometheus-stack add-on runs it in the cluster (its release's alertmanager.config)
            assert "alerting" not in prometheus
            assert "and its Alertmanager with alertmanager.yml" in files["prometheus.yml"]
    else:  # AMP: the same configuration, in the workspace's alert manager definition
        definition = managed_alertmanager(planned, catalog)
        assert definition is not None
        text = yaml.safe_load(definition)["alertmanager_config"]
        assert "alertmanager.yml" not in render(planned, catalog)  # nothing runs one on the controller
    (tmp_path / "alertmanager.yml").write_text(text)
    assert "SUCCESS" in amtool_ok(amtool, tmp_path, "check-config", "alertmanager.yml")
    # the routing tree: a critical GPU alert pages, a warning goes to chat, anything else to the default
    has_gpus = any(p.accelerator_kind == "gpu" for p in planned.pools)
    if has_gpus:
        alert = critical_gpu_alert(catalog, planned)
        assert routed(amtool, tmp_path, f"alertname={alert}", "severity=critical") == "pager"
    assert routed(amtool, tmp_path, "alertname=InfinibandPortDown", "severity=warning") == "chat"
    assert routed(amtool, tmp_path, "alertname=SomethingElse", "severity=info") == alerts["receiver"]
    if planned.monitoring.service is None and has_gpus:
        # a critical alert outside the GPU group goes to the next critical route
        assert routed(amtool, tmp_path, "alertname=InfinibandPortDown", "severity=critical") == "tickets"


def test_secrets_are_named_and_read_from_files_never_written(catalog: Catalog, tmp_path: Path, amtool: str) -> None:
    data, _ = with_alerts("p5-small")
    planned = plan(parse_cluster(data, "t"), catalog)
    config = yaml.safe_load(render(planned, catalog)["alertmanager.yml"])
    by_name = {r["name"]: r for r in config["receivers"]}
    # Alertmanager 0.25's *_file fields (catalog monitoring.alertmanager.secret_file_fields), one file per key
    assert by_name["pager"]["pagerduty_configs"][0]["routing_key_file"] == f"{SECRET_DIR}/pagerdutyKey"
    assert by_name["chat"]["slack_configs"][0]["api_url_file"] == f"{SECRET_DIR}/slackWebhook"
    mail = by_name["mail"]["email_configs"][0]
    assert (mail["auth_username"], mail["auth_password_file"]) == ("alertmanager", f"{SECRET_DIR}/smtpPassword")
    assert mail["to"] == "gpu-oncall@example.com, infra@example.com"
    hook = by_name["tickets"]["webhook_configs"][0]
    assert hook["url"] == "https://hooks.example.com/aicluster"
    assert hook["http_config"]["authorization"] == {"type": "Bearer", "credentials_file": f"{SECRET_DIR}/hookToken"}
    # no field that would hold a secret inline
    text = yaml.safe_dump(config)
    for inline in ("routing_key:", "api_url:", "auth_password:", "credentials:", "service_key:"):
        assert inline not in text
    # the inventory hands the alertmanager role the same file and the keys (never values) with their files
    files = inventory(planned, {}, {}, "offline preview", slurm_version=(25, 5), catalog=catalog)
    controller = read_yaml(files["group_vars/slurm_controller.yml"])
    assert isinstance(controller, dict)
    assert controller["alertmanager_config"] == render(planned, catalog)["alertmanager.yml"]
    assert controller["alertmanager_secrets"] == [
        {"key": k, "file": secret_file(k)} for k in (PAGER_KEY, SLACK_KEY, SMTP_KEY, HOOK_KEY)
    ]
    # Alertmanager reads the files when it notifies, so a check of the configuration needs none of them
    (tmp_path / "alertmanager.yml").write_text(render(planned, catalog)["alertmanager.yml"])
    amtool_ok(amtool, tmp_path, "check-config", "alertmanager.yml")


def test_a_stack_without_alerts_writes_no_alertmanager_config(catalog: Catalog) -> None:
    planned = plan(parse_cluster(cluster(), "t"), catalog)
    files = render(planned, catalog)
    assert "alertmanager.yml" not in files
    assert "alerting" not in yaml.safe_load(files["prometheus.yml"])
    inv = inventory(planned, {}, {}, "offline preview", slurm_version=(25, 5), catalog=catalog)
    controller = read_yaml(inv["group_vars/slurm_controller.yml"])
    assert isinstance(controller, dict)
    assert "alertmanager_config" not in controller


def test_the_cli_writes_the_example_stacks_routing(tmp_path: Path, amtool: str) -> None:
    out = tmp_path / "mon"
    proc = run_cli("monitoring", "onprem-dgx-h100", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "amtool check-config alertmanager.yml" in " ".join(proc.stdout.split())
    amtool_ok(amtool, out, "check-config", "alertmanager.yml")
    assert routed(amtool, out, "alertname=GpuXidFatal", "severity=critical") == "pager"
    assert routed(amtool, out, "alertname=GpuXidWarning", "severity=warning") == "chat"
    assert routed(amtool, out, "alertname=InfinibandPortDown", "severity=critical") == "pager"


def _problems(data: dict[str, Any]) -> list[str]:
    try:
        plan(parse_cluster(data, "t"), _catalog())
    except SpecError as err:
        return [p.render("t") for p in err.problems]
    return []


def _catalog() -> Catalog:
    from aicluster.catalog import load_catalog

    return load_catalog()


def _alerts(**changes: Any) -> dict[str, Any]:
    alerts = copy.deepcopy(SELF_HOSTED)
    alerts.update(changes)
    return alerts


@pytest.mark.parametrize(
    ("alerts", "path", "said"),
    [
        pytest.param(
            _alerts(routes=[{"receiver": "pagr", "severities": ["critical"]}]), "monitoring.alerts.routes[0].receiver",
            'no receiver of that name (receivers: pager, chat, mail, tickets); add it to receivers or name one of '
            'those (did you mean "pager"?)', id="unknown-route-receiver",
        ),
        pytest.param(
            _alerts(receiver="nobody"), "monitoring.alerts.receiver", "no receiver of that name", id="unknown-default",
        ),
        pytest.param(
            _alerts(routes=[{"receiver": "tickets"}, {"receiver": "pager", "severities": ["critical"]}]),
            "monitoring.alerts.routes[1]", "this route is never reached: routes[0] (receiver tickets) comes first",
            id="route-after-a-catch-all",
        ),
        pytest.param(
            _alerts(routes=[{"receiver": "chat", "groups": ["gpu", "fabric"]},
                            {"receiver": "pager", "severities": ["critical"], "groups": ["gpu"]}]),
            "monitoring.alerts.routes[1]", "put the narrower route first", id="route-a-wider-one-covers",
        ),
        pytest.param(
            _alerts(receivers=[{"kind": "slack", "name": "chat"}], routes=[], receiver="chat"),
            "monitoring.alerts.receivers[0].webhook_secret", "required field is missing", id="missing-secret",
        ),
        pytest.param(
            _alerts(receivers=[{"kind": "pagerduty", "name": "pager", "routing_key_secret": PAGER_KEY}] * 2,
                    routes=[], receiver="pager"),
            "monitoring.alerts.receivers[1].name", "receiver names must be unique", id="duplicate-receiver",
        ),
        pytest.param(
            _alerts(receivers=[{"kind": "teams", "name": "x"}], routes=[], receiver="x"),
            "monitoring.alerts.receivers[0].kind", "allowed: email, slack, pagerduty, webhook, sns", id="unknown-kind",
        ),
        pytest.param(
            _alerts(routes=[{"receiver": "chat", "groups": ["slurm"]}]), "monitoring.alerts.routes[0].groups[0]",
            "the stack has no slurm alerts", id="group-the-stack-lacks",
        ),
        pytest.param(
            _alerts(receivers=[{"kind": "sns", "name": "x", "topic_arn": "arn:aws:sns:us-east-1:123456789012:t"}],
                    routes=[], receiver="x"),
            "monitoring.alerts.receivers[0].kind", "(on the controller, or in the cluster) has no AWS identity",
            id="sns-self-hosted",
        ),
        pytest.param(
            _alerts(receivers=[{"kind": "email", "name": "m", "to": ["a@example.com"], "sender": "b@example.com",
                                "smarthost": "smtp.example.com:587", "username": "u"}], routes=[], receiver="m"),
            "monitoring.alerts.receivers[0].password_secret", "needs both username and password_secret",
            id="login-without-password",
        ),
    ],
)  # fmt: skip
def test_bad_alerts_are_located_with_the_fix(alerts: dict[str, Any], path: str, said: str) -> None:
    problems = _problems(cluster(monitoring={"alerts": alerts}))
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"t: {path}: "), problems[0]
    assert said in problems[0]


@pytest.mark.parametrize(
    ("field", "receiver"),
    [
        ("routing_key_secret", {"kind": "pagerduty", "name": "p"}),
        ("webhook_secret", {"kind": "slack", "name": "p"}),
        ("token_secret", {"kind": "webhook", "name": "p", "url": "https://hooks.example.com/x"}),
    ],
)
def test_a_secret_pasted_where_its_key_goes_is_refused_and_never_echoed(field: str, receiver: dict[str, Any]) -> None:
    secret = "R0ut1ngK3y-s3cr3t-value"
    problems = _problems(cluster(monitoring={"alerts": {"receivers": [{**receiver, field: secret}], "receiver": "p"}}))
    assert len(problems) == 1, problems
    assert f"monitoring.alerts.receivers[0].{field}" in problems[0]
    assert "pulumi config set --secret" in problems[0]
    assert secret not in problems[0]


def test_a_webhook_url_with_credentials_is_refused_and_never_echoed() -> None:
    url = "https://user:hunter2@hooks.example.com/x?token=abc"
    hook = {"kind": "webhook", "name": "h", "url": url}
    problems = _problems(cluster(monitoring={"alerts": {"receivers": [hook], "receiver": "h"}}))
    assert len(problems) == 1, problems
    assert "hunter2" not in problems[0]
    assert "token_secret" in problems[0]


@pytest.mark.parametrize(
    ("stack", "said"),
    [
        pytest.param("gke-a3mega", "Google Cloud Managed Service for Prometheus cannot take Alertmanager routing",
                     id="gke"),
        pytest.param("aks-nd-h100", "Azure Monitor action groups", id="aks"),
    ],
)  # fmt: skip
def test_managed_services_without_alertmanager_routing_refuse_it_with_the_reason(
    catalog: Catalog, stack: str, said: str
) -> None:
    data, alerts = with_alerts(stack)
    assert alerts is None
    problems = plan_problems(catalog, data)
    assert len(problems) == 1, problems
    assert problems[0].startswith("t: monitoring.alerts: "), problems[0]
    assert said in problems[0]
    assert "remove monitoring.alerts" in problems[0]


def test_amp_takes_only_sns_receivers(catalog: Catalog) -> None:
    data, _ = with_alerts("eks-p5")
    data["monitoring"]["alerts"] = copy.deepcopy(SELF_HOSTED)
    problems = plan_problems(catalog, data)
    assert len(problems) == 4, problems  # one per receiver, each saying what AMP takes
    assert all("delivers only to sns" in p for p in problems)


def test_bad_alerts_exit_2_from_the_cli_and_write_nothing(tmp_path: Path) -> None:
    doc = stack_doc("p5-small")
    doc["config"]["aicluster:cluster"]["monitoring"] = {"alerts": _alerts(receiver="pagr")}
    path = tmp_path / "Pulumi.p5-alerts.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = run_cli("monitoring", str(path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "monitoring.alerts.receiver" in proc.stderr
    assert 'did you mean "pager"?' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


ALERT_KEYS = ["receivers", "routes", "receiver"]
alert_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.text(max_size=20),
        st.sampled_from(["pager", "chat", "critical", "gpu", "slack", "sns", "aicluster:x", "https://a.example.com"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(ALERT_KEYS), value=alert_values)
def test_any_alerts_value_gives_routing_or_located_problems(key: str, value: Any) -> None:
    data = copy.deepcopy(BASE_CLUSTER)
    data["monitoring"] = {"alerts": {**copy.deepcopy(SELF_HOSTED), key: value}}
    for problem in _problems(data):
        assert problem.startswith("t: ")
        assert "\n" not in problem


def test_a_receiver_secret_held_in_clear_in_the_stack_file_is_refused_and_never_shown(tmp_path: Path) -> None:
    doc = stack_doc("onprem-dgx-h100")
    hook = "https://hooks.slack.com/services/T000/B000/clearTextValue"
    doc["config"]["aicluster:slackWebhook"] = hook  # `pulumi config set` without --secret
    path = tmp_path / "Pulumi.onprem-clear.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = run_cli("monitoring", str(path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    said = " ".join(proc.stderr.split())
    assert "aicluster:slackWebhook: holds the secret of alert receiver chat in clear text (not shown)" in said
    assert "pulumi config set --secret aicluster:slackWebhook" in said
    assert "clearTextValue" not in proc.stderr + proc.stdout
    assert not (tmp_path / "out").exists()
