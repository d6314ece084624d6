"""The service account the cluster's VMs run as (no default Compute Engine account with project Editor)."""

from __future__ import annotations

import hashlib

import pulumi
import pulumi_gcp as gcp

ACCOUNT_ID_MAX = 30  # service account ids are 6 to 30 characters: [a-z][-a-z0-9]{4,28}[a-z0-9]


def account_id(cluster: str) -> str:
    base = f"{cluster}-nodes"
    if len(base) > ACCOUNT_ID_MAX:
        base = (
            cluster[: ACCOUNT_ID_MAX - 11].rstrip("-")
            + "-"
            + hashlib.sha256(cluster.encode()).hexdigest()[:4]
            + "-nodes"
        )
    return base


class GcpNodeIdentity(pulumi.ComponentResource):
    email: pulumi.Output[str]

    def __init__(self, name: str, cluster: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:NodeIdentity", name, {}, opts)
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            account_id=account_id(cluster),
            display_name=f"aicluster {cluster} nodes",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.email = account.email
        self.register_outputs({"email": self.email})
