"""The stack file format: what a user writes under `aicluster:cluster` in `stacks/Pulumi.<stack>.yaml`.

`ClusterSpec` is the only thing a user writes. It is validated once, here, and every problem is
reported at once as a :class:`Problem` naming the file, the field path, the value and the fix.
Rules that need the catalog (instance type exists, zone belongs to region) live in the planner,
which reports them the same way.

This module imports nothing else of the project.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .aws import (
    AwsPool,
)
from .azure import (
    AzurePool,
)
from .base import (
    _PATTERN_HINTS,
    DNS_LABEL_RE,
    INSTANCE_TYPE_RE,
    MAX_SHOWN,
    PLACEMENT_GROUP_RE,
    POLICY_NAME_RE,
    REGION_RE,
    SKU_RE,
    SUPPORTED_PROVIDERS,
    ZONE_RE,
    AwsMarket,
    AzureMarket,
    Cidr,
    Count,
    DnsLabel,
    Framework,
    GcpMarket,
    InstanceType,
    LazyPattern,
    Market,
    MountPath,
    NetworkCidr,
    Path,
    Problem,
    Provider,
    RegionName,
    SpecError,
    Strict,
    TagKey,
    TagValue,
    ZoneName,
    _pattern,
    _plain_text,
    _Problems,
    _quote,
    _zone_number,
    clip,
    did_you_mean,
    format_path,
)
from .gcp import (
    GCP_LABEL_MAX,
    GCP_REGION_RE,
    GCP_RESERVATION_RE,
    GCP_ZONE_RE,
    TPU_TYPE_RE,
    GcpPool,
    gcp_label,
    gcp_labels,
)
from .kubernetes import KubernetesScheduler
from .monitoring import ALERT_SECRET_RE, WEBHOOK_URL_RE, Alerts, Monitoring
from .onprem import (
    BMC_RE,
    BMC_USER_RE,
    RACK_RE,
    SECRET_NAME_RE,
    BgpAsn,
    HardwareCost,
    Host,
    OnpremFabric,
    OnpremPool,
    PrivateIp,
    PublicIp,
    Site,
    SiteNetwork,
    SitePower,
    bmc_address,
    mask_bmc_url,
    mask_bmc_user,
    pool_fabric,
)
from .slurm import Controller, SlurmScheduler
from .workload import Model as WorkloadModel  # noqa: F401 - re-exported: the spec's public models
from .workload import Targets as WorkloadTargets  # noqa: F401
from .workload import Training as WorkloadTraining  # noqa: F401
from .workload import Workload

Pool = Annotated[AwsPool | AzurePool | GcpPool | OnpremPool, Field(discriminator="provider")]


# ------------------------------------------------------------------------------------------------
# Storage
# ------------------------------------------------------------------------------------------------


class _Storage(Strict):
    name: Annotated[DnsLabel, Field(description="File system name, unique in the cluster (e.g. `scratch`).")]
    provider: Annotated[
        Provider | None, Field(description="Where it lives. Default: the provider of the first pool.")
    ] = None
    region: Annotated[
        RegionName | None, Field(description="Region. Default: the region of the first pool of that provider.")
    ] = None
    zone: Annotated[
        ZoneName | None,
        BeforeValidator(_zone_number),
        Field(description="Zone. Default: the zone of the first pool of that provider and region."),
    ] = None
    capacity_tib: Annotated[
        float,
        Field(
            gt=0,
            le=100_000,
            allow_inf_nan=False,
            description="Requested capacity, TiB; rounded up to a valid size (FSx's marketing sizes such as "
            "1.2 or 2.4 TiB, which are 1,200 and 2,400 GiB, are taken as meant).",
        ),
    ]
    mount: Annotated[MountPath, Field(description="Mount point on every node (e.g. `/fsx`).")]


class LustreStorage(_Storage):
    """A parallel file system (FSx for Lustre on AWS)."""

    kind: Annotated[Literal["lustre"], Field(description="`lustre`: a parallel file system for data and checkpoints.")]
    throughput_mb_s_per_tib: Annotated[
        Count, Field(gt=0, description="Throughput tier, MB/s per TiB (e.g. `250`; FSx: 125/250/500/1000).")
    ] = 250


class NfsStorage(_Storage):
    """A shared NFS file system for home directories and small data."""

    kind: Annotated[Literal["nfs"], Field(description="`nfs`: a shared file system (EFS on AWS).")]


Storage = Annotated[LustreStorage | NfsStorage, Field(discriminator="kind")]


# ------------------------------------------------------------------------------------------------
# Scheduler, budgets, compliance, pricing, network
# ------------------------------------------------------------------------------------------------


Scheduler = Annotated[SlurmScheduler | KubernetesScheduler, Field(discriminator="kind")]


class Budgets(Strict):
    # Bounds far above any real cluster (a trillion dollars a month, 10 GW, 1 MW racks) that keep sums and
    # divisions finite and the figures printable.
    monthly_usd: Annotated[
        float | None,
        Field(gt=0, le=10**12, allow_inf_nan=False, description="Monthly spend ceiling, USD (730 h months)."),
    ] = None
    power_kw: Annotated[
        float | None,
        Field(gt=0, le=10**7, allow_inf_nan=False, description="Facility power ceiling, kW (IT power x PUE)."),
    ] = None
    rack_kw: Annotated[
        float | None,
        Field(gt=0, le=1_000, allow_inf_nan=False, description="Power per rack, kW; used to count racks (e.g. `40`)."),
    ] = None


DATE_RE = r"^\d{4}-\d{2}-\d{2}$"
_DATE_WORDS = "must be a date (YYYY-MM-DD, e.g. 2027-12-31)"


def _iso_date(value: Any) -> Any:
    """A YAML date (`expires: 2027-12-31`, read as a date by YAML loaders) is the date it names; a number
    (`20271231`) is a date written without its dashes."""
    if isinstance(value, datetime.date):
        return value.isoformat()[:10]
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise PydanticCustomError("date", _DATE_WORDS, {})
    return value


def _calendar_date(value: str) -> str:
    """YYYY-MM-DD that names a day of the calendar (not 2027-13-45 or 2027-02-30)."""
    try:
        datetime.date.fromisoformat(value)
    except ValueError as exc:
        raise PydanticCustomError(
            "date", "not a day of the calendar ({err}); " + _DATE_WORDS, {"err": str(exc)}
        ) from None
    return value


class Waiver(Strict):
    policy: Annotated[
        str, Field(pattern=POLICY_NAME_RE, description="Policy name (e.g. `aws-ec2-instance-disallow-public-ip`).")
    ]
    resource: Annotated[
        str,
        Field(min_length=1, max_length=1024, description="Resource name or URN the waiver covers."),
        AfterValidator(_plain_text),
    ]
    reason: Annotated[
        str,
        Field(min_length=10, max_length=1000, description="Why the finding is accepted."),
        AfterValidator(_plain_text),
    ]
    expires: Annotated[
        str,
        BeforeValidator(_iso_date),
        Field(pattern=_pattern(DATE_RE, _DATE_WORDS), description="Expiry date, YYYY-MM-DD (e.g. `2027-12-31`)."),
        AfterValidator(_calendar_date),
    ]


class Compliance(Strict):
    frameworks: Annotated[list[Framework], Field(description="Control frameworks the cluster is held to.")] = []
    allowed_regions: Annotated[
        list[RegionName],
        Field(description="Regions data may live in (e.g. `[us-east-1]`); empty = any."),
    ] = []
    waivers: Annotated[list[Waiver], Field(description="Accepted policy findings, each with a reason and expiry.")] = []


class PriceOverride(Strict):
    """A negotiated rate that replaces the catalog's list price."""

    sku: Annotated[
        str,
        Field(
            pattern=SKU_RE,
            description=(
                "Instance type (e.g. `p5.48xlarge`), TPU generation (`tpu-v5p`), storage tier (e.g. "
                "`fsx-lustre/PERSISTENT_2/250`) or catalog service (root disks `ebs-gp3`, "
                "`managed-disk-premium-ssd`, `pd-balanced`, `hyperdisk-balanced`; `nat-gateway`; `public-ipv4`)."
            ),
        ),
    ]
    region: Annotated[RegionName | None, Field(description="Only in this region. Default: every region.")] = None
    market: Annotated[Market | None, Field(description="Only for this market. Default: every market.")] = None
    usd_per_hour: Annotated[
        float | None,
        Field(
            gt=0,
            le=100_000,
            allow_inf_nan=False,
            description="Per node-hour (instance types), chip-hour (TPUs) or hour (NAT gateways, public addresses).",
        ),
    ] = None
    usd_per_gib_month: Annotated[
        float | None,
        Field(gt=0, le=1_000, allow_inf_nan=False, description="Per GiB-month, for storage tiers and disks."),
    ] = None
    offered: Annotated[
        bool,
        Field(
            description="Instance types and TPU generations: `true` says the type is offered to you in `region` "
            "(and `zones`) though the catalog does not list it there; the plan warns that it took your word. "
            "Without it an override only prices: it never makes a type offered where the catalog says it is not."
        ),
    ] = False
    zones: Annotated[
        list[ZoneName],
        Field(
            description="With `offered: true`: zones of `region` that offer the type to you beyond the catalog's "
            "list (e.g. `[us-central1-f]`); empty: the catalog's zones."
        ),
    ] = []
    reason: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=256,
            description="With `offered: true`: why you know it is offered (e.g. `account team confirmed capacity`).",
        ),
    ] = None

    @model_validator(mode="after")
    def _one_price(self) -> PriceOverride:
        both = self.usd_per_hour is not None and self.usd_per_gib_month is not None
        none = self.usd_per_hour is None and self.usd_per_gib_month is None
        if both or (none and not self.offered):
            raise PydanticCustomError(
                "price",
                "give exactly one of usd_per_hour (instance types, NAT gateways, addresses) or usd_per_gib_month "
                "(storage, disks)"
                + ("" if both else "; only an offered: true entry may leave the price to the catalog"),
                {},
            )
        return self

    @model_validator(mode="after")
    def _availability(self) -> PriceOverride:
        if not self.offered and (self.zones or self.reason is not None):
            raise PydanticCustomError(
                "offered", "zones and reason go with offered: true (an override alone only prices); add it", {}
            )
        if self.offered and self.region is None:
            raise PydanticCustomError(
                "offered", "offered: true needs the region it is offered in (one entry per region); add region", {}
            )
        if self.offered and self.reason is None:
            raise PydanticCustomError(
                "offered", "offered: true needs a reason (who told you it is offered there); add reason", {}
            )
        return self


