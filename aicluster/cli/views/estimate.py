"""One NCCL collective's estimate, as `aicluster estimate collective` prints it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from aicluster.sizing.models import CollectiveEstimate


def collective_table(e: CollectiveEstimate) -> Table:
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
        ("sources", "\n".join(e.sources) or "none"),
    ]
    for label, value in rows:
        t.add_row(label, escape(value))
    return t
