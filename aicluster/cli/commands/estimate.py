"""`aicluster estimate collective`: how long one NCCL collective takes on N nodes of a GPU instance type, as
nccl-tests would report it (algbw, busbw, time), from the collective model (aicluster.sizing.collective)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import get_args

from .. import options
from ..console import escape, out
from ..exits import EXIT_OK, UsageError
from ..inputs import json_target
from ..views.estimate import collective_table

NAME = "estimate"
HELP = "estimate what a workload needs from the cluster (collective: one NCCL collective's time and bandwidth)"
STACK = False

_UNITS: dict[str, int] = {
    "": 1,
    "B": 1,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "PiB": 2**50,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
}
# one rule: a number (digits, a decimal point, an exponent: 8, 1.5, 70e9) followed at once by a unit spelled as
# above (case matters: 8gib or "8 GiB" are refused, as B and b differ)
_SIZE = re.compile(r"^(\d+(?:\.\d+)?(?:[eE][+]?\d+)?)([A-Za-z]*)$")


def parse_bytes(text: str) -> int:
    """`8GiB`, `512MiB`, `1048576`, `1e9`, `1.5GB` -> bytes (argparse type: a bad value is one usage line, exit 2)."""
    from aicluster.sizing.collective import MAX_BYTES

    match = _SIZE.match(text)
    size: float | None = None
    if match is not None and match.group(2) in _UNITS:
        size = float(match.group(1)) * _UNITS[match.group(2)]
    if size is None or size != int(size) or not 1 <= size <= MAX_BYTES:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a whole number of bytes from 1 to 1 PiB (2^50) as a number and a unit, e.g. 8GiB, "
            "512MiB, 1e9 (units B, KiB, MiB, GiB, TiB, PiB, KB, MB, GB, TB, PB; no space)"
        )
    return int(size)


def _count(what: str, high: int | None, bound: str = "1 to the type's GPUs per node") -> Callable[[str], int]:
    """A whole number; `high` None: the range depends on the instance type (`bound` says it) and the model checks
    it."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
            ok = False
        else:
            ok = True
        if not ok or (high is not None and not 1 <= value <= high):
            limit = f"1 to {high:,}" if high is not None else bound
            raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of {what} from {limit}")
        return value

    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from aicluster.catalog.models import Provider
    from aicluster.sizing.collective import MAX_NODES, OPS

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
        type=_count("ranks per node", None),
        metavar="G",
        help="GPUs per node in the group (default: all); the node's other GPUs run groups of the same shape",
    )
    c.add_argument(
        "--nodes-per-domain",
        type=_count("nodes per NVLink domain", None, "1 to the nodes of one of the type's NVLink domains"),
        metavar="K",
        help="types sold in multi-node NVLink domains (GB200 NVL72: 18 nodes): the job's nodes in each domain, as "
        "Slurm's --segment (default: whole domains in order, the last one partial); the notes say what a split costs",
    )
    c.add_argument(
        "--provider",
        choices=get_args(Provider),
        help="the provider, where an instance type name exists for more than one",
    )
    options.add_json(c, "write the estimate as JSON to FILE ('-': stdout only)")


def run(args: argparse.Namespace) -> int:
    from aicluster.catalog import load_catalog
    from aicluster.files import write_atomic
    from aicluster.sizing.collective import CollectiveError, estimate_collective

    target = json_target(args.json, args.parents)
    try:
        estimate = estimate_collective(
            load_catalog(),
            args.instance_type,
            args.nodes,
            args.op,
            args.bytes,
            ranks_per_node=args.ranks_per_node,
            provider=args.provider,
            nodes_per_domain=args.nodes_per_domain,
        )
    except CollectiveError as exc:
        raise UsageError(str(exc)) from None
    data = json.dumps(estimate.model_dump(mode="json"), indent=2) + "\n"
    if args.json == "-":
        sys.stdout.write(data)
        return EXIT_OK
    out.print(collective_table(estimate))
    for note in estimate.notes:
        out.print(f"note: {escape(note)}")
    if target is not None:
        write_atomic(target, data, flag="--json", parents=args.parents)
        out.print(f"wrote {escape(str(target))}")
    return EXIT_OK
