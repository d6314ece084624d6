"""Site-to-site VPNs: IKEv2 and strong algorithms only, on every cloud's end of every tunnel.

One module per cloud: each cloud names its settings, defaults and values its own way (AWS per-tunnel lists that
permit everything when unset, GCP an optional cipher suite, Azure a required IPsec policy), so the three rules share
only what "strong" is (`_strength`), not a check."""

from __future__ import annotations

from ..rule import Rule
from . import aws, azure, gcp

POLICIES: list[Rule] = [aws.POLICY, gcp.POLICY, azure.POLICY]