class Pricing(Strict):
    overrides: Annotated[list[PriceOverride], Field(description="Negotiated rates; the most specific match wins.")] = []


_SSH_KEY = r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]{32,16384}={0,2}( [ -~]{0,256})?$"
_PATTERN_HINTS[GCP_REGION_RE] = "must be a GCP region name (e.g. us-central1)"
_PATTERN_HINTS[GCP_ZONE_RE] = "must be a GCP zone name (e.g. us-central1-a)"
_PATTERN_HINTS[TPU_TYPE_RE] = (
    "must be a Cloud TPU accelerator type: v5p-<cores>, v5litepod-<chips> or v6e-<chips> (e.g. v5p-256)"
)
_PATTERN_HINTS[GCP_RESERVATION_RE] = (
    "must be a reservation name, or projects/<project>/reservations/<name>, optionally followed by "
    "/reservationBlocks/<block>"
)
_PATTERN_HINTS[_SSH_KEY] = (
    "must be one OpenSSH public key line (ssh-ed25519 / ssh-rsa / ecdsa-sha2-nistp*, then the base64 key), "
    "as in ~/.ssh/id_ed25519.pub; never the private key"
)


class Access(Strict):
    """How administrators reach the nodes (clouds that need an admin account at VM creation, such as Azure)."""

    admin_username: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^[a-z_][a-z0-9_-]{0,31}$",
                (
                    "must be a Linux user name: 1 to 32 lowercase letters, digits, '_' and '-', starting with a letter "
                    "or '_' (e.g. aicluster)"
                ),
            ),
            description="Admin account created on Azure VMs (e.g. `aicluster`; Azure rejects `root` and `admin`).",
        ),
    ] = "aicluster"
    ssh_public_keys: Annotated[
        list[Annotated[str, LazyPattern(_SSH_KEY, ascii_only=True)]],
        Field(description="OpenSSH public keys authorised for the admin account; password login stays off."),
    ] = []

    @model_validator(mode="after")
    def _reserved(self) -> Access:
        if self.admin_username in _RESERVED_ADMIN_NAMES:
            raise _Problems(
                [
                    Problem(
                        ("admin_username",),
                        "reserved by Azure for Linux VMs; use e.g. aicluster",
                        self.admin_username,
                        True,
                    )
                ]
            )
        return self


