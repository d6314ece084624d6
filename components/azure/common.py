"""Pieces every Azure VM of the cluster shares: image reference, admin account, OS disk."""

from __future__ import annotations

import pulumi_azure_native as azure

from aicluster.plan import ClusterPlan


def image_reference(urn: str) -> azure.compute.ImageReferenceArgs:
    publisher, offer, sku, version = urn.split(":")
    return azure.compute.ImageReferenceArgs(publisher=publisher, offer=offer, sku=sku, version=version)


def linux_configuration(plan: ClusterPlan) -> azure.compute.LinuxConfigurationArgs:
    """Key-only login for the admin account; no password exists to leak or guess."""
    user = plan.access.admin_username
    return azure.compute.LinuxConfigurationArgs(
        disable_password_authentication=True,
        provision_vm_agent=True,
        ssh=azure.compute.SshConfigurationArgs(
            public_keys=[
                azure.compute.SshPublicKeyArgs(path=f"/home/{user}/.ssh/authorized_keys", key_data=key)
                for key in plan.access.ssh_public_keys
            ]
        ),
    )
