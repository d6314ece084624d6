"""What the programs ask of Slurm, through `scontrol` (the interface Slurm documents for ResumeProgram)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# Slurm refuses a reason with a newline; keep it one short line.
MAX_REASON = 200
# One `nodename=` argument at most this long: Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN) with
# "Argument list too long", which at 9,000 nodes left every node up; longer lists go in several updates.
MAX_NODES_ARG = 16 * 1024
# what `scontrol show hostnames` may print: node names the renderer makes (never a leading '-')
NODE_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.\-]*")
HOSTLIST = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.\-\[\],]*")


class SlurmError(Exception):
    """scontrol failed: the message has its command and output."""


class Slurm(Protocol):
    def hostnames(self, expression: str) -> list[str]: ...
    def update(self, nodes: Sequence[str], **fields: str) -> None: ...
    def nodes(self, expression: str) -> list[dict[str, str]]: ...


def one_line(text: str) -> str:
    """A reason Slurm accepts and `scontrol -o show node` prints back unambiguously: one line of printable
    characters, no '=' (a cloud's error text such as "NodeName=x State=IDLE" would read as fields), at most
    MAX_REASON characters."""
    text = "".join(c if c.isprintable() else " " for c in str(text)).replace("=", ":")
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def check_hostlist(expression: str) -> str:
    """A hostlist scontrol may be given: node-name characters, brackets that pair; SlurmError otherwise."""
    depth = 0
    for c in expression:
        depth += {"[": 1, "]": -1}.get(c, 0)
        if depth not in (0, 1):
            break
    if not HOSTLIST.fullmatch(expression) or depth != 0:
        raise SlurmError(f"not a hostlist: {expression[:200]!r} (letters, digits, - _ . with [ranges])")
    return expression


def chunks(nodes: Sequence[str], limit: int = MAX_NODES_ARG) -> list[list[str]]:
    """Node names in lists whose comma-joined form stays within `limit` characters (one `nodename=` each)."""
    out: list[list[str]] = []
    size = limit + 1
    for n in nodes:
        if size + 1 + len(n) > limit:
            out.append([])
            size = -1
        out[-1].append(n)
        size += 1 + len(n)
    return out


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
        """`scontrol show hostnames -- EXPR`, checked: scontrol 22.05 exits 0 with nothing on stdout for a hostlist
        it refuses (a bad range, over 65,536 hosts), which must not read as "no nodes"."""
        if not expression:
            return []
        out = self.run("show", "hostnames", "--", check_hostlist(expression)).split()
        bad = [n for n in out if not NODE_NAME.fullmatch(n)]
        if not out or bad:
            raise SlurmError(f"scontrol show hostnames {expression[:200]!r}: scontrol refused the hostlist")
        return out

    def update(self, nodes: Sequence[str], **fields: str) -> None:
        """`scontrol update nodename=LIST KEY=VALUE...`, in as many calls as the list needs (MAX_NODES_ARG); every
        part is tried, and the first failure is raised once all were."""
        args = [f"{k}={v}" for k, v in fields.items()]
        errors = []
        for part in chunks(nodes):
            try:
                self.run("update", f"nodename={','.join(part)}", *args)
            except SlurmError as exc:
                errors.append(f"{len(part)} node(s) from {part[0]}: {exc}")
        if errors:
            raise SlurmError("; ".join(errors))

    def nodes(self, expression: str) -> list[dict[str, str]]:
        """`scontrol -o show node` as dicts; values with spaces (Reason) are whole, to the next ` Key=`."""
        lines = self.run("-o", "show", "node", check_hostlist(expression)).splitlines()
        return [parse_node_line(line) for line in lines if line]


def parse_node_line(line: str) -> dict[str, str]:
    """One line of `scontrol -o show node`: `Key=value` pairs where a value may hold spaces (Reason=a b c).

    The first occurrence of a key wins: Slurm prints NodeName and State before Reason, so a reason someone else set
    with "NodeName=x State=IDLE" in it (a cloud error's text) cannot rewrite them; it only cuts that reason short."""
    out: dict[str, str] = {}
    matches = list(re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/]*)=", line))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out.setdefault(m.group(1), line[m.end() : end].strip())
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


MAX_RESUME_FILE = 64 * 2**20  # slurmctld's file for 100,000 jobs is a few MiB


def read_resume_file(text: str | bytes) -> tuple[str, list[ResumeJob]]:
    """SLURM_RESUME_FILE as the hostlist of all nodes to resume and the jobs that need them. Two layouts exist:
    Slurm 22.05 writes {"all_nodes": hostlist, "jobs": [{"job_id", "nodes"}]}; later releases write
    {"all_nodes_resume", "jobs": [{"job_id", "partition", "features", "nodes_alloc", "nodes_resume", ...}]}.
    Raises ValueError for anything else: not UTF-8, not JSON, nested too deep, or fields of the wrong type."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        data: Any = json.loads(text)
    except RecursionError:
        raise ValueError("not a Slurm resume file: JSON nested too deep") from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError(f"not a Slurm resume file: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise ValueError("not a Slurm resume file: not a JSON object")
    every = data.get("all_nodes_resume", data.get("all_nodes"))
    if not isinstance(every, str):
        raise ValueError("not a Slurm resume file: no all_nodes_resume/all_nodes hostlist")
    listed = data.get("jobs") or []
    if not isinstance(listed, list):
        raise ValueError(f"not a Slurm resume file: jobs is a {type(listed).__name__}, not a list")
    jobs = []
    for j in listed:
        job_id = j.get("job_id") if isinstance(j, dict) else None
        if not isinstance(job_id, int) or isinstance(job_id, bool):
            raise ValueError(f"not a Slurm resume file: a job without a job_id: {str(j)[:200]}")
        texts = {k: j.get(k) for k in ("partition", "features", "nodes_resume", "nodes", "nodes_alloc")}
        if any(v is not None and not isinstance(v, str) for v in texts.values()):
            raise ValueError(f"not a Slurm resume file: job {job_id} has a field that is not a string")
        jobs.append(
            ResumeJob(
                job_id=job_id,
                partition=texts["partition"] or "",
                features=texts["features"] or "",
                nodes_resume=texts["nodes_resume"] or texts["nodes"] or texts["nodes_alloc"] or "",
            )
        )
    return every, jobs


def copy_resume_file(env: dict[str, str], into: Path) -> tuple[bytes | None, Path | None, str]:
    """Read SLURM_RESUME_FILE at once (slurmctld deletes it soon) and keep a copy in `into`.

    Returns (its bytes, the copy's path, a problem): bytes None when there is none, it is gone, it cannot be read
    or it is over MAX_RESUME_FILE; the copy None when it cannot be written (state_dir unusable). Never raises."""
    name = env.get("SLURM_RESUME_FILE")
    if not name:
        return None, None, ""
    try:  # a plain file only: a FIFO or a device would block or never end
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, None, f"SLURM_RESUME_FILE {name}: not a plain file, not read"
            data = f.read(MAX_RESUME_FILE + 1)
    except OSError as exc:
        return None, None, f"SLURM_RESUME_FILE {name}: {exc.strerror or exc}"
    if len(data) > MAX_RESUME_FILE:
        return None, None, f"SLURM_RESUME_FILE {name}: over {MAX_RESUME_FILE // 2**20} MiB, not read"
    try:
        into.mkdir(parents=True, exist_ok=True)
        target = into / f"resume-{Path(name).name}.json"
        target.write_bytes(data)
    except OSError as exc:
        return data, None, f"could not keep a copy of SLURM_RESUME_FILE in {into}: {exc.strerror or exc}"
    return data, target, ""