# Linux admin names Azure refuses at VM creation (a subset that matters in practice).
_RESERVED_ADMIN_NAMES = frozenset(
    {"root", "admin", "administrator", "user", "user1", "test", "test1", "guest", "sys", "support", "azureadmin"}
)


class NetworkSpec(Strict):
    supernet: Annotated[
        Cidr, Field(description="Private range each cloud network's CIDR is carved from (e.g. `10.0.0.0/8`).")
    ] = "10.0.0.0/8"
    exclude: Annotated[
        list[Cidr],
        Field(description="Ranges already in use (on-prem, peered VPCs) that must not be allocated."),
    ] = []
    network_prefix: Annotated[
        Count,
        Field(
            ge=16,
            le=20,
            description="Prefix length of each provider/region network (e.g. `16`; AWS VPCs are /16 at most). "
            "Each zone's compute subnet is 3 bits longer.",
        ),
    ] = 16
    cidrs: Annotated[
        dict[
            Annotated[
                str,
                Field(
                    pattern=_pattern(
                        r"^(aws|azure|gcp|onprem)/[a-z0-9-]+$",
                        (
                            "must be provider/region: aws, azure, gcp or onprem, then '/' and the region in lowercase "
                            "letters, digits and '-' (e.g. aws/us-east-1)"
                        ),
                    )
                ),
            ],
            Cidr,
        ],
        Field(
            description="Pinned network blocks by `provider/region` (e.g. `{aws/us-east-1: 10.20.0.0/16}`). "
            "Unpinned regions take their fixed slot of the supernet."
        ),
    ] = {}
    pod_cidr: Annotated[
        NetworkCidr | None,
        Field(
            description="The pod range of a GKE or AKS cluster (its overlay; e.g. `100.64.0.0/14`). Unset: the "
            "catalog's fixed size for the provider, the first such block of 100.64.0.0/10 clear of the networks. "
            "It must lie in 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10. The range is fixed at "
            "cluster creation: changing it replaces the cluster, so a cluster created with another range pins it here."
        ),
    ] = None


# ------------------------------------------------------------------------------------------------
# The cluster
# ------------------------------------------------------------------------------------------------


_AZURE_TAG_FORBIDDEN = "<>%&\\?/"


def _duplicates(section: str, field: str, values: list[str], why: str) -> list[Problem]:
    first: dict[str, int] = {}
    out = []
    for i, value in enumerate(values):
        if value in first:
            out.append(
                Problem((section, i, field), f"duplicate of {section}[{first[value]}].{field}; {why}", value, True)
            )
        first.setdefault(value, i)
    return out


def _gcp_label_problems(tags: Mapping[str, str]) -> list[Problem]:
    """Tags become GCP labels (lowercase, 63 characters): refuse tags that would collide or be cut."""
    out = []
    seen: dict[str, str] = {}
    for key, value in tags.items():
        label = gcp_label(key, key=True)
        if label in seen:
            out.append(
                Problem(
                    ("tags", key),
                    f"on GCP this tag and {_quote(seen[label])} both become the label {_quote(label)} (labels are "
                    "lowercase, "
                    "with `_` for other characters); rename one",
                    key,
                    True,
                )
            )
        seen.setdefault(label, key)
        for what, text in (("name", key), ("value", value)):
            if len(text) > GCP_LABEL_MAX:
                out.append(
                    Problem(
                        ("tags", key),
                        f"GCP label {what}s are at most {GCP_LABEL_MAX} characters (this one has {len(text)}); "
                        "shorten it",
                        text,
                        True,
                    )
                )
    return out


def _tag_problems(tags: Mapping[str, str], providers: set[Any]) -> list[Problem]:
    problems = _gcp_label_problems(tags) if "gcp" in providers else []
    for key in tags:
        if "azure" in providers and any(c in key for c in _AZURE_TAG_FORBIDDEN):
            problems.append(
                Problem(("tags", key), "Azure tag names cannot contain < > % & \\ ? or /; rename the tag", key, True)
            )
        if key.startswith("aicluster:"):
            problems.append(
                Problem(("tags", key), "the aicluster: prefix is reserved for tags the toolkit sets", key, True)
            )
    return problems


# Slurm names aicluster gives a stack with sites: its default partition (every node; plain sbatch fills the
# site first and bursts by weight)
HYBRID_PARTITION = "hybrid"


def _count_pool_node(name: str, spec: ClusterSpec) -> str | None:
    """The count-only pool whose generated node names (`<pool>-NNN`) include `name`, if any."""
    for pool in spec.pools:
        count = pool.node_count if isinstance(pool, OnpremPool) and not pool.hosts else None
        if not isinstance(pool, OnpremPool):
            count = getattr(pool, "nodes", None)
        if count is None or not name.startswith(f"{pool.name}-"):
            continue
        index = name[len(pool.name) + 1 :]
        width = max(3, len(str(count - 1)))
        if index.isdigit() and len(index) == width and int(index) < count:
            return pool.name
    return None


