"""Owned sites and on-prem pools in the stack file."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .base import (
    _RFC1918,
    Cidr,
    Count,
    DnsLabel,
    InstanceType,
    PoolRollout,
    Problem,
    Rollout,
    Strict,
    _pattern,
    _Problems,
)

# ------------------------------------------------------------------------------------------------
# On-prem sites and pools
# ------------------------------------------------------------------------------------------------


def _private_ip(value: str) -> str:
    try:
        addr = ipaddress.IPv4Address(value)
    except ValueError:
        raise PydanticCustomError("ip", "not an IPv4 address (e.g. 10.200.1.11)", {}) from None
    if not any(addr in block for block in _RFC1918):
        raise PydanticCustomError(
            "ip", "must be a private address (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16) of the site's network", {}
        )
    return str(addr)


def _public_ip(value: str) -> str:
    try:
        addr = ipaddress.IPv4Address(value)
    except ValueError:
        raise PydanticCustomError("ip", "not an IPv4 address (e.g. 203.0.113.10)", {}) from None
    if addr.is_multicast or addr.is_reserved or not (addr.is_global or _documentation(addr)):
        raise PydanticCustomError(
            "ip",
            "must be the public IPv4 address the site's VPN device answers on (the clouds' VPN gateways dial it)",
            {},
        )
    return str(addr)


# RFC 5737 documentation ranges: accepted as endpoints so that examples never name a real address
_DOCUMENTATION = tuple(ipaddress.IPv4Network(b) for b in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))


def _documentation(addr: ipaddress.IPv4Address) -> bool:
    return any(addr in block for block in _DOCUMENTATION)


AS_TRANS = 23456  # RFC 6793: stands in for a 4-byte ASN towards 2-byte speakers; never a real AS


def _not_as_trans(value: int) -> int:
    if value == AS_TRANS:
        raise PydanticCustomError(
            "asn",
            "is AS_TRANS (RFC 6793), which stands in for 4-byte ASNs and is never a real AS: give the site's ASN",
            {},
        )
    return value


PrivateIp = Annotated[str, AfterValidator(_private_ip)]
PublicIp = Annotated[str, AfterValidator(_public_ip)]
# BGP: 2-byte and 4-byte ASNs; 0, 23456 (AS_TRANS) and 4294967295 are reserved (RFC 7607, 6793, 7300)
BgpAsn = Annotated[int, Field(strict=True, ge=1, le=4_294_967_294), AfterValidator(_not_as_trans)]
BMC_RE = _pattern(
    r"^(redfish|ipmi)://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]{0,512})?$",
    "must be a BMC endpoint: redfish:// or ipmi://, a host and an optional port and path, and no user or password "
    "(e.g. redfish://10.201.0.11/redfish/v1/Systems/1 or ipmi://10.201.0.11:623)",
)
# bmc_secret NAMES a secret: the config key the stack file lists it under (`pulumi config set --secret
# aicluster:bmcPassword` writes `aicluster:bmcPassword: {secure: ...}`), in the program's own namespace, as the
# cluster is (`aicluster:cluster`). A bare name (`bmcPassword`) is refused: a password fits that shape as well.
SECRET_NAMESPACE = "aicluster"
SECRET_NAME_RE = _pattern(
    rf"^{SECRET_NAMESPACE}:[A-Za-z][A-Za-z0-9_.-]{{0,127}}$",
    f"must be the config key of the Pulumi secret that holds the BMC password, {SECRET_NAMESPACE}: and a name (e.g. "
    f"{SECRET_NAMESPACE}:bmcPassword, set with `pulumi config set --secret {SECRET_NAMESPACE}:bmcPassword`); what "
    "was given is not shown, in case it is the password itself",
)
BMC_USER_RE = _pattern(
    r"^[A-Za-z0-9._-]{1,64}$", "must be a BMC user name: letters, digits, '.', '_' and '-' (e.g. admin)"
)
RACK_RE = _pattern(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$", "must be a rack name: letters, digits, '.', '_', '-' (e.g. r01)"
)
_CLEAR_SECRETS = ("password", "passwd", "secret_value", "credential_value", "token")


class Host(Strict):
    """One owned node: its name, management address, BMC and place in the data centre."""

    name: Annotated[DnsLabel, Field(description="Host name, unique in the cluster (e.g. `dgx001`).")]
    address: Annotated[
        PrivateIp, Field(description="Management address, inside the site's CIDRs (e.g. `10.200.1.11`).")
    ]
    bmc: Annotated[
        str | None,
        Field(
            pattern=BMC_RE,
            description="BMC endpoint: `redfish://host/redfish/v1/Systems/1` or `ipmi://host:623`. An IPv4 address "
            "must be inside the site's CIDRs and not link-local (cloud metadata), loopback, multicast or reserved; a "
            "host name cannot be checked offline (it resolves only at the site).",
        ),
    ] = None
    bmc_username: Annotated[
        str | None,
        Field(
            pattern=BMC_USER_RE,
            description="BMC user name (not secret).",
        ),
    ] = None
    bmc_secret: Annotated[
        str | None,
        Field(
            pattern=SECRET_NAME_RE,
            description="Config key of the Pulumi secret that holds the BMC password (e.g. `aicluster:bmcPassword`, "
            "set with `pulumi config set --secret aicluster:bmcPassword`); a password itself is refused, and so is a "
            "key whose value the stack file holds in clear text.",
        ),
    ] = None
    rack: Annotated[str | None, Field(pattern=RACK_RE, description="Rack the host is in (e.g. `r01`).")] = None
    u: Annotated[Count | None, Field(ge=1, le=60, description="Lowest rack unit the host occupies (e.g. `10`).")] = None

    @model_validator(mode="before")
    @classmethod
    def _no_clear_password(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            clear = [k for k in data if isinstance(k, str) and any(w in k.lower() for w in _CLEAR_SECRETS)]
            if clear:
                raise _Problems(
                    [
                        Problem(
                            (k,),
                            "a BMC password in clear text is refused (stack files are read, copied and committed): "
                            "store it as a Pulumi secret (pulumi config set --secret aicluster:bmcPassword) and give "
                            "its key in bmc_secret",
                        )
                        for k in clear
                    ]
                )
        return data

    @model_validator(mode="after")
    def _bmc_pair(self) -> Host:
        problems = []
        if self.bmc_secret is not None and self.bmc is None:
            problems.append(Problem(("bmc",), "bmc_secret is given, so give the BMC endpoint it opens too"))
        if self.bmc_secret == f"{SECRET_NAMESPACE}:cluster":
            problems.append(
                Problem(
                    ("bmc_secret",),
                    f"{SECRET_NAMESPACE}:cluster is the cluster description, not a secret: name the key that holds "
                    f"the BMC password (e.g. {SECRET_NAMESPACE}:bmcPassword, set with `pulumi config set --secret "
                    f"{SECRET_NAMESPACE}:bmcPassword`)",
                )
            )
        if self.bmc is not None:
            problems.extend(Problem(("bmc",), why, self.bmc, True) for why in bmc_problems(self.bmc))
        if problems:
            raise _Problems(problems)
        return self


_BMC_AUTHORITY = re.compile(r"^(?:redfish|ipmi)://([A-Za-z0-9.-]+)(?::([0-9]+))?")


def bmc_address(bmc: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a BMC endpoint (one that matches BMC_RE) names, or None for a host name."""
    found = _BMC_AUTHORITY.match(bmc)
    try:
        return ipaddress.IPv4Address(found.group(1)) if found else None
    except ValueError:
        return None


