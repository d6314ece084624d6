"""The Slurm exporter the slurm_exporter role installs (SckyzO/slurm_exporter at the catalog's release, built from
tests/data with Debian's Go: tests/targets.py) run against a real slurmctld (Debian's 22.05, the p5-small plan that
tests/integration/test_slurmctld.py starts) with the arguments the inventory hands the role. It must export every
metric our Slurm alert rules read, count a drained node in the node-state gauges, and its scraped series must make
the drained-node alert fire under promtool (and the down-node alert stay quiet). With the hybrid site (every node in
its pool's partition and in `hybrid`) the drained node is in two partitions: the exporter's per-partition gauges
count it twice, and the rules and dashboard, which count from its per-node gauge, once."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from aicluster.catalog import load_catalog
from aicluster.monitoring import render
from aicluster.monitoring.rules import SLURM_JOB, Case, Group, monitoring_data, slurm_group
from aicluster.monitoring.scrape import slurm_exporter_args
from aicluster.plan import ClusterPlan
from tests.helpers import hybrid_site_cluster, plan_of
from tests.integration.test_slurmctld import HYBRID_SITE, Controller, controller, free_port
from tests.monitoring.test_monitoring import promtool, promtool_ok, with_slurm_exporter
from tests.targets import SLURM_EXPORTER_SOURCE, slurm_exporter_binary

pytestmark = pytest.mark.slow
__all__ = ["controller", "promtool"]  # the fixtures, imported for use here

STACK = "p5-small"
START_TIMEOUT_S = 10.0
REASON = "aicluster test: drained"
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@pytest.fixture(scope="session")
def exporter() -> Path:
    """The exporter's binary, built once per source (tests/targets.py)."""
    return slurm_exporter_binary()


