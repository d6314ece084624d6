"""What the programs ask of Slurm, through `scontrol` (the interface Slurm documents for ResumeProgram)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# Slurm refuses a reason with a newline; keep it one short line.
MAX_REASON = 200


class SlurmError(Exception):
    """scontrol failed: the message has its command and output."""


class Slurm(Protocol):
    def hostnames(self, expression: str) -> list[str]: ...
    def update(self, nodes: Sequence[str], **fields: str) -> None: ...
    def nodes(self, expression: str) -> list[dict[str, str]]: ...


def one_line(text: str) -> str:
    """A reason Slurm accepts: one line, no '=' confusion for `scontrol -o`, at most MAX_REASON characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


@dataclass
class Scontrol:
    """The real thing. `program` is a path or a name; slurmctld runs its power programs with no PATH."""

    program: str = "scontrol"
    timeout_s: float = 30.0

    def _exe(self) -> str:
        if "/" in self.program:
            return self.program
        found = shutil.which(self.program) or shutil.which(self.program, path="/usr/bin:/usr/local/bin:/bin")
        return found or self.program

    def run(self, *args: str) -> str:
        cmd = [self._exe(), *args]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"{' '.join(cmd)}: {exc}") from None
        if proc.returncode != 0:
            raise SlurmError(f"{' '.join(cmd)}: exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()}")
        return proc.stdout

    def hostnames(self, expression: str) -> list[str]:
        return self.run("show", "hostnames", expression).split()

    def update(self, nodes: Sequence[str], **fields: str) -> None:
        args = [f"{k}={v}" for k, v in fields.items()]
        self.run("update", f"nodename={','.join(nodes)}", *args)

    def nodes(self, expression: str) -> list[dict[str, str]]:
        """`scontrol -o show node` as dicts; values with spaces (Reason) are whole, to the next ` Key=`."""
        return [parse_node_line(line) for line in self.run("-o", "show", "node", expression).splitlines() if line]


def parse_node_line(line: str) -> dict[str, str]:
    """One line of `scontrol -o show node`: `Key=value` pairs where a value may hold spaces (Reason=a b c)."""
    out: dict[str, str] = {}
    matches = list(re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/]*)=", line))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out[m.group(1)] = line[m.end() : end].strip()
    return out


def own_reason(reason: str) -> str:
    """A node's Reason without the ` [user@time]` Slurm appends to it."""
    return re.sub(r"\s*\[[^\]@]+@[^\]]+\]$", "", reason)


def node_states(record: dict[str, str]) -> set[str]:
    """`State=IDLE+CLOUD+POWERED_DOWN` -> {"IDLE", "CLOUD", "POWERED_DOWN"}; '*' (not responding) dropped."""
    return {s.rstrip("*") for s in record.get("State", "").split("+") if s}


@dataclass(frozen=True)
class ResumeJob:
    job_id: int
    partition: str
    features: str
    nodes_resume: str


def read_resume_file(text: str) -> tuple[str, list[ResumeJob]]:
    """SLURM_RESUME_FILE as the hostlist of all nodes to resume and the jobs that need them. Two layouts exist:
    Slurm 22.05 writes {"all_nodes": hostlist, "jobs": [{"job_id", "nodes"}]}; later releases write
    {"all_nodes_resume", "jobs": [{"job_id", "partition", "features", "nodes_alloc", "nodes_resume", ...}]}.
    Raises ValueError when it is neither."""
    data: Any = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a Slurm resume file: not a JSON object")
    every = data.get("all_nodes_resume", data.get("all_nodes"))
    if not isinstance(every, str):
        raise ValueError("not a Slurm resume file: no all_nodes_resume/all_nodes hostlist")
    jobs = []
    for j in data.get("jobs") or []:
        if not isinstance(j, dict) or not isinstance(j.get("job_id"), int):
            raise ValueError(f"not a Slurm resume file: a job without a job_id: {j!r}")
        jobs.append(
            ResumeJob(
                job_id=int(j["job_id"]),
                partition=str(j.get("partition") or ""),
                features=str(j.get("features") or ""),
                nodes_resume=str(j.get("nodes_resume") or j.get("nodes") or j.get("nodes_alloc") or ""),
            )
        )
    return every, jobs


def copy_resume_file(env: dict[str, str], into: Path) -> Path | None:
    """Copy SLURM_RESUME_FILE at once (slurmctld deletes it); None when there is none or it is already gone."""
    name = env.get("SLURM_RESUME_FILE")
    if not name:
        return None
    try:
        text = Path(name).read_text(encoding="utf-8")
    except OSError:
        return None
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"resume-{Path(name).name}.json"
    target.write_text(text, encoding="utf-8")
    return target
