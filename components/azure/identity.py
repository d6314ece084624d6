"""The managed identity every VM of a cluster runs as, in one region."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_azure_native as azure

from .aliases import azure_component_opts


class NodeIdentityArgs(TypedDict):
    location: str
    resource_group_name: pulumi.Input[str]


class AzureNodeIdentity(pulumi.ComponentResource):
    """A user-assigned managed identity with no role assignments: nodes need nothing from the Azure API to
    provision. The tuning step grants what it needs (e.g. blob storage for checkpoints) explicitly."""

    id: pulumi.Output[str]
    client_id: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:NodeIdentity", name, {}, azure_component_opts(opts))
        identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-id",
            resource_group_name=args["resource_group_name"],
            location=args["location"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.id = identity.id
        self.client_id = identity.client_id
        self.register_outputs({"id": identity.id, "client_id": identity.client_id})