def _site_problems(spec: ClusterSpec, left_out: frozenset[str] = frozenset()) -> list[Problem]:
    """Sites and the on-prem pools and controller that name them: known sites, unique hosts (and no host named
    like another pool's generated node), hosts inside their site's CIDRs, site CIDRs that overlap neither each
    other nor a pinned cloud network, and Slurm names that stay distinct. `left_out`: top-level parts the parser
    left out because they hold problems of their own (nothing is judged against what is not there)."""
    problems = _duplicates("sites", "name", [site.name for site in spec.sites], "site names must be unique")
    pool_names = {p.name for p in spec.pools}
    for i, site in enumerate(spec.sites):
        if site.name in pool_names:
            problems.append(
                Problem(
                    ("sites", i, "name"),
                    "a pool has this name too; Slurm's topology names each site's and each pool's switch tree after "
                    "it, so they must differ: rename the site or the pool",
                    site.name,
                    True,
                )
            )
    if spec.sites:
        for i, pool in enumerate(spec.pools):
            if pool.name == HYBRID_PARTITION:
                problems.append(
                    Problem(
                        ("pools", i, "name"),
                        f"a stack with sites has a default Slurm partition named {HYBRID_PARTITION} (every node; "
                        "jobs fill the site first and burst into the clouds): rename the pool",
                        pool.name,
                        True,
                    )
                )
    sites = {site.name: site for site in spec.sites}
    names: dict[str, tuple[str | int, ...]] = {}
    addresses: dict[str, tuple[str | int, ...]] = {}

    def host(path: Path, name: str, address: str | None, site: str, key: str = "name") -> list[Problem]:
        found: list[Problem] = []
        if name in names:
            found.append(
                Problem(
                    (*path, key),
                    f"{format_path(names[name])} already has this name; host names must be unique",
                    name,
                    True,
                )
            )
        elif (pool := _count_pool_node(name, spec)) is not None:
            found.append(
                Problem(
                    (*path, key),
                    f"pool {pool} names its nodes {pool}-NNN, and this is one of them: Slurm needs every node name "
                    "once; rename the host",
                    name,
                    True,
                )
            )
        names.setdefault(name, (*path, key))
        if address is None:
            return found
        if address in addresses:
            found.append(
                Problem(
                    (*path, "address"),
                    f"{format_path(addresses[address])} already has this address; give each host its own",
                    address,
                    True,
                )
            )
        addresses.setdefault(address, (*path, "address"))
        if site in sites:
            cidrs = sites[site].network.cidrs
            if not any(ipaddress.IPv4Address(address) in ipaddress.IPv4Network(c) for c in cidrs):
                found.append(
                    Problem(
                        (*path, "address"),
                        f"not inside site {site}'s CIDRs ({', '.join(cidrs)}); use an address of the site's network, "
                        "or add its range to the site's network.cidrs",
                        address,
                        True,
                    )
                )
        return found

    for i, pool in enumerate(spec.pools):
        if not isinstance(pool, OnpremPool):
            continue
        if pool.site not in sites and "sites" not in left_out:
            known = list(sites)
            problems.append(
                Problem(
                    ("pools", i, "site"),
                    f"no site of this name under sites; known: {', '.join(known)}"
                    if known
                    else "the stack has no sites: describe the data centre under sites (name, network, power, "
                    "carbon_g_per_kwh)",
                    pool.site,
                    True,
                    did_you_mean(pool.site, known),
                )
            )
        elif pool.site in sites and pool.fabric is None and sites[pool.site].fabric is None:
            problems.append(
                Problem(
                    ("pools", i, "fabric"),
                    f"neither the pool nor site {pool.site} describes the compute fabric: give fabric (kind, "
                    "link_gbps, switch_radix) on the pool or the site",
                )
            )
        for j, h in enumerate(pool.hosts):
            problems.extend(host(("pools", i, "hosts", j), h.name, h.address, pool.site))
            bmc = bmc_address(h.bmc) if h.bmc is not None else None
            if bmc is not None and pool.site in sites:
                cidrs = sites[pool.site].network.cidrs
                if not any(bmc in ipaddress.IPv4Network(c) for c in cidrs):
                    problems.append(
                        Problem(
                            ("pools", i, "hosts", j, "bmc"),
                            f"the BMC address {bmc} is not inside site {pool.site}'s CIDRs ({', '.join(cidrs)}): use "
                            "the BMC's address on the site's network, or add its range to the site's network.cidrs",
                            h.bmc,
                            True,
                        )
                    )
    problems.extend(spec.scheduler.site_problems(spec, left_out, host))
    blocks = [
        (("sites", i, "network", "cidrs", j), c)
        for i, site in enumerate(spec.sites)
        for j, c in enumerate(site.network.cidrs)
    ]
    pinned = [(("network", "cidrs", k), v) for k, v in spec.network.cidrs.items()]
    for n, (path, cidr) in enumerate(blocks):
        net = ipaddress.IPv4Network(cidr)
        for other_path, other in [*blocks[:n], *pinned]:
            if net.overlaps(ipaddress.IPv4Network(other)):
                problems.append(
                    Problem(
                        path,
                        f"overlaps {format_path(other_path)} ({other}); every site and cloud network needs its own "
                        "range, or the VPNs between them cannot route",
                        cidr,
                        True,
                    )
                )
    return problems


def _workload_problems(spec: ClusterSpec, given: Sequence[str] = ()) -> list[Problem]:
    """Workloads: unique names, and every pool a workload names is a pool of this stack (`given`: every pool name
    as written, those left out for their own problems included)."""
    problems = _duplicates("workloads", "name", [w.name for w in spec.workloads], "workload names must be unique")
    names = list(dict.fromkeys([*given, *(p.name for p in spec.pools)]))
    for i, wl in enumerate(spec.workloads):
        for j, pool in enumerate(wl.pools):
            if pool not in names:
                problems.append(
                    Problem(
                        ("workloads", i, "pools", j),
                        "no pool of this stack has this name; allowed: " + ", ".join(names),
                        pool,
                        True,
                        did_you_mean(pool, names),
                    )
                )
        for j, pool in enumerate(wl.pools):
            if pool in wl.pools[:j]:
                problems.append(
                    Problem(
                        ("workloads", i, "pools", j),
                        f"duplicate of workloads[{i}].pools[{wl.pools.index(pool)}]; list each pool once",
                        pool,
                        True,
                    )
                )
    return problems


