"""The circuit breaker both repair loops share: aicluster-repair on the Slurm controller (cli.py) and the GPU node
quarantine controller on Kubernetes (quarantine.py). Standard library only: quarantine.py ships it into a stock
Python image beside itself."""

from __future__ import annotations


def breaker_limit(share: float, nodes: int) -> int:
    """The most of `nodes` that may be out of service (in repair, quarantined) at once: `share` of them, rounded
    down (0.5 of 5 nodes is 2; a single node is never taken)."""
    return int(share * nodes + 1e-9)
