"""`aicluster monitoring STACK -o DIR`: for every example stack the written Prometheus config, rules and rule tests
pass promtool (Debian's `prometheus` package), and bad input exits 2 writing nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.monitoring import groups, render
from aicluster.preview import plan_stack
from aicluster.stackfile import find_project
from aicluster.stackfile import read_stack as read_stack_file
from tests.conftest import ROOT, STACKS, run_cli
from tests.targets import system_tool

# Fields a health-oriented dcgm-exporter must export (operations fact sheet, section 8: off by default upstream).
HEALTH_FIELDS = (
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ROW_REMAP_PENDING",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_POWER_VIOLATION",
)


@pytest.fixture(scope="module")
def promtool() -> str:
    return system_tool("promtool", "prometheus")


def plan_of(stack: str):  # type: ignore[no-untyped-def]
    return plan_stack(read_stack_file(find_project(ROOT), stack, None))


def promtool_ok(promtool: str, cwd: Path, *args: str) -> str:
    proc = subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_passes_promtool(stack: str, tmp_path: Path, promtool: str) -> None:
    out = tmp_path / "mon"
    proc = run_cli("monitoring", stack, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    promtool_ok(promtool, out, "check", "config", "prometheus.yml")
    rule_files = sorted(str(p.relative_to(out)) for p in (out / "rules").glob("*.yml"))
    test_files = sorted(str(p.relative_to(out)) for p in (out / "tests").glob("*.yml"))
    assert rule_files
    assert [Path(t).name for t in test_files] == [Path(r).name for r in rule_files]
    promtool_ok(promtool, out, "check", "rules", *rule_files)
    tested = promtool_ok(promtool, out, "test", "rules", *test_files)
    assert tested.count("SUCCESS") == len(test_files)
    config = yaml.safe_load((out / "prometheus.yml").read_text())
    assert sorted(config["rule_files"]) == rule_files
    jobs = {j["job_name"] for j in config["scrape_configs"]}
    plan = plan_of(stack)
    assert "node" in jobs
    assert ("dcgm-exporter" in jobs) == any(p.accelerator_kind == "gpu" for p in plan.pools)
    # the Slurm exporter only where the stack installs one (monitoring.slurm_exporter; none by default)
    assert ("slurm" in jobs) == (plan.controller is not None and plan.monitoring.slurm_exporter != "none")
    assert ("rules/slurm.yml" in rule_files) == ("slurm" in jobs)


def test_a_broken_rule_fails_its_promtool_test(tmp_path: Path, promtool: str) -> None:
    """The tests are real: a rule whose threshold moves makes them fail."""
    out = tmp_path / "mon"
    assert run_cli("monitoring", "p5-small", "-o", str(out)).returncode == 0
    rules = out / "rules" / "fabric.yml"
    rules.write_text(rules.read_text().replace("> 120", "> 100000"))
    proc = subprocess.run(
        [promtool, "test", "rules", "tests/fabric.yml"], cwd=out, capture_output=True, text=True, check=False
    )
    assert proc.returncode != 0
    assert "InfinibandSymbolErrorsHigh" in proc.stdout + proc.stderr


@pytest.mark.parametrize("stack", ["p5-small", "eks-p5", "gcp-tpu-v5p", "mixed-spot"])
def test_every_alert_has_a_firing_and_a_quiet_case(stack: str, catalog: Catalog) -> None:
    for group in groups(plan_of(stack), catalog):
        rules = [r["alert"] for r in group.rules_doc()["groups"][0]["rules"]]  # type: ignore[index]
        cases: dict[str, list[int]] = {}
        for test in group.tests_doc()["tests"]:  # type: ignore[attr-defined]
            for check in test["alert_rule_test"]:
                cases.setdefault(check["alertname"], []).append(len(check["exp_alerts"]))
        assert set(cases) == set(rules), group.file
        for name, expected in cases.items():
            assert 0 in expected, f"{group.file}: {name} needs a quiet case"
            assert any(expected), f"{group.file}: {name} needs a firing case"
        for rule in group.rules_doc()["groups"][0]["rules"]:  # type: ignore[index]
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}
            assert rule["annotations"]["summary"]
            assert rule["annotations"]["description"]


def test_thresholds_and_metric_names_come_from_the_catalog(catalog: Catalog) -> None:
    mon = catalog.monitoring
    assert mon is not None
    files = render(plan_of("p5-small"), catalog)
    gpu, fabric, fs = files["rules/gpu.yml"], files["rules/fabric.yml"], files["rules/filesystem.yml"]
    for xid in mon.xid.fatal:
        assert f"DCGM_FI_DEV_XID_ERRORS == {xid}" in gpu
    assert f">= {mon.gpu_memory.uncorrectable_remapped_rows_warning}" in gpu
    assert "DCGM_FI_DEV_ROW_REMAP_PENDING > 0" in gpu
    assert "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0" in gpu
    assert f"node_infiniband_state_id != {mon.fabric.port_state_active}" in fabric
    assert f"[1h]) > {mon.fabric.symbol_errors_per_hour_max}" in fabric
    assert f"< {mon.filesystem.available_percent_critical:g}" in fs
    plan = plan_of("p5-small")
    pool = next(p for p in plan.pools if p.accelerator_kind == "gpu")
    assert f"+ {pool.accelerators_per_node})" in gpu  # GpuMissing expects the instance type's GPUs


def test_counters_csv_has_the_health_fields_in_dcgm_exporters_format(catalog: Catalog) -> None:
    csv = render(plan_of("p5-small"), catalog)["dcgm-exporter/counters.csv"]
    rows = [[c.strip() for c in line.split(",", 2)] for line in csv.splitlines() if line and not line.startswith("#")]
    assert all(len(r) == 3 and r[0].startswith("DCGM_FI_") and r[1] in {"gauge", "counter"} and r[2] for r in rows)
    names = [r[0] for r in rows]
    assert len(names) == len(set(names))
    assert set(HEALTH_FIELDS) <= set(names)


def test_targets_are_the_plans_node_names(catalog: Catalog) -> None:
    plan = plan_of("p5-small")
    files = render(plan, catalog)
    nodes = yaml.safe_load(files["targets/node.yml"])
    listed = {t.rsplit(":", 1)[0] for g in nodes for t in g["targets"]}
    assert listed == {n for p in plan.pools for n in p.node_names()} | {plan.controller_host()}
    assert not [path for path, text in files.items() if path.endswith(".yml") and "&id0" in text]  # no anchors
    assert "targets/slurm.yml" not in files  # no exporter chosen: nothing to scrape there


def with_slurm_exporter(stack: str, source: str):  # type: ignore[no-untyped-def]
    """The stack planned with monitoring.slurm_exporter set (through the planner, which decides the rule groups)."""
    from aicluster.catalog import load_catalog
    from aicluster.plan import plan
    from aicluster.spec.monitoring import Monitoring

    spec = plan_stack_spec(stack)
    changed = spec.monitoring.model_copy(update={"slurm_exporter": source})
    return plan(spec.model_copy(update={"monitoring": Monitoring.model_validate(changed.model_dump())}), load_catalog())


def plan_stack_spec(stack: str):  # type: ignore[no-untyped-def]
    from aicluster.spec import parse_cluster

    read = read_stack_file(find_project(ROOT), stack, None)
    return parse_cluster(read.config["aicluster:cluster"], stack)


def test_a_stack_without_a_slurm_exporter_neither_scrapes_nor_alerts_on_one(catalog: Catalog) -> None:
    plan = plan_of("p5-small")
    assert plan.monitoring.slurm_exporter == "none"  # the default: nothing installs it
    files = render(plan, catalog)
    assert [p for p in files if "slurm" in p and not p.startswith("dashboards/")] == []
    config = yaml.safe_load(files["prometheus.yml"])
    assert "slurm" not in {j["job_name"] for j in config["scrape_configs"]}
    assert not [a for g in groups(plan, catalog) for a in g.alerts if a.name == "SlurmExporterDown"]


@pytest.mark.parametrize("source", ["binary", "url", "container"])
def test_a_chosen_slurm_exporter_is_scraped_and_its_rules_pass_promtool(
    catalog: Catalog, tmp_path: Path, promtool: str, source: str
) -> None:
    plan = with_slurm_exporter("p5-small", source)
    files = render(plan, catalog)
    assert yaml.safe_load(files["targets/slurm.yml"])[0]["targets"] == [f"{plan.controller_host()}:9341"]
    config = yaml.safe_load(files["prometheus.yml"])
    assert "slurm" in {j["job_name"] for j in config["scrape_configs"]}
    assert "rules/slurm.yml" in config["rule_files"]
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    promtool_ok(promtool, tmp_path, "check", "config", "prometheus.yml")
    assert "SUCCESS" in promtool_ok(promtool, tmp_path, "test", "rules", "tests/slurm.yml")


def test_slurm_rules_and_dashboard_count_a_node_in_two_partitions_once(
    catalog: Catalog, tmp_path: Path, promtool: str
) -> None:
    """The exporter's slurm_nodes_<state> are per partition, so a hybrid stack's node (its pool's partition and
    `hybrid`) counted twice in their sum. The rules and the dashboard read the per-node slurm_node_status instead,
    grouped by node: the drained-node alert's test case is one node in two partitions, and it fires with a value
    of 1 (promtool checks the description, which shows the value)."""
    plan = with_slurm_exporter("p5-small", "binary")
    files = render(plan, catalog)
    (group,) = [g for g in groups(plan, catalog) if g.file == "slurm"]
    drained = next(a for a in group.alerts if a.name == "SlurmNodesDrained")
    node = plan.pools[0].node_names()[0]
    assert sorted(drained.fires.series) == [
        f'slurm_node_status{{job="slurm", instance="{plan.controller_host()}:9341", node="{node}", '
        f'partition="{p}", status="drained"}}'
        for p in sorted((plan.pools[0].name, "hybrid"))
    ]
    assert "has 1 node(s) drained" in str(drained.expected()["exp_annotations"])
    assert drained.expr == (
        'count by (job, instance) (group by (job, instance, node) (slurm_node_status{job="slurm", status=~"drain.*"}))'
    )
    # nothing reads the per-partition gauges any more
    assert "slurm_nodes_" not in files["rules/slurm.yml"] + files["dashboards/slurm.json"]
    board = json.loads(files["dashboards/slurm.json"])
    stats = {p["title"]: p["targets"][0]["expr"] for p in board["panels"] if p.get("type") == "stat"}
    assert stats["Nodes drain"] == (
        'count (group by (node) (slurm_node_status{job="slurm", status=~"drain.*"})) or vector(0)'
    )
    for rel in ("rules/slurm.yml", "tests/slurm.yml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(files[rel])
    assert "SUCCESS" in promtool_ok(promtool, tmp_path, "test", "rules", "tests/slurm.yml")


def test_a_kubernetes_stack_with_a_slurm_exporter_is_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.eks-p5.yaml").read_text(encoding="utf-8"))
    doc["config"]["aicluster:cluster"]["monitoring"] = {"slurm_exporter": "binary"}
    path = tmp_path / "Pulumi.eks-k.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = run_cli("monitoring", str(path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "monitoring.slurm_exporter" in proc.stderr
    assert "no Slurm controller" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_dashboards_are_grafana_json_with_the_stacks_uid(catalog: Catalog) -> None:
    files = render(plan_of("p5-small"), catalog)
    boards = {k: json.loads(v) for k, v in files.items() if k.startswith("dashboards/")}
    assert set(boards) == {"dashboards/gpu.json", "dashboards/fabric.json", "dashboards/slurm.json"}
    for board in boards.values():
        assert board["uid"].startswith(plan_of("p5-small").name)
        assert board["panels"]
        assert {v["name"] for v in board["templating"]["list"]} == {"datasource", "pool", "node"}
        exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
        assert exprs
        assert all(e.strip() for e in exprs)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        pytest.param("file", "-o {out}: exists and is not a directory", id="a-file"),
        pytest.param("foreign", "-o {out}: a non-empty directory aicluster did not write", id="a-foreign-directory"),
    ],
)
def test_bad_output_exits_2_and_writes_nothing(tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    before = sorted(tmp_path.rglob("*"))
    out = tmp_path / target
    proc = run_cli("monitoring", "p5-small", "-o", str(out))
    assert proc.returncode == 2
    assert message.format(out=out) in " ".join(proc.stderr.split())
    assert proc.stderr.count("error:") == 1
    assert "Traceback" not in proc.stderr
    assert sorted(tmp_path.rglob("*")) == before


def test_a_missing_stack_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    proc = run_cli("monitoring", "no-such-stack", "-o", str(tmp_path / "mon"))
    assert proc.returncode == 2
    assert 'stack "no-such-stack" not found' in proc.stderr
    assert not (tmp_path / "mon").exists()


def test_a_second_run_rewrites_its_own_directory(tmp_path: Path) -> None:
    out = tmp_path / "mon"
    assert run_cli("monitoring", "p5-small", "-o", str(out)).returncode == 0
    first = {p: p.read_text() for p in out.rglob("*.yml")}
    assert run_cli("monitoring", "p5-small", "-o", str(out)).returncode == 0
    assert {p: p.read_text() for p in out.rglob("*.yml")} == first


def test_monitoring_and_inventory_never_take_each_others_directory(tmp_path: Path) -> None:
    mon, inv = tmp_path / "mon", tmp_path / "inv"
    assert run_cli("monitoring", "p5-small", "-o", str(mon)).returncode == 0
    assert (mon / "prometheus.yml").stat().st_mode & 0o777 == 0o644  # Prometheus reads it as its own user
    before = sorted(mon.rglob("*"))
    proc = run_cli("inventory", "p5-small", "--out", str(mon))
    assert proc.returncode == 2
    assert "aicluster did not write" in proc.stderr
    assert sorted(mon.rglob("*")) == before
    assert run_cli("inventory", "p5-small", "--out", str(inv)).returncode == 0
    proc = run_cli("monitoring", "p5-small", "-o", str(inv))
    assert proc.returncode == 2
    assert "no .aicluster-monitoring.json in it" in proc.stderr
    assert not (inv / "prometheus.yml").exists()