class ClusterSpec(Strict):
    """One AI cluster: pools of accelerator nodes, storage, a scheduler, and its guardrails."""

    name: Annotated[
        str,
        Field(
            pattern=DNS_LABEL_RE,
            max_length=40,
            description="Cluster name, a lowercase DNS label (e.g. `llm-train`).",
        ),
    ]
    tags: Annotated[
        dict[TagKey, TagValue],
        Field(description="Tags/labels for every resource (e.g. `{owner: ml-platform, cost-center: '4711'}`)."),
    ] = {}
    sites: Annotated[list[Site], Field(max_length=64, description="Owned data centres that on-prem pools run at.")] = []
    pools: Annotated[list[Pool], Field(min_length=1, description="Node pools; at least one.")]
    storage: Annotated[list[Storage], Field(description="Shared file systems.")] = []
    scheduler: Annotated[Scheduler, Field(description="Workload manager.")] = SlurmScheduler(kind="slurm")
    budgets: Annotated[Budgets, Field(description="Cost and power ceilings the policy pack enforces.")] = Budgets()
    compliance: Annotated[Compliance, Field(description="Frameworks, data residency and waivers.")] = Compliance()
    pricing: Annotated[Pricing, Field(description="Negotiated rates replacing catalog prices.")] = Pricing()
    network: Annotated[NetworkSpec, Field(description="Address plan for the cloud networks.")] = NetworkSpec()
    access: Annotated[Access, Field(description="Admin account and SSH keys for the nodes.")] = Access()
    monitoring: Annotated[
        Monitoring, Field(description="Where the cluster's Prometheus runs: on the controller, or the cloud's service.")
    ] = Monitoring()
    workloads: Annotated[
        list[Workload],
        Field(
            max_length=256,
            description="Training jobs the cluster is for; the planner sizes each on its pools (layout, memory, "
            "step time, days, cost, checkpoints).",
        ),
    ] = []

    @model_validator(mode="after")
    def _cross_field(self, info: ValidationInfo) -> ClusterSpec:
        problems = [
            *_duplicates("pools", "name", [p.name for p in self.pools], "pool names must be unique"),
            *_duplicates("storage", "name", [st.name for st in self.storage], "file-system names must be unique"),
            *_duplicates("storage", "mount", [st.mount for st in self.storage], "two file systems cannot share it"),
        ]
        providers = [p.provider for p in self.pools]
        given = (info.context or {}).get("given_pools") or ()
        given_providers = {provider for _, provider in given} | set(providers)
        for i, st in enumerate(self.storage):
            outer = next((j for j, o in enumerate(self.storage) if st.mount.startswith(o.mount + "/")), None)
            if outer is not None:
                problems.append(
                    Problem(
                        ("storage", i, "mount"),
                        f"inside storage[{outer}].mount ({self.storage[outer].mount}); mounting one file system "
                        "inside another hides it until the outer one is mounted; use a separate path",
                        st.mount,
                        True,
                    )
                )
            if st.provider == "onprem" or (st.provider is None and set(providers) == {"onprem"}):
                problems.append(
                    Problem(
                        ("storage", i, "provider"),
                        "aicluster builds managed file systems in a cloud; a site's own file systems (Lustre, "
                        "GPFS, NFS appliances) stay with the site: mount them with your site tooling, or put this "
                        "file system in a cloud the stack uses",
                        st.provider or "onprem",
                        True,
                    )
                )
            elif st.provider is not None and st.provider not in given_providers:
                problems.append(
                    Problem(
                        ("storage", i, "provider"),
                        "no pool runs on this provider; allowed: " + ", ".join(sorted(set(providers))),
                        st.provider,
                        True,
                    )
                )
        problems.extend(_tag_problems(self.tags, set(providers)))
        left_out = (info.context or {}).get("left_out", frozenset())
        problems.extend(_site_problems(self, frozenset(left_out)))
        problems.extend(self.scheduler.problems(self))
        problems.extend(_workload_problems(self, [name for name, _ in given]))
        if problems:
            raise _Problems(problems)
        return self


# ------------------------------------------------------------------------------------------------
# Parsing with readable errors
# ------------------------------------------------------------------------------------------------


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _model_at(path: Sequence[str | int], data: Any) -> type[BaseModel] | None:
    """The model class that validates the mapping at `path` (for 'unknown key' hints)."""
    model: type[BaseModel] | None = ClusterSpec
    node = data
    for part in path:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        fld = model.model_fields.get(part)
        node = node.get(part) if isinstance(node, Mapping) else None
        if fld is None:
            return None
        model = _resolve_model(fld.annotation, node)
    return model


def _resolve_model(annotation: Any, node: Any) -> type[BaseModel] | None:
    import typing

    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _resolve_model(args[0], node)
    candidates = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
    if origin in (list, tuple) and args:
        first = node[0] if isinstance(node, list) and node else None
        return _resolve_model(args[0], first)
    if len(candidates) == 1:
        return candidates[0]
    for cand in candidates:  # discriminated union: pick by the tag value present in the data
        for tag in ("provider", "kind"):
            fld = cand.model_fields.get(tag)
            if fld is not None and isinstance(node, Mapping) and node.get(tag) in typing.get_args(fld.annotation):
                return cand
    for a in args:
        found = _resolve_model(a, node)
        if found is not None:
            return found
    return None


_SIMPLE_MESSAGES = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be greater than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": 'must be a string (quote numbers, e.g. "4711")',
    "string_too_long": "must be at most {max_length} characters",
    "string_too_short": "must be at least {min_length} characters",
    "too_short": "needs at least {min_length} item(s)",
    "too_long": "allows at most {max_length} item(s)",
}


def _clean_loc(raw_loc: Sequence[str | int], data: Any, etype: str) -> Path:
    """Map pydantic's error location to the user's field path.

    pydantic adds union member tags and validator markers (`function-after[...]`) to the location
    (`pools.0.aws.zone`): keep only the parts that are real keys or indexes of the data (plus a final
    missing/unknown key, which may itself look like a marker: a user's key `function-`)."""
    loc = list(raw_loc)
    clean: list[str | int] = []
    node = data
    for k, part in enumerate(loc):
        if isinstance(node, list) and isinstance(part, int):
            clean.append(part)
            node = node[part] if part < len(node) else None
        elif isinstance(node, Mapping) and part in node:
            clean.append(part)
            node = node[part]
        elif isinstance(node, Mapping) and etype in {"missing", "extra_forbidden"} and k == len(loc) - 1:
            clean.append(part)
            node = None
        # else: a union/discriminator tag or a validator marker, not a real key
    return tuple(clean)


