"""The GPU node quarantine controller (aicluster/repair/quarantine.py): its decision (taint and cordon on a True fault
condition, release only its own, the circuit breaker), its patches, its configuration errors, and end to end over
HTTP against a fake API server (tests/repair/kubeapi.py: no real kube-apiserver can be had here) that applies merge
patches with resourceVersion preconditions and authorises each call with the RBAC rules the stack renders; the
last test runs the shipped ConfigMap's files in a bare interpreter (no site-packages)."""

from __future__ import annotations

import functools
import json
import ssl
import subprocess
import sys
import urllib.error
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.repair import quarantine
from aicluster.repair.breaker import breaker_limit
from aicluster.repair.quarantine import (
    ANNOTATION,
    Action,
    Config,
    ConfigError,
    Controller,
    KubeApi,
    Node,
    decide,
    load_config,
    main,
    patch,
    taint_value,
)
from aicluster.schedulers.kubernetes.plan import QUARANTINE_ADDON, QUARANTINE_TAINT
from aicluster.schedulers.kubernetes.quarantine import CONFIG_FILE, quarantine_objects
from aicluster.stackfile import find_project, read_stack
from tests.conftest import ROOT
from tests.repair.kubeapi import TOKEN, FakeApi, Rule, certificates, serve

XID, COUNT = "GpuXidCritical", "GpuCountMismatch"
CFG = Config(
    pool_label="aicluster.io/pool",
    pools=("gpu",),
    conditions=(XID, COUNT),
    taint_key=QUARANTINE_TAINT,
    max_share=0.5,
)
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def node(
    name: str,
    pool: str = "gpu",
    *,
    unschedulable: bool = False,
    taints: tuple[dict[str, Any], ...] = (),
    record: dict[str, Any] | None = None,
    **conditions: str,
) -> Node:
    return Node(
        name=name,
        uid=f"uid-{name}",
        resource_version="7",
        labels={"aicluster.io/pool": pool},
        annotations={ANNOTATION: json.dumps(record)} if record is not None else {},
        unschedulable=unschedulable,
        taints=taints,
        conditions={t: (s, f"R{t}", "") for t, s in conditions.items()},
    )


def kinds(actions: list[Action]) -> list[tuple[str, str]]:
    return [(a.kind, a.node.name) for a in actions]


# ------------------------------------------------------------------------------------------------- the decision


def test_healthy_nodes_are_left_alone() -> None:
    nodes = [node("a", GpuXidCritical="False"), node("b", GpuXidCritical="Unknown"), node("c")]
    assert decide(nodes, CFG) == []


@pytest.mark.parametrize("condition", [XID, COUNT])
def test_a_true_fault_condition_quarantines_and_cordons(condition: str) -> None:
    faulty = node("a", GpuXidCritical="True") if condition == XID else node("a", GpuCountMismatch="True")
    nodes = [faulty, node("b"), node("c"), node("d")]
    (action,) = decide(nodes, CFG)
    assert (action.kind, action.node.name, action.condition, action.cordon) == ("quarantine", "a", condition, True)


def test_a_node_someone_else_cordoned_is_tainted_but_not_claimed_as_our_cordon() -> None:
    (action,) = decide([node("a", unschedulable=True, GpuXidCritical="True"), node("b")], CFG)
    assert action.kind == "quarantine"
    assert action.cordon is False
    assert patch(action, CFG, NOW)["spec"].keys() == {"taints"}  # no unschedulable: it is someone else's


def test_nodes_outside_the_gpu_pools_are_neither_watched_nor_counted() -> None:
    nodes = [node("sys-1", "system", GpuXidCritical="True"), node("a", GpuXidCritical="True"), node("b")]
    # two GPU nodes: one place
    assert kinds(decide(nodes, CFG)) == [("quarantine", "a")]


