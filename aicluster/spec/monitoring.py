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
            "not package); `aicluster tune` installs it with the `slurm_exporter` role as a systemd service on the "
            "catalog's port, with the collectors that need slurmdbd off: `binary` runs the one your image or build "
            "put at `slurm_exporter_binary`; `url` downloads the catalog's release archive for the controller's "
            "architecture and checks it against the release's checksums file (`-e slurm_exporter_checksum=sha256:"
            "...` pins a digest); `container` runs `slurm_exporter_image` (required, `-e`) with docker or podman. "
            "Any of them makes the Prometheus configuration scrape it and alert on Slurm's node states and on the "
            "exporter being down. `none`: nothing installed, no Slurm job and no Slurm alerts (they would fire on a "
            "target nobody installed). Slurm stacks only."
        ),
    ] = "none"