# What pydantic lists as a Literal's choices: "'auto', 0, 1, 2 or 3" (strings quoted, numbers bare).
_CHOICE = re.compile(r"'([^']*)'|(-?\d+(?:\.\d+)?)|\b(True|False|None)\b")
_QUOTED_WHOLE = re.compile(r"-?\d{1,30}")


def _choices(expected: str) -> list[str]:
    return ["".join(m) for m in _CHOICE.findall(expected)]


def _unquote_hint(value: Any, fits: Callable[[int], bool] = lambda _: True) -> str | None:
    """A quoted whole number (`"4"`) where the field takes the number: say to drop the quotes, as the spec never
    reads a string as a number (YAML `4` is the number; `"4"` is text)."""
    if isinstance(value, str) and _QUOTED_WHOLE.fullmatch(value) and fits(int(value)):
        return f"write {int(value)} without quotes"
    return None


def _integer_bounds(path: Path, data: Any) -> tuple[Any, Any] | None:
    """(minimum, maximum) of the whole-number branch of the field at `path`, from its JSON schema; None when it
    has none (or the field cannot be found)."""
    parent = _model_at(path[:-1], data) if path and isinstance(path[-1], str) else None
    if parent is None:
        return None
    schema = parent.model_json_schema()["properties"].get(str(path[-1]), {})
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "integer":
            return branch.get("minimum"), branch.get("maximum")
    return None


def _choice_or_number(errors: list[Mapping[str, Any]], path: Path, data: Any) -> Problem:
    """One problem for a value that fits neither branch of `Literal[...] | int` (`pipeline_parallel: auto` or a
    count): pydantic reports each branch, which would read as two mistakes."""
    value = errors[0].get("input")
    choices = [c for e in errors if e["type"] == "literal_error" for c in _choices(str(e["ctx"]["expected"]))]
    bounds = _integer_bounds(path, data)
    if bounds is not None:
        low, high = bounds
        number = "a whole number" + (
            f" from {low} to {high}"
            if low is not None and high is not None
            else (f" at least {low}" if low is not None else (f" at most {high}" if high is not None else ""))
        )
        hint = _unquote_hint(value, lambda n: (low is None or n >= low) and (high is None or n <= high))
    else:
        others = [_problem_from_error(e, data).message for e in errors if e["type"] != "literal_error"]
        number = "; or ".join(m.removeprefix("must be ") for m in others) or "a number"
        hint = _unquote_hint(value)
    if hint is None and isinstance(value, str):
        hint = did_you_mean(value, choices)
    return Problem(path, f"must be {', '.join(choices)} or {number}", value, True, hint)


def _problem_from_error(err: Mapping[str, Any], data: Any) -> Problem:
    etype = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    path = _clean_loc(err["loc"], data, etype)

    if etype == "extra_forbidden":
        parent = _model_at(path[:-1], data)
        allowed = _allowed_keys(parent) if parent else []
        key = str(path[-1])
        hint = did_you_mean(key, allowed)
        return Problem(path, f"unknown key; allowed keys: {', '.join(allowed)}", key, True, hint)
    if etype == "missing":
        parent = _model_at(path[:-1], data)
        desc = ""
        if parent is not None:
            fld = parent.model_fields.get(str(path[-1]))
            if fld is not None and fld.description:
                desc = f": {fld.description}"
        return Problem(path, f"required field is missing{desc}")
    if etype == "literal_error":
        expected = _choices(str(ctx.get("expected", "")))
        hint = _unquote_hint(value, lambda n: str(n) in expected)
        if hint is None and isinstance(value, str):
            hint = did_you_mean(value, expected)
        return Problem(path, f"allowed: {', '.join(expected)}", value, True, hint)
    if etype in {"union_tag_invalid", "union_tag_not_found"}:
        tag = str(ctx.get("discriminator", "")).strip("'")
        expected = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        tag_value = value.get(tag) if isinstance(value, Mapping) else None
        if etype == "union_tag_not_found":
            return Problem((*path, tag), f"required field is missing; allowed: {', '.join(expected)}")
        hint = did_you_mean(tag_value, expected) if isinstance(tag_value, str) else None
        return Problem((*path, tag), f"allowed: {', '.join(expected)}", tag_value, True, hint)
    if etype == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        # A "public key" that is not one may be a pasted private key, and a BMC URL with a user part may carry
        # its password: never echo either.
        # The field that names a Pulumi secret is where a password gets pasted by mistake: never echo it either.
        # A BMC URL or user name shows what a password cannot be in: the rest is masked (`redfish://***@host`).
        hint = _PATTERN_HINTS.get(pattern, "is not of the form this field takes (docs/spec-reference.md shows it)")
        masked = {BMC_RE: mask_bmc_url, BMC_USER_RE: mask_bmc_user}.get(pattern)
        if masked is not None and isinstance(value, str) and (hidden := masked(value)) is not None:
            return Problem(path, f"{hint}; the part that may hold a password is masked (***)", hidden, True)
        return Problem(path, hint, value, pattern not in (_SSH_KEY, SECRET_NAME_RE, ALERT_SECRET_RE, WEBHOOK_URL_RE))
    simple = _SIMPLE_MESSAGES.get(etype)
    if simple is not None:
        shown = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in ctx.items()}
        hint = _unquote_hint(value) if etype in {"int_type", "int_parsing"} else None
        hint = hint or _unit_hint(path, value, etype, ctx)
        return Problem(path, simple.format(**shown), value, True, hint)
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    msg = msg[0].lower() + msg[1:] if msg else msg
    if etype in {"dict_type", "model_type", "model_attributes_type"}:
        return Problem(path, "must be a mapping (key: value)", value, True)
    if etype == "list_type":
        return Problem(path, "must be a list", value, True)
    if etype == "count":  # a workload's count: a list or mapping there is a mistake worth naming ("got a list")
        return Problem(path, msg, value, True)
    return Problem(path, msg, value, not isinstance(value, Mapping | list))