def test_circuit_breaker_defers_past_the_share_in_name_order() -> None:
    nodes = [node(n, GpuXidCritical="True") for n in ("d", "c", "b")] + [node("a")]
    assert breaker_limit(CFG.max_share, 4) == 2
    assert kinds(decide(nodes, CFG)) == [("quarantine", "b"), ("quarantine", "c"), ("defer", "d")]


def test_the_breaker_counts_quarantined_nodes_and_a_release_frees_a_place() -> None:
    ours = {"by": "aicluster-gpu-quarantine", "cordoned": True}
    nodes = [
        node("a", unschedulable=True, record=ours, GpuXidCritical="False"),  # cleared: released
        node("b", unschedulable=True, record=ours, GpuXidCritical="True"),  # still faulty: held
        node("c", GpuXidCritical="True"),
        node("d", GpuXidCritical="True"),
    ]
    assert kinds(decide(nodes, CFG)) == [("release", "a"), ("quarantine", "c"), ("defer", "d")]


def test_a_single_gpu_node_is_never_quarantined() -> None:
    """The same rounding as aicluster-repair: 50 % of one node is none (a cluster is never emptied)."""
    assert kinds(decide([node("a", GpuXidCritical="True")], CFG)) == [("defer", "a")]


@pytest.mark.parametrize(
    ("record", "unschedulable", "uncordon"),
    [
        pytest.param({"cordoned": True}, True, True, id="our-cordon"),
        pytest.param({"cordoned": False}, True, False, id="someone-elses-cordon"),
        pytest.param({"cordoned": True}, False, False, id="already-uncordoned"),
    ],
)
def test_release_uncordons_only_what_it_cordoned(record: dict[str, Any], unschedulable: bool, uncordon: bool) -> None:
    (action,) = decide([node("a", unschedulable=unschedulable, record=record), node("b")], CFG)
    assert (action.kind, action.cordon) == ("release", uncordon)
    body = patch(action, CFG, NOW)
    assert ("unschedulable" in body["spec"]) is uncordon
    assert body["metadata"]["annotations"] == {ANNOTATION: None}


def test_an_unreadable_record_is_released_without_uncordoning() -> None:
    n = node("a", unschedulable=True)
    n.annotations[ANNOTATION] = "not json"
    (action,) = decide([n, node("b")], CFG)
    assert (action.kind, action.cordon) == ("release", False)


def test_patches_touch_only_aicluster_taint_and_carry_the_resource_version() -> None:
    other = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    (q,) = decide([node("a", taints=(other,), GpuXidCritical="True"), node("b")], CFG)
    body = patch(q, CFG, NOW)
    assert body["metadata"]["resourceVersion"] == "7"
    assert body["spec"] == {
        "taints": [other, {"key": QUARANTINE_TAINT, "value": "RGpuXidCritical", "effect": "NoSchedule"}],
        "unschedulable": True,
    }
    record = json.loads(body["metadata"]["annotations"][ANNOTATION])
    assert record == {"by": "aicluster-gpu-quarantine", "condition": XID, "reason": "RGpuXidCritical",
                      "cordoned": True, "since": "2026-11-28T12:00:00Z"}  # fmt: skip
    ours = {"key": QUARANTINE_TAINT, "value": "Xid79", "effect": "NoSchedule"}
    (r,) = decide([node("a", taints=(other, ours), record={"cordoned": False}), node("b")], CFG)
    assert patch(r, CFG, NOW)["spec"] == {"taints": [other]}
    (r2,) = decide([node("a", taints=(ours,), record={"cordoned": False}), node("b")], CFG)
    assert patch(r2, CFG, NOW)["spec"] == {"taints": None}  # the field removed, not an empty list


@pytest.mark.parametrize(
    ("reason", "value"),
    [
        pytest.param("Xid79", "Xid79", id="xid"),
        pytest.param("GpuCountBelowExpected", "GpuCountBelowExpected", id="count"),
        pytest.param("", XID, id="no-reason"),
        pytest.param("Xid 79: fallen off", XID, id="not-a-label-value"),
        pytest.param("x" * 64, XID, id="too-long"),
    ],
)
def test_taint_value_is_a_valid_label_value(reason: str, value: str) -> None:
    assert taint_value(XID, reason) == value


