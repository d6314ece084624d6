"""Cost: the monthly bill of the stack's fleets, file systems and network within the budget;
spot fleets have somewhere to checkpoint to."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog.pricing import CostLine, CostTotal, cents, hourly_month, money, service_override_hint, total

from .facts import (
    AZURE_NAT_GATEWAY,
    AZURE_PUBLIC_IP,
    EIP,
    GCP_ROUTER_NAT,
    KUBERNETES_CLUSTERS,
    NAT_GATEWAY,
    Fleet,
    Res,
    Stack,
    items,
)
from .rule import Ctx, Meta, NotApplicable, StackRule
from .vpn import AWS_VPN, GCP_VPN_TUNNEL

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
AZURE_VPN_GATEWAY = "azure-native:network:VirtualNetworkGateway"
# Owned nodes are priced by their site, not by pricing.overrides: the fix an unpriced site line names.
SITE_FIX = "give the site a hardware_cost (purchase_usd_per_node and amortization_years, or usd_per_node_hour)"


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
        lines.append(CostLine(what, stack.fleet_month(f)))
        if f.root_volume_gib:
            service, what = _root_disks(f)
            volumes = stack.service_month(f.provider, service, f.region, f.root_volume_gib * f.nodes)
            what = f"{f.res.name}: {_gib(f.root_volume_gib * f.nodes)} GiB {what}"
            lines.append(CostLine(what, volumes, _fix(stack, f.provider, service, f.region)))
    for fs in stack.filesystems:
        size = f"{_gib(fs.capacity_gib)} GiB " if fs.capacity_gib is not None else "(size not declared) "
        lines.append(CostLine(f"{fs.res.name}: {size}{fs.service}", stack.filesystem_price(fs)))
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
    for site in stack.sites:  # owned nodes: amortised hardware (or the site's node-hour rate) and their energy
        for p in site.pools:
            owned = f"{p.nodes} x {p.node_shape} at site {site.name}"
            lines.append(CostLine(f"{site.res.name}: hardware of {owned}", p.hardware_usd_per_month, SITE_FIX))
            if p.energy_usd_per_month is not None:
                lines.append(CostLine(f"{site.res.name}: energy of {owned}", p.energy_usd_per_month))
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


def _largest(lines: list[CostLine], n: int = 3) -> list[tuple[str, float]]:
    """The `n` costliest resources, each line of one resource (a fleet's instances and its root disks) summed,
    so a fleet's figure is the pool's cost the plan shows: `name (its lines) $total`."""
    by_res: dict[str, tuple[list[str], list[float]]] = {}
    for x in lines:
        if x.usd_per_month is None:
            continue
        name, _, what = x.what.partition(": ")
        parts, costs = by_res.setdefault(name, ([], []))
        parts.append(what)
        costs.append(x.usd_per_month)
    summed = [(f"{name} ({', '.join(parts)})", cents(sum(costs))) for name, (parts, costs) in by_res.items()]
    return sorted(summed, key=lambda item: -item[1])[:n]


def _budget(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    budget = ctx.setting("monthly_usd", ("budgets", "monthly_usd"))
    if budget is None:
        raise NotApplicable("no monthly budget: set budgets.monthly_usd in the stack or monthly_usd in policy config")
    lines = bill(stack)
    cost = total(lines)
    limit = float(budget)
    if cost.usd_per_month > limit:
        over = cents(cost.usd_per_month - limit)
        # whole dollars, unless they would hide the difference (a total a few cents over the budget)
        d = 0 if over >= 1 else 2
        biggest = "; ".join(f"{what} {money(usd, decimals=d)}" for what, usd in _largest(lines))
        yield (
            None,
            f"monthly cost {money(cost.usd_per_month, bool(cost.unpriced), d)} exceeds the budget "
            f"{money(limit, decimals=d)} by {money(over, decimals=d)} ({over / limit:.1%}); largest: {biggest}. "
            "Shrink or remove a pool, move it to spot or "
            "reserved capacity, or raise budgets.monthly_usd"
            + (f" (not counted, no price: {', '.join(cost.unpriced)})" if cost.unpriced else ""),
        )
    # Within budget with unpriced lines: the priced part passes here; aicluster-cluster-missing-prices
    # (advisory) names what is not counted, so one missing list price does not block a deployment.


monthly_budget = StackRule(
    Meta(
        name="aicluster-cluster-enforce-monthly-budget",
        display_name="Monthly budget",
        description="The monthly cost of GPU fleets and Kubernetes node groups, controllers and control planes, file "
        "systems, network and owned sites (hardware and energy) stays within budget.",
        concern="cost",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Shrink pools, use spot or reserved capacity, or raise budgets.monthly_usd.",
        config={
            "monthly_usd": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Ceiling in USD per 730-hour month. Default: the AiCluster's budgets.monthly_usd.",
            }
        },
    ),
    _budget,
)


def _spot_checkpoints(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    spot = [f for f in stack.fleets if f.market == "spot" and f.accelerators]
    if not spot:
        raise NotApplicable("no spot GPU or TPU pool in the stack")
    if stack.filesystems:
        return
    for f in spot:
        what = f"{f.instance_type} TPU ({f.chips} chips)" if f.tpu is not None else f"{f.nodes} x {f.instance_type}"
        yield (
            f.res,
            f"{f.res.name} runs {what} on spot with no shared file system in the stack: "
            "an interruption loses all progress since the job started; add storage (kind: lustre) to "
            "checkpoint to",
        )


spot_checkpoints = StackRule(
    Meta(
        name="aicluster-spot-missing-checkpoint-storage",
        display_name="Spot fleets checkpoint",
        description="Spot GPU fleets have a shared file system in the stack to checkpoint to.",
        concern="cost",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Add a parallel file system (storage: kind: lustre) or move the pool to on-demand.",
    ),
    _spot_checkpoints,
)


def _unpriced(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    lines = bill(stack)
    cost = total(lines)
    if cost.unpriced:
        missing = [x for x in lines if x.usd_per_month is None]
        fixes = list(dict.fromkeys(x.fix for x in missing if x.fix and x.fix != SITE_FIX))
        advice = []
        if any(x.fix != SITE_FIX for x in missing):
            advice.append("add your rates under pricing.overrides" + (f": {', '.join(fixes)}" if fixes else ""))
        if any(x.fix == SITE_FIX for x in missing):
            advice.append(SITE_FIX)
        yield (
            None,
            f"no catalog price for {', '.join(cost.unpriced)}: the monthly cost "
            f"{money(cost.usd_per_month, True, 0)} (and the budget check) leaves them out; " + "; ".join(advice),
        )


missing_prices = StackRule(
    Meta(
        name="aicluster-cluster-missing-prices",
        display_name="Every cost is priced",
        description="Every fleet, disk, file system and network charge has a catalog price or a declared rate.",
        concern="cost",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.ADVISORY,
        remediation=(
            "Add your rates under pricing.overrides (sku: the instance type, storage tier or service such as ebs-gp3 "
            "or nat-gateway; region; usd_per_hour or usd_per_gib_month, in the unit the catalog bills it in)."
        ),
    ),
    _unpriced,
)

POLICIES: list[StackRule] = [monthly_budget, missing_prices, spot_checkpoints]
