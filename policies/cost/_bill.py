"""The stack's monthly bill, line by line, as the budget and the unpriced-items rules read it (one cost model with
the planner: aicluster.catalog.pricing)."""

from __future__ import annotations

from aicluster.catalog.monitoring import Collector
from aicluster.catalog.pricing import (
    CostLine,
    CostTotal,
    cents,
    hourly_month,
    instance_override_hint,
    service_override_hint,
    storage_override_hint,
    total,
)

from ..facts.aws import AMP_SCRAPER, AMP_WORKSPACE, AWS_VPN, EIP, NAT_GATEWAY
from ..facts.azure import AZURE_MONITOR_WORKSPACE, AZURE_NAT_GATEWAY, AZURE_PUBLIC_IP, AZURE_VPN_GATEWAY
from ..facts.engine import Res, items
from ..facts.gcp import GCP_ROUTER_NAT, GCP_VPN_TUNNEL
from ..facts.kubernetes import GKE_CLUSTER, KUBERNETES_CLUSTERS
from ..facts.model import Fleet
from ..facts.stack import Stack

# Azure OS disk types (storageAccountType) the catalog prices per GiB-month; others are named as unpriced.
AZURE_DISK_SERVICES = {"Premium_LRS": "managed-disk-premium-ssd"}

AZURE_DEFAULT_DISK = "Premium_LRS"  # what aicluster declares; GPU sizes all take Premium SSD

# GCP boot disks: the catalog names its services after GCP's disk types (pd-balanced, hyperdisk-balanced);
# a template or VM that names none gets GCP's default, pd-standard.
GCP_DEFAULT_DISK = "pd-standard"

# Hourly network charges: (type, catalog service, what the line calls it), NAT gateways before addresses.
# A Cloud NAT (RouterNat) is both: the gateway and the external address it allocates.
NETWORK_CHARGES = (
    (NAT_GATEWAY, "nat-gateway", "NAT gateway"),
    (AZURE_NAT_GATEWAY, "nat-gateway", "NAT gateway"),
    (GCP_ROUTER_NAT, "nat-gateway", "Cloud NAT gateway"),
    (EIP, "public-ipv4", "public IPv4"),
    (AZURE_PUBLIC_IP, "public-ipv4", "public IPv4"),
    (GCP_ROUTER_NAT, "public-ipv4", "Cloud NAT public IPv4"),
    # site-to-site VPNs: AWS bills each VPN connection by the hour, GCP each HA VPN tunnel (the Azure gateway's
    # hourly SKU rate is below; its public addresses are counted above)
    (AWS_VPN, "vpn-connection", "VPN connection"),
    (GCP_VPN_TUNNEL, "ha-vpn-tunnel", "HA VPN tunnel"),
)

# Owned nodes are priced by their site, not by pricing.overrides: the fix an unpriced site line names.
SITE_FIX = "give the site a hardware_cost (purchase_usd_per_node and amortization_years, or usd_per_node_hour)"

# A managed Prometheus with no verified ingestion price is not priced by pricing.overrides (its tiers are catalog
# data): what the unpriced line advises instead.
MONITORING_FIX = (
    "a managed Prometheus's ingestion tiers are catalog data (data/monitoring.yaml managed_prometheus, with a "
    "source): add them there, or use monitoring.prometheus: self-hosted"
)

# Fixes that are advice rather than a pricing.overrides line.
ADVICE = (SITE_FIX, MONITORING_FIX)

Line = CostLine  # one item of the bill; None: not priced (named in the findings, never counted as 0)


def bill(stack: Stack) -> list[CostLine]:
    """The stack's monthly cost, line by line, with the planner's cost model (aicluster.catalog.pricing):
    the same prices, 730-hour months and rounding per item, so the budget judges the total the plan shows.
    Worked out once per stack (the budget and the unpriced-items rules both read it); each caller gets its own list."""
    return list(stack.memo("bill", _bill))


