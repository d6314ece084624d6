"""Compliance: IMDSv2, no public exposure, encryption at rest, required tags, data residency, audit logs.

A rule the clouds share (public IPs, SSH/RDP from the internet, required tags) is one module: one check over the
facts each cloud's reader makes, bound once per cloud under that cloud's policy name (AWS, AZURE, GCP); a rule of
one cloud or of the whole stack is one module with one POLICY."""

from __future__ import annotations

from ..rule import Rule
from . import (
    disallow_admin_from_internet,
    disallow_public_ip,
    ebs_volume_enforce_encryption,
    efs_filesystem_enforce_encryption,
    enforce_allowed_regions,
    enforce_imdsv2,
    missing_audit_logging,
    missing_required_tags,
)

POLICIES: list[Rule] = [
    enforce_imdsv2.POLICY,
    disallow_public_ip.AWS,
    disallow_admin_from_internet.AWS,
    ebs_volume_enforce_encryption.POLICY,
    efs_filesystem_enforce_encryption.POLICY,
    missing_required_tags.AWS,
    disallow_public_ip.AZURE,
    disallow_admin_from_internet.AZURE,
    missing_required_tags.AZURE,
    disallow_public_ip.GCP,
    disallow_admin_from_internet.GCP,
    missing_required_tags.GCP,
    enforce_allowed_regions.POLICY,
    missing_audit_logging.POLICY,
]
