"""Filters that read nccl-tests output (all_reduce_perf and friends).

`nccl_all_reduce_summary(stdout)` -> {"busbw_gb_s", "algbw_gb_s", "size_bytes", "avg_busbw_gb_s",
"rows", "wrong"}: the out-of-place bus bandwidth at the largest message size (the fabric figure) and
the run's own "Avg bus bandwidth" line. Raises on output with no result rows, so a crashed or
misconfigured run never passes the gate as 0 GB/s silently.

`nccl_acceptance_report(results)` -> one line per host pair, worst first.
"""

from __future__ import annotations

import re
from typing import Any

# size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
_ROW = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?:(?P<root>-?\d+)\s+)?"
    r"(?P<time>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)\s+(?P<wrong>\S+)"
    r"(?:\s+(?P<ip_time>[\d.]+)\s+(?P<ip_algbw>[\d.]+)\s+(?P<ip_busbw>[\d.]+)\s+(?P<ip_wrong>\S+))?\s*$"
)
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<avg>[\d.]+)")


class NcclOutputError(ValueError):
    """The text is not all_reduce_perf output with at least one result row."""


def parse_rows(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        m = _ROW.match(line)
        if m is None:
            continue
        wrong = [w for w in (m["wrong"], m["ip_wrong"]) if w is not None and w.isdigit()]
        rows.append(
            {
                "size_bytes": int(m["size"]),
                "algbw_gb_s": float(m["algbw"]),
                "busbw_gb_s": float(m["busbw"]),
                "in_place_busbw_gb_s": float(m["ip_busbw"]) if m["ip_busbw"] else None,
                "wrong": sum(int(w) for w in wrong),
            }
        )
    return rows


def nccl_all_reduce_summary(text: str) -> dict[str, Any]:
    rows = parse_rows(text)
    if not rows:
        first = next((line for line in text.splitlines() if line.strip()), "")
        raise NcclOutputError(f"no all_reduce_perf result rows in the output (first line: {first[:120]!r})")
    largest = max(rows, key=lambda r: r["size_bytes"])
    avg = next((float(m["avg"]) for line in text.splitlines() if (m := _AVG.match(line.strip()))), None)
    return {
        "busbw_gb_s": largest["busbw_gb_s"],
        "algbw_gb_s": largest["algbw_gb_s"],
        "size_bytes": largest["size_bytes"],
        "avg_busbw_gb_s": avg,
        "rows": len(rows),
        "wrong": sum(r["wrong"] for r in rows),
    }


def nccl_acceptance_report(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in sorted(results, key=lambda r: r["busbw_gb_s"] / (r["threshold_gb_s"] or 1)):
        verdict = "ok" if r["busbw_gb_s"] >= r["threshold_gb_s"] and not r.get("wrong") else "FAIL"
        lines.append(
            f"{verdict:4} {r['pair']}: busbw {r['busbw_gb_s']:.1f} GB/s at {r['size_bytes']} B"
            f" (expected {r['expected_gb_s']:.1f}, threshold {r['threshold_gb_s']:.1f}, wrong {r.get('wrong', 0)})"
        )
    return lines


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "nccl_all_reduce_summary": nccl_all_reduce_summary,
            "nccl_acceptance_report": nccl_acceptance_report,
        }
