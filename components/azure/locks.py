"""Azure management locks: a `CanNotDelete` lock on each Azure resource whose delete loses data (the catalog's
`data-loss` types, which `protect` already guards in Pulumi; components/protect.py), so a delete from outside the
stack (the portal, `az`, another tool) fails too. Azure Resource Manager refuses to delete a locked resource, its
child resources (a lock is inherited: a NetApp account's lock covers its capacity pools and volumes, a key vault's
its keys) and the resource group around it, whatever the caller's role.

The lock is a `ManagementLockByScope` on the resource's ARM id:
- not `ManagementLockAtResourceGroupLevel`: a resource-group lock is inherited by every resource in the group,
  so it would also stop the stack from deleting what it deletes in the normal course (scale sets and NICs of a
  shrunk or renamed pool, agent pools, role assignments); locking each stateful resource keeps the group
  undeletable anyway, since Azure deletes a group only by deleting what is in it;
- not `ManagementLockAtResourceLevel`: in pulumi_azure_native 3.29.0 it takes the resource's provider namespace,
  type, parent path and name as five inputs, plus a required `api_version`, per type; the id says all of that
  and `ManagementLockByScope` takes it as `scope` (API 2020-05-01, the same locks API).

The lock depends on the resource (`scope` is its id), so Pulumi deletes the lock before the resource: it never
blocks a delete the stack itself makes once `protect` is lifted (`pulumi state unprotect`), only one from outside.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

LOCK_NAME = "aicluster-cannot-delete"


def delete_lock(name: str, resource: pulumi.CustomResource, what: str, parent: pulumi.Resource) -> pulumi.Resource:
    """A CanNotDelete lock named `aicluster-cannot-delete` on `resource` (its id), a child of `parent`."""
    return azure.authorization.ManagementLockByScope(
        f"{name}-lock",
        scope=resource.id,
        level=azure.authorization.LockLevel.CAN_NOT_DELETE,
        lock_name=LOCK_NAME,
        notes=f"aicluster: deleting this {what} loses its data. To delete it on purpose, remove it from the stack "
        "after `pulumi state unprotect`; Pulumi removes this lock first.",
        opts=pulumi.ResourceOptions(parent=parent),
    )