# ----------------------------------------------------------------------------------------------- configuration


GOOD = {"pool_label": "aicluster.io/pool", "pools": ["gpu"], "conditions": [XID], "taint_key": QUARANTINE_TAINT,
        "max_share": 0.5}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"max_share": 0}, "max_share", id="share-zero"),
        pytest.param({"max_share": 1.5}, "max_share", id="share-above-one"),
        pytest.param({"max_share": True}, "max_share", id="share-bool"),
        pytest.param({"pools": []}, "pools", id="no-pools"),
        pytest.param({"conditions": "GpuXidCritical"}, "conditions", id="conditions-not-a-list"),
        pytest.param({"taint_key": "gpu-unhealthy"}, "taint_key", id="taint-key-unprefixed"),
        pytest.param({"interval_s": 0}, "interval_s", id="interval-zero"),
        pytest.param({"dry_run": True}, "dry_run", id="unknown-setting"),
    ],
)
def test_bad_config_names_file_field_and_value_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], field: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GOOD | change))
    with pytest.raises(ConfigError, match=rf"config\.json: {field}: "):
        load_config(path)
    assert main(["--config", str(path), "--once", "--api", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert f"config.json: {field}: got" in err
    assert "Traceback" not in err


def test_missing_config_file_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "nope.json"), "--once", "--api", "http://127.0.0.1:9"]) == 2
    assert "cannot be read" in capsys.readouterr().err


# -------------------------------------------------------------------------- end to end, over HTTP, with the RBAC


@functools.cache
def eks_plan() -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), "eks-p5"))


def rendered() -> list[dict[str, Any]]:
    plan = eks_plan()
    assert plan.kubernetes is not None
    (addon,) = [a for a in plan.kubernetes.addons if a.id == QUARANTINE_ADDON]
    return quarantine_objects(plan, addon)


def rbac_rules(objs: list[dict[str, Any]]) -> list[Rule]:
    """The rules the rendered roles grant (each bound to the controller's ServiceAccount: checked in
    tests/schedulers/kubernetes/test_quarantine.py)."""
    out = []
    for obj in objs:
        if obj["kind"] in ("ClusterRole", "Role"):
            ns = obj["metadata"].get("namespace") if obj["kind"] == "Role" else None
            out += [Rule(ns, tuple(r["resources"]), tuple(r["verbs"])) for r in obj["rules"]]
    return out


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[FakeApi, Config, Path]:
    objs = rendered()
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap"]
    cfg_file = tmp_path / CONFIG_FILE
    cfg_file.write_text(cm["data"][CONFIG_FILE])
    cfg = load_config(cfg_file)
    api = FakeApi(rules=rbac_rules(objs))
    (pool,) = cfg.pools
    for i in range(4):
        api.add_node(f"gpu-{i}", pool)
    api.add_node("system-0", "system")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    return api, cfg, token


def taints(api: FakeApi, name: str) -> list[dict[str, Any]]:
    return list(api.nodes[name]["spec"].get("taints") or [])


def cordoned(api: FakeApi, name: str) -> bool:
    return bool(api.nodes[name]["spec"].get("unschedulable", False))


