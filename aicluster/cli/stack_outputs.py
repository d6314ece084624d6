"""A deployed stack's outputs, read through the Pulumi CLI (`pulumi stack output --json`)."""

from __future__ import annotations

import json
from typing import Any

from aicluster.stackfile import Project
from aicluster.term import strip_control

from .console import warn
from .exits import OperationFailed


def live_outputs(project: Project, stack: str) -> dict[str, Any] | None:
    """The deployed stack's outputs through the Pulumi CLI, or None when there is no CLI or no deployment."""
    import shutil
    import subprocess

    exe = shutil.which("pulumi")
    if exe is None:
        return None
    proc = subprocess.run(
        [exe, "stack", "output", "--json", "--stack", stack],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        warn([f"pulumi stack output failed ({proc.stderr.strip()[:200]}); using the offline preview"])
        return None
    try:
        data = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def secret_outputs(project: Project, stack: str) -> dict[str, Any]:
    """The deployed stack's outputs, secrets in clear (`pulumi stack output --json --show-secrets`). The text is
    never echoed: a failure says only what failed."""
    import shutil
    import subprocess

    exe = shutil.which("pulumi")
    if exe is None:
        raise OperationFailed(
            "the Pulumi CLI is not installed: the kubeconfig is a stack output of the deployed stack; install it, or "
            "give the outputs with --outputs FILE (pulumi stack output --json --show-secrets > FILE)"
        )
    proc = subprocess.run(
        [exe, "stack", "output", "--json", "--show-secrets", "--stack", stack],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise OperationFailed(f"pulumi stack output failed: {strip_control(proc.stderr.strip())[:300]}")
    try:
        data = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        raise OperationFailed("pulumi stack output printed no JSON object") from None
    if not isinstance(data, dict):
        raise OperationFailed("pulumi stack output printed no JSON object")
    return data
