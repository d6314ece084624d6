"""Regional price coverage of the catalog: for each costed item (services such as root disks, NAT gateways, public
addresses and VPN links; storage tiers), the regions it has a list price in, out of the regions where the catalog
offers GPU or TPU instances, and out of the regions the example stacks (stacks/Pulumi.*.yaml) put pools in.

Usage: python benchmarks/price_coverage.py [--missing]
Prints figures; asserts nothing (tests/test_catalog.py pins the reviewed set of unpriced regions).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aicluster.catalog import Catalog, load_catalog  # noqa: E402
from aicluster.stackfile import find_project, load_cluster, read_stack  # noqa: E402


def gpu_regions(catalog: Catalog) -> dict[str, set[str]]:
    """Provider -> the regions where the catalog offers an accelerated instance type or a TPU generation."""
    return catalog.accelerator_regions()


def stack_regions() -> dict[str, set[str]]:
    """Provider -> the regions the example stacks put cloud pools in."""
    project = find_project(ROOT)
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        spec = load_cluster(read_stack(project, name))
        for pool in spec.pools:
            region = getattr(pool, "region", None)
            if region and pool.provider in ("aws", "azure", "gcp"):
                out.setdefault(pool.provider, set()).add(region)
    return out


def items(catalog: Catalog) -> list[tuple[str, str, str, dict[str, float]]]:
    """(provider, kind, item, prices by region) for every costed item of the catalog."""
    out = [(p, "service", name, rec.prices_usd) for (p, name), rec in sorted(catalog.services.items())]
    out += [(t.provider, "storage", t.sku, t.prices_usd_per_gib_month) for t in catalog.storage_tiers]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list the unpriced regions of each item")
    args = parser.parse_args()
    catalog = load_catalog()
    gpu, stacks = gpu_regions(catalog), stack_regions()
    totals = {"gpu": [0, 0], "stacks": [0, 0]}
    print(f"{'provider':8} {'kind':8} {'item':52} {'GPU regions':>12} {'stack regions':>14}")
    for provider, kind, item, prices in items(catalog):
        where = {"gpu": gpu.get(provider, set()), "stacks": stacks.get(provider, set())}
        shown = []
        for key, regions in where.items():
            priced = sum(1 for r in regions if prices.get(r) is not None)
            totals[key][0] += priced
            totals[key][1] += len(regions)
            shown.append(f"{priced}/{len(regions)}")
        print(f"{provider:8} {kind:8} {item:52} {shown[0]:>12} {shown[1]:>14}")
        if args.missing:
            missing = sorted(r for r in where["gpu"] | where["stacks"] if prices.get(r) is None)
            if missing:
                print(f"{'':18}unpriced in: {', '.join(missing)}")
    for key, label in (("gpu", "GPU/TPU regions"), ("stacks", "example-stack regions")):
        priced, of = totals[key]
        print(f"total (item x {label}): {priced}/{of} priced ({100 * priced / of:.1f}%)")


if __name__ == "__main__":
    main()