@dataclasses.dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def samples(text: str) -> list[Sample]:
    """The samples of a Prometheus text exposition (no comments)."""
    found = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m is not None, line
        found.append(Sample(m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return found


@pytest.fixture
def scraped(controller: Controller, exporter: Path, tmp_path: Path) -> Iterator[tuple[Controller, str]]:
    """/metrics of the exporter, started as the role's unit starts it (the inventory's arguments, on a free port),
    after one of the plan's nodes was drained."""
    ctl = controller
    node = drained_node(ctl.plan)
    ctl.run("scontrol", "update", f"nodename={node}", "state=DRAIN", f"reason={REASON}")
    port = free_port()
    args = slurm_exporter_args(monitoring_data(load_catalog()), port)
    log = tmp_path / "slurm_exporter.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(exporter), *args], env=ctl.env, stdout=out, stderr=subprocess.STDOUT)
    try:
        t0 = time.monotonic()
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() - t0 > START_TIMEOUT_S:
                    pytest.fail(f"the exporter did not answer (exit {proc.poll()}):\n{log.read_text()}")
                time.sleep(0.1)
        (tmp_path / "metrics.txt").write_text(text)
        yield ctl, text
    finally:
        proc.kill()  # 1.8.4 ignores SIGTERM and SIGINT (the unit's TimeoutStopSec says why)
        proc.wait()


def drained_node(plan: ClusterPlan) -> str:
    """The node the test drains: a cloud pool's second (a hybrid stack's cloud nodes are in their pool's partition and
    in `hybrid`; its owned ones wait for a slurmd this machine does not run)."""
    return next(p for p in plan.pools if p.onprem is None).node_names()[1]


def with_exporter(ctl: Controller) -> ClusterPlan:
    """The controller's stack planned again with a Slurm exporter chosen (through the planner, which decides the
    rule groups and so the rules and dashboards that read it)."""
    if ctl.plan.name == plan_of(load_catalog(), hybrid_site_cluster()).name:
        plan = plan_of(load_catalog(), {**hybrid_site_cluster(), "monitoring": {"slurm_exporter": "binary"}})
    else:
        plan = with_slurm_exporter(STACK, "binary")
    assert plan.name == ctl.plan.name
    return plan  # type: ignore[no-any-return]


def test_the_vendored_source_is_the_catalogs_release(exporter: Path) -> None:
    release = monitoring_data(load_catalog()).slurm_exporter
    assert (SLURM_EXPORTER_SOURCE / "VERSION").read_text().strip() == release.version
    out = subprocess.run([str(exporter), "--version"], capture_output=True, text=True, check=True)
    assert f"slurm_exporter, version {release.version} " in out.stdout + out.stderr
    # every flag the role's unit passes is one the exporter has (kingpin refuses unknown flags)
    usage = subprocess.run([str(exporter), "--help"], capture_output=True, text=True, check=True)
    for arg in slurm_exporter_args(monitoring_data(load_catalog())):
        flag = arg.split("=", 1)[0].replace("--no-collector.", "--collector.")
        assert re.search(rf"^\s+{re.escape(flag)}[ =\n]", usage.stdout + usage.stderr, re.M), flag
    for name in release.collectors:
        assert re.search(rf"--collector\.{name}\s", usage.stdout + usage.stderr), name


@pytest.mark.parametrize("controller", [STACK, HYBRID_SITE], indirect=True)
def test_the_exporter_reports_what_our_slurm_rules_read_from_a_real_slurmctld(
    scraped: tuple[Controller, str], promtool: str, tmp_path: Path
) -> None:
    ctl, text = scraped
    found = samples(text)
    names = {s.name for s in found}
    catalog = load_catalog()
    mon = monitoring_data(catalog)
    release = mon.slurm_exporter

    # every collector the unit leaves on ran its commands against this slurmctld without an error
    status = {s.labels["collector"]: s.value for s in found if s.name == "slurm_exporter_collector_success"}
    assert {"nodes", "node", "drain_reason"} <= set(status)
    assert not set(release.needs_slurmdbd) & set(status)  # off: no slurmdbd
    assert {c: v for c, v in status.items() if v != 1} == {}

    # every metric the Slurm alert rules read is exported (`up` is Prometheus's own)
    node = drained_node(ctl.plan)
    pool = next(p for p in ctl.plan.pools if node in p.node_names())
    group = slurm_group(ctl.plan.controller_host(), node, (pool.name,), mon)
    metric = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{")
    read = {m for a in group.alerts for m in metric.findall(a.expr)} - {"up"}
    assert read == {release.node_metric}
    assert read <= names, sorted(read - names)

    # and so is every one the Slurm dashboard shows
    files = render(with_exporter(ctl), catalog)
    board = json.loads(files["dashboards/slurm.json"])
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    shown = {m for e in exprs for m in metric.findall(e)}
    assert shown == {release.node_metric}
    assert shown <= names, sorted(shown - names)

    # the drained node is in every partition slurmctld lists it in (two with the hybrid site: its pool's and
    # `hybrid`): the exporter's per-partition gauges count it once in each, its per-node gauge has one series each
    partitions = {r["PartitionName"] for r in ctl.records("partition") if node in ctl.hostnames(r["Nodes"])}
    assert len(partitions) == (2 if ctl.plan.sites else 1)
    drain = [s for s in found if s.name == "slurm_nodes_drain"]
    assert {s.labels["partition"] for s in drain if s.value > 0} == partitions
    assert sum(s.value for s in drain) == len(partitions)  # what `sum(slurm_nodes_drain)` showed: 2 for 1 node
    per_node = [s for s in found if s.name == release.node_metric and s.labels["node"] == node]
    assert {s.labels["partition"] for s in per_node} == partitions
    assert {s.labels["status"] for s in per_node} <= {"drained", "drained~", "drained*", "draining"}
    assert all(re.fullmatch(release.node_states["drain"], s.labels["status"]) for s in per_node)
    # every node of the plan has a status, and only the drained one a drain status
    statuses = {s.labels["node"]: s.labels["status"] for s in found if s.name == release.node_metric}
    assert set(statuses) == {n for p in ctl.plan.pools for n in p.node_names()}
    assert [n for n, v in statuses.items() if re.fullmatch(release.node_states["drain"], v)] == [node]
    assert not [n for n, v in statuses.items() if re.fullmatch(release.node_states["down"], v)]
    assert sum(s.value for s in found if s.name == "slurm_nodes_down") == 0
    reasons = {s.labels["node"]: s.labels["reason"] for s in found if s.name == "slurm_node_drain_reason_info"}
    assert reasons == {node: REASON}

    # Prometheus parses the exposition (promtool lints upstream's gauge names ending _total: exit 3, not 1)
    check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert check.returncode in (0, 3), check.stdout + check.stderr
    assert not [line for line in (check.stdout + check.stderr).splitlines() if any(m in line for m in read)]

    # the scraped series, as Prometheus would store them, fire SlurmNodesDrained with a value of 1 (one node, in
    # however many partitions) and leave SlurmNodesDown quiet: the rule file `aicluster monitoring` writes, with
    # promtool test cases made of what was scraped
    instance = {"job": SLURM_JOB, "instance": f"{ctl.plan.controller_host()}:{mon.exporters.slurm_exporter_port}"}
    scraped_series = {
        release.node_metric
        + "{"
        + ", ".join(f'{k}="{v}"' for k, v in {**s.labels, **instance}.items())
        + "}": f"{s.value:g}+0x30"
        for s in found
        if s.name == release.node_metric
    }
    drained = next(a for a in group.alerts if a.name == "SlurmNodesDrained")
    down = next(a for a in group.alerts if a.name == "SlurmNodesDown")
    alerts = (
        dataclasses.replace(drained, fires=Case(scraped_series, drained.fires.at), fired_labels=instance, value="1"),
        dataclasses.replace(down, quiet=Case(scraped_series, down.quiet.at)),
    )
    scraped_group = Group(group.file, group.name, alerts)
    (tmp_path / "rules").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "rules" / "slurm.yml").write_text(files["rules/slurm.yml"])
    (tmp_path / "tests" / "slurm.yml").write_text(yaml.safe_dump(scraped_group.tests_doc(), sort_keys=False))
    assert yaml.safe_load(files["rules/slurm.yml"]) == group.rules_doc()
    assert "SUCCESS" in promtool_ok(promtool, tmp_path, "test", "rules", "tests/slurm.yml")
