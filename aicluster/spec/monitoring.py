"""Monitoring in the stack file: where the cluster's Prometheus runs (aicluster/monitoring writes what it scrapes)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import Strict


class Monitoring(Strict):
    prometheus: Annotated[
        Literal["self-hosted", "managed"],
        Field(
            description="`self-hosted`: Debian's Prometheus on the Slurm controller, with the configuration and "
            "rules `aicluster monitoring` writes; `managed`: the cloud's managed Prometheus as stack resources (Amazon "
            "Managed Service for Prometheus, GKE managed collection, an Azure Monitor workspace), fed by the "
            "controller's Prometheus (remote_write) or the Kubernetes service's collector. On-prem has no managed "
            "option."
        ),
    ] = "self-hosted"