# what a number field's name says its unit is, and the suffixes people write for it that convert exactly (TB, PB
# and GB are powers of 1000 and get only the plain "write a number of TiB")
_UNIT_OF = {
    "_usd": ("US dollars", {"K": 1e3, "k": 1e3, "M": 1e6, "m": 1e6, "B": 1e9, "b": 1e9}),
    "_tib": ("TiB", {"TiB": 1, "PiB": 1024, "GiB": 1 / 1024}),
}


def _unit_hint(path: Path, value: Any, etype: str, ctx: Mapping[str, Any]) -> str | None:
    """How to write a number whose field has a unit in its name (`monthly_usd`, `capacity_tib`): a number with a
    suffix (`4M`, `500TiB`) as the plain number, and a size over the limit that reads as GiB as the TiB it is."""
    field = str(path[-1]) if path else ""
    unit = next((u for end, u in _UNIT_OF.items() if field.endswith(end)), None)
    if unit is None:
        return None
    name, suffixes = unit
    if etype == "float_parsing" and isinstance(value, str):
        m = re.fullmatch(r"\s*(\d{1,15}(?:\.\d{1,6})?)\s*([A-Za-z]{1,3})\s*", value[:40])
        if m is not None and m.group(2) in suffixes:
            number = float(m.group(1)) * suffixes[m.group(2)]
            written = f"{number:.0f}" if number.is_integer() else f"{number:g}"
            return f"write {written}: {field} is a plain number of {name}"
        return f"write a plain number of {name}"
    if etype == "less_than_equal" and name == "TiB" and isinstance(value, int | float) and not isinstance(value, bool):
        limit = ctx.get("le")
        if isinstance(limit, int | float) and value / 1024 <= limit:
            return f"{field} is in TiB: {value:g} GiB is {value / 1024:g} TiB"
    return None


def _union_branch(err: Mapping[str, Any], data: Any) -> Path | None:
    """The field's path when `err` is one branch's error of a plain union at that field (its location ends in
    pydantic's branch tag, e.g. `literal['auto']` or `constrained-int`), else None."""
    if err["type"] in {"missing", "extra_forbidden"}:
        return None
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    path = _clean_loc(err["loc"], data, err["type"])
    if not loc or not path or not isinstance(loc[-1], str) or loc[-1] == path[-1] or len(loc) != len(path) + 1:
        return None
    return path


def _problems_of(exc: ValidationError, data: Any) -> list[Problem]:
    problems: list[Problem] = []
    errors = exc.errors(include_url=False)
    branches: dict[Path, list[Mapping[str, Any]]] = {}
    for err in errors:
        at = _union_branch(err, data)
        if at is not None:
            branches.setdefault(at, []).append(err)
    merged: set[Path] = set()
    for err in errors:
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, _Problems):
            base = _clean_loc(err["loc"], data, err["type"])
            problems.extend(Problem((*base, *p.path), p.message, p.value, p.has_value, p.hint) for p in inner.problems)
            continue
        at = _union_branch(err, data)
        group = branches.get(at, []) if at is not None else []
        if at is not None and len(group) > 1 and any(e["type"] == "literal_error" for e in group):
            if at not in merged:  # `auto` or a number: one problem for the one value
                merged.add(at)
                problems.append(_choice_or_number(group, at, data))
            continue
        problems.append(_problem_from_error(err, data))
    return problems


# Lists whose bad items are left out so that the rest can still be checked.
_ITEM_LISTS = ("pools", "storage", "sites", "workloads")


@dataclass
class Checked:
    """What validating a cluster found: every problem, and a spec of the parts that are right (or None).

    pydantic runs a model's cross-field rules only once its fields are valid, and the planner needs a valid
    spec: so a mistake in one pool would hide a tag collision and every catalog problem. Validation is
    repeated with the wrong parts left out (a bad pool or file system, a bad section back to its default)
    until the rest validates; `spec` is that rest, for the planner, and `original` maps a path in it back to
    the user's (list indexes shift when items are left out)."""

    spec: ClusterSpec | None
    problems: list[Problem]
    kept: dict[str, list[int]] = field(default_factory=dict)
    items_left_out: bool = False  # a pool or file system was left out of `spec`

    def original(self, path: Path) -> Path:
        if len(path) >= 2 and isinstance(path[0], str) and isinstance(path[1], int) and path[0] in self.kept:
            kept = self.kept[path[0]]
            if 0 <= path[1] < len(kept):
                return (path[0], kept[path[1]], *path[2:])
        return path


def check_cluster(data: Any) -> Checked:
    """Validate the `aicluster:cluster` mapping, collecting every problem (see Checked)."""
    if not isinstance(data, Mapping):
        problem = Problem((), "aicluster:cluster must be a mapping with at least `name` and `pools`", data, True)
        return Checked(None, [problem])
    work: dict[Any, Any] = dict(data)
    kept = {k: list(range(len(work[k]))) for k in _ITEM_LISTS if isinstance(work.get(k), list)}
    checked = Checked(None, [], kept)
    left_out: set[str] = set()
    for _ in range(8):  # each round leaves out at least one part; a few rounds reach every layer
        try:
            context = {"left_out": frozenset(left_out), "given_pools": _given_pools(data)}
            checked.spec = ClusterSpec.model_validate(work, context=context)
            break
        except ValidationError as exc:
            found = _problems_of(exc, work)
        checked.problems.extend(
            Problem(checked.original(p.path), p.message, p.value, p.has_value, p.hint) for p in found
        )
        left_out.update(str(p.path[0]) for p in found if p.path)
        if not _leave_out(work, kept, [p.path for p in found]):
            break
    checked.items_left_out = any(len(kept[k]) != len(data[k]) for k in kept)
    if checked.problems:  # with other problems, the plan (which says this too) does not run: say it here
        checked.problems.extend(_region_problems(data))
    if checked.spec is None and _is_text_map(data.get("tags")):
        # the cluster's tag rules need only the tags and the providers of the pools
        pools = data.get("pools")
        providers = {
            p.get("provider")
            for p in (pools if isinstance(pools, list) else [])
            if isinstance(p, Mapping) and isinstance(p.get("provider"), str)
        }
        checked.problems.extend(_tag_problems(data["tags"], providers))
    checked.problems = _dedupe(checked.problems)
    return checked


