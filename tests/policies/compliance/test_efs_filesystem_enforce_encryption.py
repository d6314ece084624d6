"""Encrypted EFS, judged as the engine hands an EFS file system to any program."""

from __future__ import annotations

from tests.policies.conftest import findings


def test_efs_encryption() -> None:
    assert findings("aws-efs-filesystem-enforce-encryption", "aws:efs/fileSystem:FileSystem", {"encrypted": True}) == []
    assert findings("aws-efs-filesystem-enforce-encryption", "aws:efs/fileSystem:FileSystem", {}) == [
        "EFS file system x is not encrypted at rest; set encrypted = true (needs a new file system)"
    ]
