"""A stack's workloads as `aicluster size` prints them: layout, memory per GPU, step time, the run, failures and
checkpoints, and the runners-up with why they lost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from ..console import out

if TYPE_CHECKING:
    from aicluster.sizing.models import Candidate, Layout, Memory, StepTime, WorkloadEstimate


def _gb(x: float) -> str:
    return f"{x / 1e9:,.1f} GB" if x >= 1e9 or x == 0 else f"{x / 1e6:,.0f} MB"


def _size(x: float) -> str:
    return f"{x / 1e12:,.2f} TB" if x >= 1e12 else _gb(x)


def _dur(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.1f} min"
    return f"{seconds / 3600:,.1f} h"


def _count(x: float) -> str:
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if x >= div:
            return f"{x / div:,.3g}{unit}"
    return f"{x:,.0f}"


def layout_text(lay: Layout) -> str:
    ep = f" x EP{lay.expert_parallel}" if lay.expert_parallel > 1 else ""
    vp = f" (interleaved, {lay.virtual_stages} virtual stages)" if lay.virtual_stages > 1 else ""
    return (
        f"TP{lay.tensor_parallel} x PP{lay.pipeline_parallel}{vp} x DP{lay.data_parallel}{ep} = {lay.gpus:,} GPUs, "
        f"ZeRO-{lay.zero_stage}, recompute {lay.recompute}, micro-batch {lay.micro_batch} x {lay.micro_batches}"
    )


def _block(title: str, rows: list[tuple[str, str]]) -> list[str]:
    """A titled block of label/value lines, labels padded to one width, no trailing spaces (values may hold rich
    markup; labels are plain)."""
    width = max(len(label) for label, _ in rows)
    return [title] + [f"  [dim]{label}[/]{' ' * (width - len(label) + 2)}{value}".rstrip() for label, value in rows]


def _memory_rows(mem: Memory) -> list[tuple[str, str]]:
    rows = [
        (label, _gb(value))
        for label, value in (
            ("parameters", mem.parameters),
            ("gradients", mem.gradients),
            ("optimizer", mem.optimizer),
            ("activations", mem.activations),
            ("overhead", mem.overhead),
        )
    ]
    verdict = "[green]fits[/]" if mem.fits else "[red]does not fit[/]"
    capacity = f"{_gb(mem.capacity)} ({mem.capacity / 2**30:,.1f} GiB)"
    rows.append(("total", f"{_gb(mem.total)} of {capacity} ({mem.total / mem.capacity:.0%}) {verdict}"))
    return rows


def step_rows(step: StepTime) -> list[tuple[str, str]]:
    rows = [
        ("compute", f"{step.compute_s:,.2f} s at {step.utilisation_prior:.0%} utilisation"),
        ("tensor parallel", f"{step.tensor_parallel_s:,.2f} s"),
        ("data parallel", f"{step.data_parallel_s:,.2f} s"),
    ]
    if step.expert_parallel_s > 0:
        rows.append(("expert parallel", f"{step.expert_parallel_s:,.2f} s"))
    rows.append(("pipeline bubble", f"{step.pipeline_bubble_s:,.2f} s"))
    rows.append(("total", f"{step.total_s:,.2f} s: MFU {step.mfu:.1%}, {step.tflops_per_gpu:,.0f} TFLOP/s per GPU"))
    return rows


def _days_text(w: WorkloadEstimate) -> str:
    assert w.days is not None
    text = f"{w.days:,.1f}"
    rel = w.reliability
    if w.compute_days is not None and rel is not None and rel.goodput is not None:
        text += f" wall-clock ({w.compute_days:,.1f} failure-free at goodput {rel.goodput:.1%})"
    elif w.compute_days is not None:
        text += " failure-free (failures left out: no parallel file system)"
    if w.target_days is not None:
        ok = w.days <= w.target_days
        text += f" ([{'green' if ok else 'red'}]target {w.target_days:g}[/])"
        if not ok and w.gpus_for_target_days:
            text += f"; {w.gpus_for_target_days:,} GPUs would meet it"
    return text


def _run_rows(w: WorkloadEstimate) -> list[tuple[str, str]]:
    rows = [("tokens", f"{_count(w.tokens)} in {w.steps:,} steps of {_count(w.global_batch_tokens)} tokens")]
    if w.days is not None:
        rows.append(("days", _days_text(w)))
    if w.gpu_hours is not None:
        rows.append(("GPU-hours", f"{w.gpu_hours:,.0f}"))
    rows.append(("cost", f"${w.cost_usd:,.0f}" if w.cost_usd is not None else "not priced"))
    if w.energy_mwh is not None:
        rows.append(("energy", f"{w.energy_mwh:,.0f} MWh (facility)"))
    rel = w.reliability
    if rel is not None:
        rows.append(
            (
                "failures",
                f"one per {rel.mtbf_h:,.1f} h ({rel.gpu_hours_per_interruption:,.0f} GPU-hours each): "
                f"{rel.interruptions:,.0f} over the run",
            )
        )
        ckpt = _size(rel.checkpoint_bytes)
        if rel.write_s is not None and rel.interval_s is not None and rel.write_gb_s is not None:
            rows.append(
                (
                    "checkpoint",
                    f"{ckpt}, written in {_dur(rel.write_s)} at {rel.write_gb_s:,.0f} GB/s "
                    f"({', '.join(escape(f) for f in rel.filesystems)}), every {_dur(rel.interval_s)}",
                )
            )
        else:
            rows.append(("checkpoint", f"{ckpt}; no parallel file system on the pools' network to write it to"))
        rows.append(("restart", _dur(rel.restart_s)))
        if rel.goodput is not None:
            rows.append(("goodput", f"{rel.goodput:.1%}"))
        rows.append(
            (
                "write GB/s needed",
                f"{rel.required_write_gb_s:,.{1 if rel.required_write_gb_s >= 10 else 2}f} GB/s keeps checkpoint "
                f"overhead under {rel.target_overhead:.0%}",
            )
        )
    return rows


def _runners_up(cands: tuple[Candidate, ...]) -> list[str]:
    rows = [("layout", "memory", "why it lost")] + [(layout_text(c.layout), _gb(c.memory.total), c.why) for c in cands]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = ["runners-up"]
    for i, (lay, mem, why) in enumerate(rows):
        line = f"  {escape(lay)}{' ' * (w0 - len(lay))}  {' ' * (w1 - len(mem))}{mem}  {escape(why)}".rstrip()
        lines.append(f"[dim]{line}[/]" if i == 0 else line)
    return lines


def print_workload(w: WorkloadEstimate) -> None:
    pools = ", ".join(w.pools)
    out.print(
        f"\n[bold]{escape(w.name)}[/]: {_count(w.parameters)} parameters"
        + (f" ({_count(w.active_parameters)} active)" if w.active_parameters < w.parameters else "")
        + f", sequence {w.sequence_length:,}, on {escape(pools)} ({w.gpus_available:,} x {escape(w.accelerator)}, "
        f"{escape(w.provider)} {escape(w.instance_type)})"
    )
    if w.chosen is None:
        out.print(f"  [red]no layout fits[/]: {escape(w.reason or '')}")
    else:
        out.print(f"  layout: {layout_text(w.chosen.layout)}")
        lines = _block("memory per GPU", _memory_rows(w.chosen.memory))
        if w.chosen.step is not None:
            lines += _block("step time", step_rows(w.chosen.step))
        lines += _block("the run", _run_rows(w))
        out.print("\n".join(lines))
    if w.runners_up:
        out.print("\n".join(_runners_up(w.runners_up)))
    for note in w.notes:
        out.print(f"  [dim]note: {escape(note)}[/]")
