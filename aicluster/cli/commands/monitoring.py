"""`aicluster monitoring STACK -o DIR`: Prometheus config, alert rules and their promtool tests, dcgm-exporter's
counters and Grafana dashboards for the stack (aicluster/monitoring)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import options
from ..console import escape, out
from ..exits import EXIT_OK, UsageError
from ..inputs import read_stack

NAME = "monitoring"
HELP = (
    "write Prometheus scrape configs, alert rules with promtool tests, Alertmanager routing, dcgm-exporter counters "
    "and Grafana dashboards"
)
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_output(
        p, "the directory to write: new, empty, or one aicluster monitoring wrote", required=True, metavar="DIR"
    )


def run(args: argparse.Namespace) -> int:
    from aicluster import inventory as written
    from aicluster.catalog import load_catalog
    from aicluster.monitoring import render
    from aicluster.preview import plan_stack

    _, stack = read_stack(args)
    plan = plan_stack(stack)
    files = render(plan, load_catalog())
    shown = str(args.output)
    try:
        kind = written.OutputKind(
            marker=".aicluster-monitoring.json",
            lock=".aicluster-monitoring.lock",
            flag="-o",
            example=f".work/{stack.stack}/monitoring",
            file_mode=0o644,  # no secret in it: Prometheus and Grafana read these files as their own users
            dir_mode=0o755,
        )
        result = written.write(Path(args.output), files, {}, shown=shown, kind=kind)
    except written.InventoryDirError as exc:
        raise UsageError(f"-o {exc}") from None
    rules = sum(1 for f in result.files if f.startswith("rules/"))
    routing = "alertmanager.yml" in files
    out.print(
        f"wrote {len(result.files)} files to {escape(shown)}: prometheus.yml, "
        + ("alertmanager.yml, " if routing else "")
        + f"{rules} rule file(s) with their tests, dcgm-exporter/counters.csv and dashboards/; check them with "
        "`promtool check config prometheus.yml`"
        + (", `amtool check-config alertmanager.yml`" if routing else "")
        + " and `promtool test rules tests/*.yml`"
    )
    return EXIT_OK