def bmc_problems(bmc: str) -> list[str]:
    """What is wrong with the host and port of a BMC endpoint that matches BMC_RE: a port out of range, an address
    a BMC never has (link-local, where clouds serve instance metadata; loopback; multicast; unspecified; reserved),
    or an address written in a form that resolvers read differently (127.1, 2130706433, 0177.0.0.1)."""
    found = _BMC_AUTHORITY.match(bmc)
    if found is None:
        return []
    host, port = found.group(1), found.group(2)
    problems = []
    if port is not None and not 1 <= int(port) <= 65535:
        problems.append(f"port {int(port)} is not a port (1-65535; IPMI uses 623, Redfish 443)")
    name = host.lower().removesuffix(".")
    last = name.rsplit(".", 1)[-1]
    fix = "give the BMC's own address on the site's management network"
    if name == "localhost" or name.endswith(".localhost"):
        problems.append(f"{host} is the loopback host (RFC 6761), never a BMC: {fix}")
    elif last.isdigit() or last.startswith("0x") or host.endswith("."):  # an address, not a name: no TLD is numeric
        try:
            addr = ipaddress.IPv4Address(host)
        except ValueError:
            problems.append(
                f"{host} is an address written as a number in a form resolvers read differently (inet_aton reads "
                "127.1 and 2130706433 as 127.0.0.1): write the BMC's address as four decimal numbers (e.g. 10.201.0.11)"
            )
        else:
            kind = next((what for test, what in _NOT_A_BMC if getattr(addr, test)), None)
            if kind is not None:
                problems.append(f"{addr} is {kind}, never a BMC: {fix}")
    return problems


# ipaddress's tests, in this order: 169.254.169.254 is link-local before it is anything else
_NOT_A_BMC = (
    ("is_link_local", "a link-local address (169.254.0.0/16, where clouds serve instance metadata)"),
    ("is_loopback", "a loopback address"),
    ("is_multicast", "a multicast address"),
    ("is_unspecified", "the unspecified address"),
    ("is_reserved", "a reserved address"),
)