def one_network_message(provider: str, region: str, first: str) -> str:
    """Why a second region of one provider is refused (the spec says it of pools, the plan of storage and
    controllers): one wording for both."""
    return (
        f"the cluster already has its {provider} network in {region} ({first}); networks in several regions of one "
        f"provider need peering, which aicluster does not build yet: keep the {provider} pools, storage and "
        "controller in one region, or split the cluster into two stacks"
    )


def _region_problems(data: Mapping[Any, Any]) -> list[Problem]:
    """Cloud pools of one provider in two regions, from the pools as written (a pool left out for a problem of its
    own still fixes its provider's region): the plan's network check, said with the other problems of the stack."""
    pools = data.get("pools")
    first: dict[str, tuple[str, int]] = {}
    problems = []
    for i, p in enumerate(pools if isinstance(pools, list) else []):
        if not isinstance(p, Mapping):
            continue
        provider, region = p.get("provider"), p.get("region")
        if provider not in ("aws", "azure", "gcp") or not isinstance(region, str):
            continue
        if provider in first and first[provider][0] != region:
            where = format_path(("pools", first[provider][1], "region"))
            problems.append(
                Problem(("pools", i, "region"), one_network_message(provider, first[provider][0], where), region, True)
            )
        first.setdefault(provider, (region, i))
    return problems


def _given_pools(data: Mapping[Any, Any]) -> tuple[tuple[str, str], ...]:
    """(name, provider) of every pool as written, a pool left out for its own problems included: the checks that
    look a pool up by name (workloads) or provider (storage) judge against what the stack says, and do not report
    a second, false problem for a pool whose own is reported already."""
    pools = data.get("pools")
    return tuple(
        (p["name"], str(p.get("provider", "")))
        for p in (pools if isinstance(pools, list) else [])
        if isinstance(p, Mapping) and isinstance(p.get("name"), str)
    )


def _is_text_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _leave_out(work: dict[Any, Any], kept: dict[str, list[int]], paths: list[Path]) -> bool:
    """Leave out the parts the problems are in; False when nothing more can be left out."""
    drop: dict[str, set[int]] = {}
    changed = False
    for path in paths:
        top = path[0] if path else None
        if top in kept and len(path) >= 2 and isinstance(path[1], int):
            drop.setdefault(str(top), set()).add(path[1])
        elif top == "name":
            changed = changed or work.get("name") != "cluster"
            work["name"] = "cluster"
        elif top is None or top == "pools":  # no pools, or not a list of them: nothing to check further
            return False
        elif top in work:
            del work[top]
            changed = True
    for key, indexes in drop.items():
        work[key] = [item for i, item in enumerate(work[key]) if i not in indexes]
        kept[key] = [k for i, k in enumerate(kept[key]) if i not in indexes]
        changed = True
    return changed and bool(work.get("pools"))


def parse_cluster(data: Any, source: str, lines: Mapping[Path, int] | None = None) -> ClusterSpec:
    """Validate the `aicluster:cluster` mapping. Raises SpecError listing every problem."""
    checked = check_cluster(data)
    if checked.problems or checked.spec is None:
        raise SpecError(source, checked.problems, lines or {})
    return checked.spec


def model_problems(model: type[BaseModel], data: Any, path: Path = ()) -> list[Problem]:
    """Where `data` breaks `model` (a Waiver from another input, a Budgets), in the words the stack's messages
    use, each located under `path`; empty when it is valid."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [Problem((*path, *p.path), p.message, p.value, p.has_value, p.hint) for p in _problems_of(exc, data)]
    return []


def number_bounds(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """The JSON Schema bounds (minimum, maximum, ...) the model puts on each of its number fields."""
    keys = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    out: dict[str, dict[str, Any]] = {}
    for name, schema in model.model_json_schema()["properties"].items():
        for branch in schema.get("anyOf", [schema]):
            if branch.get("type") in ("number", "integer"):
                out[name] = {k: branch[k] for k in keys if k in branch}
    return out


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[Path, str]] = set()
    out = []
    for p in problems:
        key = (p.path, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def json_schema() -> dict[str, Any]:
    """The published JSON schema of `aicluster:cluster`."""
    schema = ClusterSpec.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://aicluster.dev/schema/cluster.schema.json"
    schema["title"] = "aicluster:cluster"
    return schema


__all__ = [
    "BMC_RE",
    "DATE_RE",
    "DNS_LABEL_RE",
    "GCP_LABEL_MAX",
    "GCP_REGION_RE",
    "GCP_RESERVATION_RE",
    "GCP_ZONE_RE",
    "INSTANCE_TYPE_RE",
    "MAX_SHOWN",
    "PLACEMENT_GROUP_RE",
    "POLICY_NAME_RE",
    "RACK_RE",
    "REGION_RE",
    "SECRET_NAME_RE",
    "SKU_RE",
    "SUPPORTED_PROVIDERS",
    "TPU_TYPE_RE",
    "ZONE_RE",
    "Access",
    "Alerts",
    "AwsMarket",
    "AwsPool",
    "AzureMarket",
    "AzurePool",
    "BgpAsn",
    "Budgets",
    "Checked",
    "Cidr",
    "ClusterSpec",
    "Compliance",
    "Controller",
    "Count",
    "DnsLabel",
    "Framework",
    "GcpMarket",
    "GcpPool",
    "HardwareCost",
    "Host",
    "InstanceType",
    "KubernetesScheduler",
    "LustreStorage",
    "Market",
    "Monitoring",
    "MountPath",
    "NetworkSpec",
    "NfsStorage",
    "OnpremFabric",
    "OnpremPool",
    "Path",
    "Pool",
    "PriceOverride",
    "Pricing",
    "PrivateIp",
    "Problem",
    "Provider",
    "PublicIp",
    "RegionName",
    "Scheduler",
    "Site",
    "SiteNetwork",
    "SitePower",
    "SlurmScheduler",
    "SpecError",
    "Storage",
    "Strict",
    "TagKey",
    "TagValue",
    "Waiver",
    "ZoneName",
    "check_cluster",
    "clip",
    "did_you_mean",
    "format_path",
    "gcp_label",
    "gcp_labels",
    "json_schema",
    "model_problems",
    "number_bounds",
    "one_network_message",
    "parse_cluster",
    "pool_fabric",
]