def _bill(stack: Stack) -> list[CostLine]:
    lines: list[CostLine] = []
    for f in stack.fleets:
        what = (
            f"{f.res.name}: {f.instance_type} TPU ({f.chips} chips on {f.nodes} hosts) {f.market}"
            if f.tpu is not None
            else f"{f.res.name}: {f.nodes} x {f.instance_type} {f.market}"
        )
        fleet_fix = instance_override_hint(f.instance_type, f.region, f.market) if f.region else None
        lines.append(CostLine(what, stack.fleet_month(f), fleet_fix))
        if f.root_volume_gib:
            service, what = _root_disks(f)
            volumes = stack.service_month(f.provider, service, f.region, f.root_volume_gib * f.nodes)
            what = f"{f.res.name}: {_gib(f.root_volume_gib * f.nodes)} GiB {what}"
            lines.append(CostLine(what, volumes, _fix(stack, f.provider, service, f.region)))
    for fs in stack.filesystems:
        size = f"{_gib(fs.capacity_gib)} GiB " if fs.capacity_gib is not None else "(size not declared) "
        fs_fix = storage_override_hint(fs.tier.sku, fs.region) if fs.region and fs.tier is not None else None
        lines.append(CostLine(f"{fs.res.name}: {size}{fs.service}", stack.filesystem_price(fs), fs_fix))
    for type_, service, what in NETWORK_CHARGES:
        for r in stack.of(type_):
            count = _nat_addresses(r) if type_ == GCP_ROUTER_NAT and service == "public-ipv4" else 1
            shown = f"{count} x {what}" if count != 1 else what
            one = stack.service_month(r.catalog_provider, service, r.region, 1)
            month = cents(one * count) if one is not None else None
            lines.append(CostLine(f"{r.name}: {shown}", month, _fix(stack, r.catalog_provider, service, r.region)))
    for r in stack.of(AZURE_VPN_GATEWAY):  # priced per SKU: the catalog's service is vpn-gateway-<sku>
        sku = r.get("sku", "name")
        service = f"vpn-gateway-{sku.lower()}" if isinstance(sku, str) else "vpn-gateway"
        month = stack.service_month("azure", service, r.region, 1)
        lines.append(CostLine(f"{r.name}: {sku} VPN gateway", month, _fix(stack, "azure", service, r.region)))
    for r in stack.of(*KUBERNETES_CLUSTERS):  # the managed control plane's fee per cluster-hour
        cp = stack.control_plane(r)
        if cp is None:
            continue
        month = hourly_month(cp.usd_per_hour, 1, stack.catalog.hours_per_month) if cp.usd_per_hour is not None else None
        lines.append(CostLine(f"{r.name}: {cp.service} control plane ({cp.support} support)", month))
    lines += _managed_prometheus(stack)
    for site in stack.sites:  # owned nodes: amortised hardware (or the site's node-hour rate) and their energy
        for p in site.pools:
            owned = f"{p.nodes} x {p.node_shape} at site {site.name}"
            lines.append(CostLine(f"{site.res.name}: hardware of {owned}", p.hardware_usd_per_month, SITE_FIX))
            if p.energy_usd_per_month is not None:
                lines.append(CostLine(f"{site.res.name}: energy of {owned}", p.energy_usd_per_month))
    return lines


def _managed_prometheus(stack: Stack) -> list[CostLine]:
    """What a managed Prometheus bills for the samples of every fleet's nodes (node_exporter on each, dcgm-exporter
    on GPU nodes), with the planner's model (Catalog.managed_prometheus_cost); no verified price: unpriced. The
    service as the engine hands it: an AMP workspace (an AMP scraper beside it: the EKS collector, else the Slurm
    controller's remote_write), an Azure Monitor workspace, or a GKE cluster with managed collection."""
    found: list[tuple[Res, str, Collector]] = [
        (r, "aws", "amp-scraper" if stack.of(AMP_SCRAPER) else "remote-write") for r in stack.of(AMP_WORKSPACE)
    ]
    found += [(r, "azure", "aks-metrics-addon") for r in stack.of(AZURE_MONITOR_WORKSPACE)]
    found += [
        (r, "gcp", "gke-managed-collection")
        for r in stack.of(GKE_CLUSTER)
        if r.get("monitoringConfig", "managedPrometheus", "enabled") is True
    ]
    nodes = [(f.spec, f.nodes) for f in stack.fleets if f.spec is not None]
    lines = []
    for r, provider, collector in found:
        cost = stack.catalog.managed_prometheus_cost(provider, r.region, collector, nodes)
        if cost is None:
            continue
        what = (
            f"{r.name}: {cost.service}, {cost.samples / 1e6:,.0f}M samples ingested ({cost.series:,} series every "
            f"{cost.interval_s} s)"
        )
        lines.append(CostLine(what, cost.usd_per_month, MONITORING_FIX))
    return lines


def _fix(stack: Stack, provider: str, service: str, region: str | None) -> str | None:
    """The override line that prices a catalog service in a region (None: not a catalog service, or no region)."""
    if region is None or stack.catalog.service_unit(provider, service) is None:
        return None
    return service_override_hint(stack.catalog, provider, service, region)


def _nat_addresses(nat: Res) -> int:
    """External addresses a Cloud NAT uses: the ones it names (MANUAL_ONLY), else one it allocates itself."""
    named = items(nat.props, "natIps")
    return len(named) if nat.get("natIpAllocateOption") == "MANUAL_ONLY" and named else 1


def _gib(size: float) -> str:
    """48000, 1572864, 0.5: whole sizes in full (no 1.57286e+06), fractions as they are."""
    return f"{size:.0f}" if float(size).is_integer() else f"{size:g}"


def _root_disks(f: Fleet) -> tuple[str, str]:
    """The catalog service that bills a fleet's root disks, and what the bill calls them."""
    if f.provider == "azure":
        kind = f.root_disk_type or AZURE_DEFAULT_DISK
        return AZURE_DISK_SERVICES.get(kind, f"managed-disk-{kind}"), f"{kind} OS disks"
    if f.provider == "gcp":
        kind = (f.root_disk_type or GCP_DEFAULT_DISK).rsplit("/", 1)[-1]  # a type may be a URL
        return kind, f"{kind} boot disks"
    return "ebs-gp3", "root volumes"


def monthly_total(stack: Stack) -> CostTotal:
    """The priced part of the monthly cost, to the cent, and what has no price."""
    return total(bill(stack))