def mask_bmc_url(value: str) -> str | None:
    """`value` (a BMC URL that BMC_RE refused) with what may hold a password masked: the user info, a port that is
    not a number, and everything from a query, fragment, parameter or `=` on; None when there is none of them."""
    scheme, sep, rest = value.partition("://")
    if not sep:
        scheme, rest = "", value
    end = min((i for i in (rest.find(c) for c in "/?#;") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    shown = scheme + sep
    if "@" in authority:
        shown += "***@"
        authority = authority.rpartition("@")[2]
    host, colon, port = authority.partition(":")
    shown += host + colon + (port if port.isdigit() or not port else "***")
    cut = min((i for i in (tail.find(c) for c in "?#;=@") if i >= 0), default=-1)
    shown += tail if cut < 0 else tail[: cut + 1] + "***"
    return shown if shown != value else None


def mask_bmc_user(value: str) -> str | None:
    """`value` (a BMC user name that BMC_USER_RE refused) masked from its first character a user name does not
    have (`admin:***`): what follows may be a password. None when every character is one of a user name."""
    found = re.match(r"[A-Za-z0-9._-]*", value)
    end = found.end() if found else 0
    return None if end == len(value) else value[: end + 1] + "***"


class OnpremFabric(Strict):
    """The compute fabric of owned nodes: a rail-optimised fat-tree the planner sizes."""

    kind: Annotated[Literal["infiniband", "roce"], Field(description="`infiniband` or `roce` (RDMA over Ethernet).")]
    link_gbps: Annotated[
        Literal[100, 200, 400, 800], Field(description="Link speed per NIC and switch port, Gb/s (e.g. `400`: NDR).")
    ] = 400
    switch_radix: Annotated[
        Count, Field(ge=8, le=512, description="Ports per switch at the link speed (e.g. `64`: Quantum-2 QM9700).")
    ] = 64
    switch: Annotated[
        str | None,
        Field(
            pattern=_pattern(r"^[a-z0-9][a-z0-9-]{0,62}$", "must be a catalog switch id (e.g. qm9700)"),
            description="Catalog switch id (e.g. `qm9700`). Default: the catalog switch of this kind, link speed "
            "and radix.",
        ),
    ] = None
    planes: Annotated[
        Literal["shared", "per-rail"],
        Field(
            description="`shared`: one fabric whose spines join every rail (DGX SuperPOD H100/B200); `per-rail`: a "
            "separate fat-tree per rail (more reach; NIC r reaches only NIC r of other nodes)."
        ),
    ] = "shared"
    reserved_ports: Annotated[
        Count, Field(ge=0, le=10_000, description="Leaf ports kept for other devices (UFM appliances, storage).")
    ] = 0
    rails: Annotated[
        Count | None, Field(ge=1, le=16, description="Rails (compute NICs per node). Default: the node shape's.")
    ] = None
    oversubscription: Annotated[
        float,
        Field(
            ge=1,
            le=16,
            allow_inf_nan=False,
            description="Wanted leaf oversubscription, down:up (`1`: non-blocking; `2`: 2:1).",
        ),
    ] = 1.0


class SiteNetwork(Strict):
    cidrs: Annotated[
        list[Cidr],
        Field(min_length=1, max_length=64, description="The site's private ranges (e.g. `[10.200.0.0/16]`)."),
    ]
    vpn_endpoint: Annotated[
        PublicIp, Field(description="Public IPv4 address of the site's VPN device (e.g. `203.0.113.10`).")
    ]
    bgp_asn: Annotated[BgpAsn, Field(description="The site router's BGP ASN (e.g. `65010`).")]


class SitePower(Strict):
    pue: Annotated[
        float, Field(ge=1.0, le=3.0, allow_inf_nan=False, description="Power usage effectiveness (e.g. `1.3`).")
    ]
    usd_per_kwh: Annotated[
        float, Field(ge=0, le=10, allow_inf_nan=False, description="Energy price, USD per kWh (e.g. `0.09`).")
    ]
    rack_kw: Annotated[
        float, Field(gt=0, le=1000, allow_inf_nan=False, description="Power a rack can deliver, kW (e.g. `41`).")
    ]
    max_kw: Annotated[
        float,
        Field(
            gt=0, le=10_000_000, allow_inf_nan=False, description="The site's ceiling for IT load, kW (e.g. `2000`)."
        ),
    ]
    liquid_rack_kw: Annotated[
        float | None,
        Field(
            gt=0,
            le=1000,
            allow_inf_nan=False,
            description="Power a liquid-cooled rack position can deliver and cool, kW (e.g. `140`); NVL72 racks "
            "(GB200/GB300) need one each. Null: the site has no liquid cooling.",
        ),
    ] = None


class HardwareCost(Strict):
    """How owned nodes are costed: a purchase amortised over years, or a rate per node-hour."""

    purchase_usd_per_node: Annotated[
        float | None, Field(gt=0, le=100_000_000, allow_inf_nan=False, description="Price paid per node, USD.")
    ] = None
    amortization_years: Annotated[
        float | None, Field(gt=0, le=30, allow_inf_nan=False, description="Years the purchase is spread over.")
    ] = None
    usd_per_node_hour: Annotated[
        float | None,
        Field(gt=0, le=100_000, allow_inf_nan=False, description="Internal rate per node-hour, USD (instead)."),
    ] = None

    @model_validator(mode="after")
    def _one_basis(self) -> HardwareCost:
        purchase = (self.purchase_usd_per_node is not None, self.amortization_years is not None)
        if self.usd_per_node_hour is not None and any(purchase):
            raise _Problems(
                [
                    Problem(
                        ("usd_per_node_hour",), "give a purchase price with years of amortisation, or a rate: not both"
                    )
                ]
            )
        if self.usd_per_node_hour is None and not all(purchase):
            missing = "amortization_years" if purchase[0] else "purchase_usd_per_node"
            raise _Problems(
                [Problem((missing,), "give purchase_usd_per_node with amortization_years, or usd_per_node_hour")]
            )
        return self


class Site(Strict):
    """An owned data centre: its network, power, carbon and how its hardware is costed."""

    name: Annotated[DnsLabel, Field(description="Site name, unique in the cluster (e.g. `fra1`).")]
    network: Annotated[SiteNetwork, Field(description="CIDRs, VPN endpoint and BGP ASN.")]
    power: Annotated[SitePower, Field(description="PUE, energy price, rack power and the site's ceiling.")]
    carbon_g_per_kwh: Annotated[
        float,
        Field(ge=0, le=2000, allow_inf_nan=False, description="Grid carbon intensity, gCO2e/kWh (e.g. `350`)."),
    ]
    hardware_cost: Annotated[
        HardwareCost | None, Field(description="Amortised purchase or a node-hour rate. Default: unpriced.")
    ] = None
    fabric: Annotated[
        OnpremFabric | None, Field(description="The site's compute fabric, for pools that do not give their own.")
    ] = None


class OnpremPool(Strict):
    """Owned nodes at a site: a node shape from the catalog, a count, and optionally the hosts themselves."""

    name: Annotated[DnsLabel, Field(description="Pool name, unique in the cluster (e.g. `h100`).")]
    provider: Annotated[Literal["onprem"], Field(description="Cloud or site that runs the pool.")]
    site: Annotated[DnsLabel, Field(description="Name of the site under `sites:` (e.g. `fra1`).")]
    instance_type: Annotated[
        InstanceType,
        Field(description="Node shape from the catalog (e.g. `dgx-h100`; docs/catalog.md lists them)."),
    ]
    nodes: Annotated[
        Count | None, Field(ge=1, le=100_000, description="Number of nodes. Default: the number of hosts.")
    ] = None
    rollout: PoolRollout = Rollout()
    hosts: Annotated[list[Host], Field(max_length=100_000, description="The nodes themselves (optional).")] = []
    fabric: Annotated[OnpremFabric | None, Field(description="The pool's own fabric. Default: the site's.")] = None

    @model_validator(mode="after")
    def _count(self) -> OnpremPool:
        if self.nodes is None and not self.hosts:
            raise _Problems([Problem(("nodes",), "give nodes (a count) or list the hosts")])
        if self.nodes is not None and self.hosts and self.nodes != len(self.hosts):
            raise _Problems(
                [
                    Problem(
                        ("nodes",),
                        f"{len(self.hosts)} hosts are listed: drop nodes, or list every host",
                        self.nodes,
                        True,
                    )
                ]
            )
        return self

    @property
    def node_count(self) -> int:
        return self.nodes if self.nodes is not None else len(self.hosts)

    @property
    def market(self) -> Literal["owned"]:
        """Owned hardware: bought, not rented."""
        return "owned"

    @property
    def region(self) -> str:
        """Where the pool runs, in the place every pool names it: its site."""
        return self.site

    @property
    def zone(self) -> None:
        return None


def pool_fabric(pool: OnpremPool, site: Site) -> tuple[str, OnpremFabric]:
    """The fabric that joins an on-prem pool's nodes: its own (named <site>-<pool>), else its site's (named after
    the site, shared by every pool of the site that gives none). The spec guarantees one of the two."""
    if pool.fabric is not None:
        return f"{site.name}-{pool.name}", pool.fabric
    assert site.fabric is not None
    return site.name, site.fabric
