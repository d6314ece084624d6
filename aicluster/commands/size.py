"""`aicluster size STACK [--json F]`: the stack's workloads sized on their pools.

Plans the stack (no Pulumi program) and prints, per workload, the chosen layout, memory per GPU by part, step time
by part, the run (tokens, steps, days, GPU-hours, cost, energy), failures and checkpoints, and the runners-up with
why they lost. `--json -` prints one JSON object {"stack", "cluster", "workloads": [...]} and nothing else;
`--json FILE` writes it atomically (the path is checked before any work).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.markup import escape
from rich.table import Table

from aicluster.sizing.models import Candidate, Layout, Memory, StepTime, WorkloadEstimate

NAME = "size"
HELP = "size the stack's workloads on their pools: layout, memory, step time, days, cost, checkpoints"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json",
        metavar="FILE",
        help='write {"stack", "cluster", "workloads": [...]} to FILE ("-": print only that JSON on stdout)',
    )


def document(stack: str, cluster: str, workloads: tuple[WorkloadEstimate, ...]) -> dict[str, Any]:
    """The JSON `--json` writes: the workloads as the preview JSON carries them."""
    return {"stack": stack, "cluster": cluster, "workloads": [w.model_dump(mode="json") for w in workloads]}


def run(args: argparse.Namespace) -> int:
    from aicluster.cli import EXIT_OK, _json_target, _print_warnings, _stack, out
    from aicluster.files import write_atomic
    from aicluster.preview import plan_stack

    target = _json_target(args.json)
    _, stack = _stack(args)
    plan = plan_stack(stack)
    data = json.dumps(document(stack.stack, plan.name, plan.workloads), indent=2) + "\n"
    if args.json == "-":
        sys.stdout.write(data)
        return EXIT_OK
    _print_warnings(plan)
    if not plan.workloads:
        pool = plan.pools[0].name if plan.pools else "POOL"
        example = (
            "  workloads:\n"
            "    - name: llama3-70b\n"
            f"      pools: [{pool}]\n"
            "      model: {parameters: 70B, sequence_length: 8192}\n"
            "      training: {tokens: 2T, global_batch_tokens: 16Mi}\n"
        )
        out.print(
            f"{escape(stack.source)}: no workloads. Add one under `workloads:` in the stack file, e.g.\n"
            + escape(example)
            + "(docs/sizing.md; the fields are in docs/spec-reference.md#workload)"
        )
    for w in plan.workloads:
        _print_workload(w)
    if target is not None:
        write_atomic(target, data, flag="--json")
        out.print(f"wrote {escape(str(target))}")
    return EXIT_OK


# -- text output ---------------------------------------------------------------------------------------------------


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


def _memory_table(mem: Memory) -> Table:
    t = Table(title="memory per GPU", title_justify="left", show_header=False, box=None, pad_edge=False)
    t.add_column(style="dim")
    t.add_column()
    for label, value in (
        ("parameters", mem.parameters),
        ("gradients", mem.gradients),
        ("optimizer", mem.optimizer),
        ("activations", mem.activations),
        ("overhead", mem.overhead),
    ):
        t.add_row(label, _gb(value))
    verdict = "[green]fits[/]" if mem.fits else "[red]does not fit[/]"
    t.add_row("total", f"{_gb(mem.total)} of {_gb(mem.capacity)} ({mem.total / mem.capacity:.0%}) {verdict}")
    return t


def _step_table(step: StepTime) -> Table:
    t = Table(title="step time", title_justify="left", show_header=False, box=None, pad_edge=False)
    t.add_column(style="dim")
    t.add_column()
    t.add_row("compute", f"{step.compute_s:,.2f} s at {step.utilisation_prior:.0%} utilisation")
    t.add_row("tensor parallel", f"{step.tensor_parallel_s:,.2f} s")
    t.add_row("data parallel", f"{step.data_parallel_s:,.2f} s")
    if step.expert_parallel_s:
        t.add_row("expert parallel", f"{step.expert_parallel_s:,.2f} s")
    t.add_row("pipeline bubble", f"{step.pipeline_bubble_s:,.2f} s")
    t.add_row("total", f"{step.total_s:,.2f} s: MFU {step.mfu:.1%}, {step.tflops_per_gpu:,.0f} TFLOP/s per GPU")
    return t


def _run_table(w: WorkloadEstimate) -> Table:
    t = Table(title="the run", title_justify="left", show_header=False, box=None, pad_edge=False)
    t.add_column(style="dim")
    t.add_column()
    t.add_row("tokens", f"{_count(w.tokens)} in {w.steps:,} steps of {_count(w.global_batch_tokens)} tokens")
    if w.days is not None:
        target = ""
        if w.target_days is not None:
            ok = w.days <= w.target_days
            target = f" ([{'green' if ok else 'red'}]target {w.target_days:g}[/])"
            if not ok and w.gpus_for_target_days:
                target += f"; {w.gpus_for_target_days:,} GPUs would meet it"
        t.add_row("days", f"{w.days:,.1f}{target}")
    if w.gpu_hours is not None:
        t.add_row("GPU-hours", f"{w.gpu_hours:,.0f}")
    t.add_row("cost", f"${w.cost_usd:,.0f}" if w.cost_usd is not None else "not priced")
    if w.energy_mwh is not None:
        t.add_row("energy", f"{w.energy_mwh:,.0f} MWh (facility)")
    rel = w.reliability
    if rel is not None:
        t.add_row(
            "failures",
            f"one per {rel.mtbf_h:,.1f} h ({rel.gpu_hours_per_interruption:,.0f} GPU-hours each): "
            f"{rel.interruptions:,.0f} over the run",
        )
        ckpt = _size(rel.checkpoint_bytes)
        if rel.write_s is not None and rel.interval_s is not None and rel.write_gb_s is not None:
            t.add_row(
                "checkpoint",
                f"{ckpt}, written in {_dur(rel.write_s)} at {rel.write_gb_s:,.0f} GB/s "
                f"({', '.join(escape(f) for f in rel.filesystems)}), every {_dur(rel.interval_s)}",
            )
        else:
            t.add_row("checkpoint", f"{ckpt}; no parallel file system on the pools' network to write it to")
        t.add_row("restart", _dur(rel.restart_s))
        if rel.goodput is not None:
            t.add_row("goodput", f"{rel.goodput:.1%}")
        t.add_row(
            "write GB/s needed",
            f"{rel.required_write_gb_s:,.{1 if rel.required_write_gb_s >= 10 else 2}f} GB/s keeps checkpoint "
            f"overhead under {rel.target_overhead:.0%}",
        )
    return t


def _runners_up(cands: tuple[Candidate, ...]) -> Table:
    t = Table(title="runners-up", title_justify="left", box=None, pad_edge=False)
    t.add_column("layout")
    t.add_column("memory", justify="right")
    t.add_column("why it lost")
    for c in cands:
        t.add_row(layout_text(c.layout), _gb(c.memory.total), escape(c.why))
    return t


def _print_workload(w: WorkloadEstimate) -> None:
    from aicluster.cli import out

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
        out.print(_memory_table(w.chosen.memory))
        if w.chosen.step is not None:
            out.print(_step_table(w.chosen.step))
        out.print(_run_table(w))
    if w.runners_up:
        out.print(_runners_up(w.runners_up))
    for note in w.notes:
        out.print(f"  [dim]note: {escape(note)}[/]")
