"""The severities and enforcement levels a preview's findings carry (docs/preview-json.md), apart from the
records so that `aicluster preview`'s finding tables need not load them."""

from __future__ import annotations

from typing import Literal, TypeAlias

Severity: TypeAlias = Literal["critical", "high", "medium", "low"]
Enforcement: TypeAlias = Literal["mandatory", "advisory", "disabled"]
FindingEnforcement: TypeAlias = Literal["mandatory", "advisory"]

SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low")