def test_end_to_end_quarantine_breaker_and_release(cluster: tuple[FakeApi, Config, Path]) -> None:
    api, cfg, token = cluster
    assert cfg.taint_key == QUARANTINE_TAINT
    with serve(api) as url:
        ctl = Controller(KubeApi(url, str(token), None), cfg)
        assert ctl.run_once(NOW) == []
        # an XID on gpu-0: tainted, cordoned, annotated, a Warning event in `default`
        api.set_condition("gpu-0", XID, "True", "Xid79")
        assert kinds(ctl.run_once(NOW)) == [("quarantine", "gpu-0")]
        assert taints(api, "gpu-0") == [{"key": QUARANTINE_TAINT, "value": "Xid79", "effect": "NoSchedule"}]
        assert cordoned(api, "gpu-0")
        assert json.loads(api.nodes["gpu-0"]["metadata"]["annotations"][ANNOTATION])["cordoned"] is True
        assert [(e["reason"], e["involvedObject"]["name"], e["type"]) for e in api.events] == [
            ("GpuQuarantined", "gpu-0", "Warning")
        ]
        # someone else cordons gpu-1 and taints it; then its GPU count drops
        other = {"key": "maintenance", "value": "disk", "effect": "NoSchedule"}
        api.edit("gpu-1", {"spec": {"unschedulable": True, "taints": [other]}})
        api.set_condition("gpu-1", COUNT, "True", "GpuCountBelowExpected")
        api.set_condition("gpu-2", XID, "True", "Xid48")
        # two of four GPU nodes at most: gpu-1 quarantined, gpu-2 only gets an event (once)
        assert kinds(ctl.run_once(NOW)) == [("quarantine", "gpu-1"), ("defer", "gpu-2")]
        assert taints(api, "gpu-1") == [other, {"key": QUARANTINE_TAINT, "value": "GpuCountBelowExpected",
                                                "effect": "NoSchedule"}]  # fmt: skip
        assert taints(api, "gpu-2") == []
        assert not cordoned(api, "gpu-2")
        assert kinds(ctl.run_once(NOW)) == [("defer", "gpu-2")]
        assert [e["reason"] for e in api.events].count("GpuQuarantineDeferred") == 1
        # gpu-0 comes back (NPD restarted after a reboot: condition False): released, which frees gpu-2's place
        api.set_condition("gpu-0", XID, "False", "NoCriticalXid")
        assert kinds(ctl.run_once(NOW)) == [("release", "gpu-0"), ("quarantine", "gpu-2")]
        assert taints(api, "gpu-0") == []
        assert not cordoned(api, "gpu-0")
        assert ANNOTATION not in api.nodes["gpu-0"]["metadata"].get("annotations", {})
        # gpu-1 recovers: our taint goes, someone else's taint and cordon stay
        api.set_condition("gpu-1", COUNT, "False", "GpuCountMatches")
        assert kinds(ctl.run_once(NOW)) == [("release", "gpu-1")]
        assert taints(api, "gpu-1") == [other]
        assert cordoned(api, "gpu-1")
        # the system node was never touched, and every call was authorised by the rendered RBAC
        assert api.nodes["system-0"]["spec"] == {}
        assert all(status < 400 for _, _, status in api.requests), api.requests


class RacingApi(KubeApi):
    """Someone else taints the node between the controller's list and its patch (once)."""

    def __init__(self, fake: FakeApi, *args: Any) -> None:
        super().__init__(*args)
        self.fake, self.raced = fake, False

    def patch_node(self, name: str, body: dict[str, Any]) -> None:
        if not self.raced:
            self.raced = True
            self.fake.edit(name, {"spec": {"taints": [{"key": "late", "effect": "NoSchedule"}]}})
        super().patch_node(name, body)


def test_a_node_changed_meanwhile_is_a_conflict_not_an_overwrite(cluster: tuple[FakeApi, Config, Path]) -> None:
    api, cfg, token = cluster
    api.set_condition("gpu-3", XID, "True", "Xid79")
    with serve(api) as url:
        ctl = Controller(RacingApi(api, url, str(token), None), cfg)
        assert ctl.run_once(NOW) == []  # 409: nothing written, nothing claimed
        assert taints(api, "gpu-3") == [{"key": "late", "effect": "NoSchedule"}]
        assert ("PATCH", "/api/v1/nodes/gpu-3", 409) in api.requests
        assert kinds(ctl.run_once(NOW)) == [("quarantine", "gpu-3")]  # the next pass reads it again
        assert [t["key"] for t in taints(api, "gpu-3")] == ["late", QUARANTINE_TAINT]


