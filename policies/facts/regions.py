"""How each cloud spells a region, as `Res.region` reads it for every resource: Azure takes display names
("East US" is eastus), a GCP zone stands for its region (us-central1-a is in us-central1), and resources that are
not regional say `global`."""

from __future__ import annotations

import re

# GCP resources that are not regional say so with this location (log buckets, global addresses, ...).
GLOBAL_LOCATION = "global"
# A GCP zone is its region plus a one-letter suffix: us-central1-a is in us-central1.
_GCP_ZONE = re.compile(r"([a-z]+-[a-z]+[0-9]+)-[a-z]")  # full match: "$" lets "\n" through


def azure_location(location: str) -> str:
    """Azure takes display names too: "East US" and "eastus" are one region."""
    return location.replace(" ", "").lower()


def gcp_region(location: str) -> str:
    """A GCP location as a region: a zone stands for its region (us-central1-a -> us-central1); regions,
    `global` and multi-regions (US, EU) are themselves."""
    found = _GCP_ZONE.fullmatch(location)
    return found.group(1) if found else location
