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
    slurm_exporter: Annotated[
        Literal["none", "binary", "url", "container"],
        Field(
            description="How the Slurm controller gets its Slurm exporter (SckyzO/slurm_exporter, which Debian does "
            "not package), on the catalog's port: `binary` one your image or build put there, `url` a release "
            "binary, `container` an image. The inventory hands the choice to the controller as "
            "`slurm_exporter_source`; `aicluster tune` does not install the exporter yet, so run it yourself. Any "
            "of them makes the Prometheus configuration scrape it and alert on Slurm's node states and on the "
            "exporter being down. `none`: no Slurm job and no Slurm alerts (they would fire on a target nobody "
            "installed). Slurm stacks only."
        ),
    ] = "none"