def test_without_the_rendered_rbac_the_api_refuses_and_nothing_changes(cluster: tuple[FakeApi, Config, Path]) -> None:
    api, cfg, token = cluster
    api.rules = [Rule(None, ("nodes",), ("list",)), Rule("default", ("events",), ("create",))]  # no patch
    api.set_condition("gpu-0", XID, "True", "Xid79")
    with serve(api) as url:
        assert Controller(KubeApi(url, str(token), None), cfg).run_once(NOW) == []
    assert ("PATCH", "/api/v1/nodes/gpu-0", 403) in api.requests
    assert taints(api, "gpu-0") == []


def test_the_shipped_configmap_runs_in_a_bare_interpreter(
    cluster: tuple[FakeApi, Config, Path], tmp_path: Path
) -> None:
    """The pod's layout: the ConfigMap's modules at aicluster/repair/*.py under the PYTHONPATH (namespace packages,
    no __init__), run with `python -S` (no site-packages: the standard library only, as in the stock image)."""
    api, _, token = cluster
    objs = rendered()
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap"]
    (deploy,) = [o for o in objs if o["kind"] == "Deployment"]
    pod = deploy["spec"]["template"]["spec"]
    (code,) = [v for v in pod["volumes"] if v["name"] == "code"]
    root = tmp_path / "opt"
    for item in code["configMap"]["items"]:
        (root / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (root / item["path"]).write_text(cm["data"][item["key"]])
    cfg_file = tmp_path / CONFIG_FILE
    cfg_file.write_text(cm["data"][CONFIG_FILE])
    (container,) = pod["containers"]
    module = container["command"][container["command"].index("-m") + 1]
    api.set_condition("gpu-2", XID, "True", "Xid119")
    with serve(api) as url:
        done = subprocess.run(
            [sys.executable, "-S", "-m", module, "--config", str(cfg_file), "--once", "--api", url,
             "--token-file", str(token)],
            cwd=tmp_path, env={"PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "node gpu-2: quarantine" in done.stderr
    assert taints(api, "gpu-2") == [{"key": QUARANTINE_TAINT, "value": "Xid119", "effect": "NoSchedule"}]
    assert cordoned(api, "gpu-2")


def _server_tls(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


def test_in_cluster_over_tls_with_the_service_accounts_token_and_ca(
    cluster: tuple[FakeApi, Config, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the pod: the API's address from KUBERNETES_SERVICE_HOST/PORT, HTTPS verified against the service
    account's ca.crt, its token as the bearer."""
    api, cfg, token = cluster
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    _, cert, key = certificates(sa)  # ca.crt stays where the pod has it
    (sa / "token").write_text(token.read_text())
    monkeypatch.setattr(quarantine, "SA_DIR", str(sa))
    api.set_condition("gpu-1", XID, "True", "Xid79")
    with serve(api, _server_tls(cert, key)) as url:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", url.rsplit(":", 1)[1])
        kube = KubeApi.in_cluster()
        assert kube.base == url.replace("http:", "https:")
        assert kinds(Controller(kube, cfg).run_once(NOW)) == [("quarantine", "gpu-1")]
    assert cordoned(api, "gpu-1")


def test_a_server_the_ca_did_not_sign_is_refused(cluster: tuple[FakeApi, Config, Path], tmp_path: Path) -> None:
    api, cfg, token = cluster
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    ca, _, _ = certificates(ours)
    _, cert, key = certificates(theirs)
    api.set_condition("gpu-1", XID, "True", "Xid79")
    with (
        serve(api, _server_tls(cert, key)) as url,
        pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        Controller(KubeApi(url, str(token), str(ca)), cfg).run_once(NOW)
    assert not cordoned(api, "gpu-1")
    assert api.requests == []  # the token never reached it


def test_outside_a_pod_without_api_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GOOD))
    assert main(["--config", str(path), "--once"]) == 2
    assert "KUBERNETES_SERVICE_HOST is not set" in capsys.readouterr().err
