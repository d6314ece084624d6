"""`aicluster estimate collective`: how long one NCCL collective takes on N nodes of a GPU instance type, as
nccl-tests would report it (algbw, busbw, time), from the collective model (aicluster.sizing.collective)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import get_args

from rich.markup import escape
from rich.table import Table

from aicluster.catalog import load_catalog
from aicluster.catalog.models import Provider
from aicluster.cli import UsageError, out
from aicluster.files import check_target, write_atomic
from aicluster.sizing.collective import MAX_BYTES, MAX_NODES, OPS, CollectiveError, estimate_collective
from aicluster.sizing.models import CollectiveEstimate

NAME = "estimate"
HELP = "estimate what a workload needs from the cluster (collective: one NCCL collective's time and bandwidth)"
STACK = False

_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_bytes(text: str) -> int:
    """`8GiB`, `512MiB`, `1048576`, `1.5GB` -> bytes (argparse type: a bad value is one usage line, exit 2)."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a size such as 8GiB, 512MiB, 1048576 (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
        )
    value = float(match.group(1)) * _UNITS[unit]
    if value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r}: not a whole number of bytes")
    size = int(value)
    if not 1 <= size <= MAX_BYTES:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 byte to 1 PiB (2^50 bytes)")
    return size


def _count(what: str, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of {what}") from None
        if not 1 <= value <= high:
            raise argparse.ArgumentTypeError(f"{value}: give 1 to {high:,} {what}")
        return value

    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="estimate", required=True, metavar="WHAT", parser_class=type(p))
    help_ = (
        "one NCCL collective on N nodes of a GPU instance type: algorithm, algbw, busbw (as nccl-tests defines "
        "them) and time, from published nccl-tests results"
    )
    c = sub.add_parser("collective", help=help_, description=help_)
    c.add_argument("--instance-type", required=True, metavar="TYPE", help="a GPU instance type (e.g. p5.48xlarge)")
    c.add_argument(
        "--nodes",
        required=True,
        type=_count("nodes", MAX_NODES),
        metavar="N",
        help="nodes (1: one node, NVLink only)",
    )
    c.add_argument("--op", required=True, choices=OPS, help="the collective")
    c.add_argument(
        "--bytes",
        required=True,
        type=parse_bytes,
        metavar="SIZE",
        help="the whole array, as nccl-tests' size column: bytes or KiB/MiB/GiB/TiB (binary), KB/MB/GB/TB "
        "(decimal), e.g. 8GiB",
    )
    c.add_argument(
        "--ranks-per-node",
        type=_count("ranks per node", 1024),
        metavar="G",
        help="GPUs per node in the group (default: all); the node's other GPUs run groups of the same shape",
    )
    c.add_argument(
        "--provider",
        choices=get_args(Provider),
        help="the provider, where an instance type name exists for more than one",
    )
    c.add_argument("--json", metavar="FILE", help="write the estimate as JSON to FILE ('-': stdout only)")


def _table(e: CollectiveEstimate) -> Table:
    t = Table(title=f"{e.op} of {e.bytes:,} bytes on {e.nodes} x {e.instance_type} ({e.provider})")
    t.add_column("figure")
    t.add_column("value", justify="right")
    rows = [
        ("ranks", f"{e.gpus:,} ({e.nodes:,} nodes x {e.gpus_per_node})"),
        ("algorithm", e.algorithm),
        ("bottleneck", e.bottleneck),
        ("time", f"{e.time_s * 1e3:,.3f} ms"),
        ("algbw", f"{e.algbw_gb_s:,.2f} GB/s"),
        ("busbw", f"{e.busbw_gb_s:,.2f} GB/s"),
        ("busbw ceiling", f"{e.bandwidth_gb_s:,.2f} GB/s"),
        ("latency", f"{e.latency_s * 1e6:,.1f} us"),
        ("sources", ", ".join(e.sources)),
    ]
    for label, value in rows:
        t.add_row(label, escape(value))
    return t


def run(args: argparse.Namespace) -> int:
    target = check_target(args.json, "--json") if args.json not in (None, "-") else None
    try:
        estimate = estimate_collective(
            load_catalog(),
            args.instance_type,
            args.nodes,
            args.op,
            args.bytes,
            ranks_per_node=args.ranks_per_node,
            provider=args.provider,
        )
    except CollectiveError as exc:
        raise UsageError(str(exc)) from None
    data = json.dumps(estimate.model_dump(mode="json"), indent=2) + "\n"
    if args.json == "-":
        sys.stdout.write(data)
        return 0
    out.print(_table(estimate))
    for note in estimate.notes:
        out.print(f"note: {escape(note)}")
    if target is not None:
        write_atomic(target, data, flag="--json")
        out.print(f"wrote {escape(str(target))}")
    return 0
