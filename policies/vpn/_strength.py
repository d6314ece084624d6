"""What "strong" is for a site-to-site VPN, one allow-list for all three clouds in each cloud's own spelling: AES
with 256-bit keys (GCM or CBC), SHA-2 integrity of 256 bits or more (or the AEAD cipher's own), and Diffie-Hellman
groups of 2048-bit MODP or elliptic curves of 256 bits or more: 14 to 21 and 24 (RFC 8247 section 2.4 advises
against 22 and 23, small subgroups, and against 1, 2 and 5, too short). Each cloud's rule spells it with values
the cloud's API documents."""

from __future__ import annotations

from typing import Any

from ..facts.engine import UNKNOWN

STRONG_DH = (14, 15, 16, 17, 18, 19, 20, 21, 24)


def shown(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values)


def outside(values: list[Any], allowed: tuple[Any, ...]) -> list[Any]:
    """Known values outside the allow-list (unknown ones are judged at `up`, not guessed)."""
    return [v for v in values if v is not UNKNOWN and v not in allowed]
