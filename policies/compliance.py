"""Compliance: encryption at rest, no public exposure, IMDSv2, required tags, data residency, audit logs
(AWS, with Azure and GCP equivalents where one exists)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import REQUIRED_TAGS

from .facts import (
    ASG,
    AZURE_NIC,
    AZURE_NSG,
    AZURE_SECURITY_RULE,
    AZURE_SUBSCRIPTION_DIAGNOSTICS,
    AZURE_VM,
    AZURE_VMSS,
    EBS_VOLUME,
    EFS,
    EIP,
    FSX_LUSTRE,
    GCP_AUDIT,
    GCP_FIREWALL,
    GCP_INSTANCE,
    GCP_TEMPLATES,
    GCP_TPU_QUEUED,
    GCP_TPU_VM,
    GLOBAL_LOCATION,
    INSTANCE,
    LAUNCH_TEMPLATE,
    NAT_GATEWAY,
    SECURITY_GROUP,
    TRAIL,
    UNKNOWN,
    Res,
    Stack,
    azure_location,
    get,
    items,
    truthy,
)
from .rule import Ctx, Meta, NotApplicable, ResourceRule, StackRule

MANDATORY, ADVISORY = EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY

# --------------------------------------------------------------------------------------------------
# IMDSv2


def _imdsv2(res: Res, ctx: Ctx) -> Iterator[str]:
    tokens = res.get("metadataOptions", "httpTokens")
    if tokens is UNKNOWN or res.get("metadataOptions", "httpEndpoint") == "disabled":
        return
    if res.type == INSTANCE and tokens is None and res.get("launchTemplate") is not None:
        return  # its launch template decides, and is judged itself
    if tokens != "required":
        what = f'"{tokens}"' if tokens is not None else "not set (IMDSv1 stays on)"
        yield (
            f"{_kind(res)} {res.name} allows IMDSv1: metadataOptions.httpTokens is {what}; set "
            'metadataOptions.httpTokens = "required" so credentials need a session token'
        )


imdsv2 = ResourceRule(
    Meta(
        name="aws-ec2-instance-enforce-imdsv2",
        display_name="IMDSv2 only",
        description="EC2 instances and launch templates require IMDSv2 session tokens.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation='Set metadataOptions.httpTokens to "required" (aicluster components always do).',
        frameworks=("cis-aws", "soc2"),
        controls=("CIS AWS Foundations v6.0.0 6.7", "SOC 2 CC6.1", "SOC 2 CC7.2"),
    ),
    {LAUNCH_TEMPLATE, INSTANCE},
    _imdsv2,
)

# --------------------------------------------------------------------------------------------------
# Public IPs on compute


def _public_ip(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type == INSTANCE and truthy(res.get("associatePublicIpAddress")):
        yield (
            f"instance {res.name} gets a public IP (associatePublicIpAddress = true); set it false and reach "
            "the node through SSM or a bastion"
        )
    for i, nic in enumerate(items(res.props, "networkInterfaces")):
        if truthy(get(nic, "associatePublicIpAddress")):
            yield (
                f"{_kind(res)} {res.name} gives network interface {i} (card {get(nic, 'networkCardIndex', default=0)}) "
                "a public IP (associatePublicIpAddress = true); set it false: nodes egress through NAT"
            )


public_ip = ResourceRule(
    Meta(
        name="aws-ec2-instance-disallow-public-ip",
        display_name="No public IPs on compute",
        description="GPU and controller nodes get no public IP addresses.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Set associatePublicIpAddress to false; use SSM Session Manager or a bastion for access.",
        frameworks=("cis-aws", "soc2"),
        controls=("SOC 2 CC6.1", "Checkov CKV_AWS_88"),
    ),
    {LAUNCH_TEMPLATE, INSTANCE},
    _public_ip,
)


def _azure_public_ip(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type == AZURE_NIC:
        for j, ip in enumerate(items(res.props, "ipConfigurations")):
            if isinstance(get(ip, "publicIPAddress"), Mapping):
                yield (
                    f"network interface {res.name} ipConfigurations[{j}] ({get(ip, 'name', default='?')}) attaches a "
                    "public IP address; remove publicIPAddress: nodes egress through the NAT gateway, reach them "
                    "through Azure Bastion or a VPN"
                )
        return
    # a scale set's NICs live in its VM profile; a VM may declare its NICs inline the same way
    profile = res.get("virtualMachineProfile") if res.type == AZURE_VMSS else res.props
    for i, nic in enumerate(items(profile, "networkProfile", "networkInterfaceConfigurations")):
        for j, ip in enumerate(items(nic, "ipConfigurations")):
            if isinstance(get(ip, "publicIPAddressConfiguration"), Mapping):
                yield (
                    f"{_kind(res)} {res.name} gives networkInterfaceConfigurations[{i}] "
                    f"({get(nic, 'name', default='?')}) ipConfigurations[{j}] ({get(ip, 'name', default='?')}) a "
                    "public IP (publicIPAddressConfiguration); remove it: nodes egress through the NAT gateway"
                )


azure_public_ip = ResourceRule(
    Meta(
        name="azure-compute-vm-disallow-public-ip",
        display_name="No public IPs on Azure compute",
        description="Azure scale sets, VMs and their network interfaces get no public IP addresses.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Drop publicIPAddressConfiguration / publicIPAddress; egress through the NAT gateway, reach "
        "nodes through Azure Bastion or a VPN.",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_AZURE_119"),
    ),
    {AZURE_VMSS, AZURE_VM, AZURE_NIC},  # not PublicIPAddress itself: the NAT gateway's address is fine
    _azure_public_ip,
)


def _gcp_public_ip(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type in (GCP_TPU_VM, GCP_TPU_QUEUED):
        configs = (
            [("networkConfig", res.get("networkConfig"))]
            if res.type == GCP_TPU_VM
            else [
                (f"tpu.nodeSpecs[{i}].node.networkConfig", get(spec, "node", "networkConfig"))
                for i, spec in enumerate(items(res.props, "tpu", "nodeSpecs"))
            ]
        )
        for where, config in configs:
            if get(config, "enableExternalIps") is True:
                yield (
                    f"{_kind(res)} {res.name} gives its TPU VMs external IPs ({where}.enableExternalIps = true); set "
                    "it false: TPU VMs egress through Cloud NAT, reach them through IAP"
                )
        return
    for i, nic in enumerate(items(res.props, "networkInterfaces")):
        for key in ("accessConfigs", "ipv6AccessConfigs"):
            configs = get(nic, key)
            if configs is UNKNOWN or not items(nic, key):
                continue
            yield (
                f"{_kind(res)} {res.name} gives networkInterfaces[{i}] an external IP ({key}); remove {key}: nodes "
                "egress through Cloud NAT, reach them through IAP TCP forwarding"
            )


gcp_public_ip = ResourceRule(
    Meta(
        name="gcp-compute-instance-disallow-public-ip",
        display_name="No public IPs on GCP compute",
        description="GCP VMs, instance templates and TPU VMs get no external IP addresses.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Drop accessConfigs from network interfaces (TPU: enableExternalIps false); egress through Cloud "
        "NAT, reach nodes through IAP.",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_GCP_40"),
    ),
    {*GCP_TEMPLATES, GCP_INSTANCE, GCP_TPU_VM, GCP_TPU_QUEUED},
    _gcp_public_ip,
)

# --------------------------------------------------------------------------------------------------
# SSH / RDP from the internet

ADMIN_PORTS = {22: "SSH", 3389: "RDP"}
SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
_ANYWHERE = {"0.0.0.0/0", "::/0"}


def _opens_admin(protocol: Any, lo: Any, hi: Any) -> list[str]:
    proto = str(protocol).lower()
    if proto in ("-1", "all"):
        return list(ADMIN_PORTS.values())
    if proto not in ("tcp", "6") or not isinstance(lo, int | float) or not isinstance(hi, int | float):
        return []
    return [name for port, name in ADMIN_PORTS.items() if lo <= port <= hi]


def _admin_from_internet(res: Res, ctx: Ctx) -> Iterator[str]:
    rules: list[tuple[str, Any, Any, Any, set[str]]] = []
    if res.type == SECURITY_GROUP:
        for i, r in enumerate(items(res.props, "ingress")):
            cidrs = {str(c) for c in items(r, "cidrBlocks") + items(r, "ipv6CidrBlocks")}
            rules.append((f"ingress[{i}]", get(r, "protocol"), get(r, "fromPort"), get(r, "toPort"), cidrs))
    elif res.type == SG_INGRESS_RULE:
        cidrs = {str(c) for c in (res.get("cidrIpv4"), res.get("cidrIpv6")) if isinstance(c, str)}
        rules.append(("rule", res.get("ipProtocol"), res.get("fromPort"), res.get("toPort"), cidrs))
    elif res.type == SG_RULE and res.get("type") == "ingress":
        cidrs = {str(c) for c in items(res.props, "cidrBlocks") + items(res.props, "ipv6CidrBlocks")}
        rules.append(("rule", res.get("protocol"), res.get("fromPort"), res.get("toPort"), cidrs))
    for where, proto, lo, hi, cidrs in rules:
        open_to = sorted(cidrs & _ANYWHERE)
        services = _opens_admin(proto, lo, hi)
        if open_to and services:
            yield (
                f"security group {res.name} {where} lets {' and '.join(open_to)} reach {'/'.join(services)} "
                f"(protocol {proto}, ports {lo}-{hi}); remove it and reach nodes through SSM Session Manager"
            )


admin_from_internet = ResourceRule(
    Meta(
        name="aws-ec2-securitygroup-disallow-admin-from-internet",
        display_name="No SSH/RDP from the internet",
        description="No security group admits 0.0.0.0/0 or ::/0 to SSH (22) or RDP (3389).",
        concern="compliance",
        severity=Severity.CRITICAL,
        enforcement=MANDATORY,
        remediation="Drop the rule; use SSM Session Manager (aicluster nodes carry its IAM policy) or a VPN.",
        frameworks=("cis-aws", "soc2"),
        controls=("CIS AWS Foundations v6.0.0 6.3", "CIS AWS Foundations v6.0.0 6.4", "SOC 2 CC6.1"),
    ),
    {SECURITY_GROUP, SG_INGRESS_RULE, SG_RULE},
    _admin_from_internet,
)


AZURE_ANYWHERE = {"*", "internet", "any", "0.0.0.0/0", "::/0"}  # source prefixes the internet matches
_AZURE_ALL_INTERNET = {"*", "internet", "any"}  # ... of which these cover IPv4 and IPv6 alike


def _azure_port_ranges(rule: Any) -> list[str]:
    return [str(p) for p in [get(rule, "destinationPortRange"), *items(rule, "destinationPortRanges")] if p]


def _azure_covers(spec: str, port: int) -> bool:
    """Whether an NSG port spec ("22", "20-30", "*") includes the port."""
    spec = spec.strip()
    if spec == "*":
        return True
    lo, _, hi = spec.partition("-")
    try:
        return int(lo) <= port <= int(hi or lo)
    except ValueError:
        return False


def _azure_sources(rule: Any) -> list[str]:
    return [str(p) for p in [get(rule, "sourceAddressPrefix"), *items(rule, "sourceAddressPrefixes")] if p]


def _azure_admin_ports(rule: Any, access: str) -> list[int]:
    """Admin ports an inbound TCP rule with this access (Allow/Deny) matches."""
    if str(get(rule, "direction", default="")).lower() != "inbound":
        return []
    if str(get(rule, "access", default="")).lower() != access or str(get(rule, "protocol")).lower() not in ("tcp", "*"):
        return []
    specs = _azure_port_ranges(rule)
    return [port for port in ADMIN_PORTS if any(_azure_covers(s, port) for s in specs)]


def _azure_denied_first(rule: Any, port: int, sources: list[str], rules: list[Any]) -> bool:
    """Whether a Deny rule of the same group, evaluated earlier (lower priority number), stops the internet
    sources of `rule` from reaching `port` first."""
    priority = get(rule, "priority")
    if not isinstance(priority, int | float):
        return False
    for other in rules:
        first = get(other, "priority")
        if other is rule or not isinstance(first, int | float) or first >= priority:
            continue
        if port not in _azure_admin_ports(other, "deny"):
            continue
        denied = {s.lower() for s in _azure_sources(other)}
        if all(denied & _AZURE_ALL_INTERNET or s.lower() in denied for s in sources):
            return True
    return False


def _azure_admin_from_internet(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type == AZURE_NSG:
        rules = items(res.props, "securityRules")
        named = [
            (f"network security group {res.name} securityRules[{i}] ({get(r, 'name', default='?')})", r)
            for i, r in enumerate(rules)
        ]
    else:
        rules = [res.props]
        named = [(f"security rule {res.name}", res.props)]
    for where, rule in named:
        open_to = [s for s in _azure_sources(rule) if s.lower() in AZURE_ANYWHERE]
        ports = [p for p in _azure_admin_ports(rule, "allow") if not _azure_denied_first(rule, p, open_to, rules)]
        if open_to and ports:
            yield (
                f"{where} lets {' and '.join(open_to)} reach {'/'.join(ADMIN_PORTS[p] for p in ports)} (protocol "
                f"{get(rule, 'protocol')}, ports {', '.join(_azure_port_ranges(rule))}); remove it and reach nodes "
                "through Azure Bastion or a VPN"
            )


azure_admin_from_internet = ResourceRule(
    Meta(
        name="azure-network-nsg-disallow-admin-from-internet",
        display_name="No SSH/RDP from the internet (Azure)",
        description="No network security group rule allows the internet to SSH (22) or RDP (3389) inbound.",
        concern="compliance",
        severity=Severity.CRITICAL,
        enforcement=MANDATORY,
        remediation="Drop the rule (aicluster NSGs deny SSH/RDP from the internet first); use Azure Bastion or a VPN.",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_AZURE_10", "Checkov CKV_AZURE_9"),
    ),
    {AZURE_NSG, AZURE_SECURITY_RULE},
    _azure_admin_from_internet,
)


def _gcp_port_covers(spec: str, port: int) -> bool:
    """Whether a GCP firewall port spec ("22", "20-30") includes the port."""
    lo, _, hi = spec.strip().partition("-")
    try:
        return int(lo) <= port <= int(hi or lo)
    except ValueError:
        return False


def _gcp_admin_from_internet(res: Res, ctx: Ctx) -> Iterator[str]:
    direction = res.get("direction")
    if direction not in (None, "INGRESS") or res.get("disabled") is True:
        return
    sources = res.get("sourceRanges")
    if sources is UNKNOWN:
        return
    open_to = sorted({str(c) for c in items(res.props, "sourceRanges")} & _ANYWHERE)
    if not open_to:
        return
    for i, allow in enumerate(items(res.props, "allows")):
        proto = str(get(allow, "protocol", default="")).lower()
        if proto not in ("tcp", "6", "all"):
            continue
        ports = [str(p) for p in items(allow, "ports")]
        if get(allow, "ports") is UNKNOWN:
            continue
        opened = [n for port, n in ADMIN_PORTS.items() if not ports or any(_gcp_port_covers(p, port) for p in ports)]
        if opened:
            yield (
                f"firewall {res.name} allows[{i}] lets {' and '.join(open_to)} reach {'/'.join(opened)} (protocol "
                f"{proto}, ports {', '.join(ports) if ports else 'all'}); remove it and reach nodes through IAP TCP "
                "forwarding (source 35.235.240.0/20)"
            )


gcp_admin_from_internet = ResourceRule(
    Meta(
        name="gcp-compute-firewall-disallow-admin-from-internet",
        display_name="No SSH/RDP from the internet (GCP)",
        description="No ingress firewall rule lets 0.0.0.0/0 or ::/0 reach SSH (22) or RDP (3389).",
        concern="compliance",
        severity=Severity.CRITICAL,
        enforcement=MANDATORY,
        remediation="Drop the rule, or limit its sourceRanges to IAP's 35.235.240.0/20 (aicluster's network does).",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_GCP_2", "Checkov CKV_GCP_3"),
    ),
    {GCP_FIREWALL},
    _gcp_admin_from_internet,
)

# --------------------------------------------------------------------------------------------------
# Encryption at rest


def _ebs_encrypted(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type == EBS_VOLUME:
        if not truthy(res.get("encrypted")) and res.get("encrypted") is not UNKNOWN:
            yield f"EBS volume {res.name} is not encrypted; set encrypted = true"
        return
    if res.type == LAUNCH_TEMPLATE:
        for i, m in enumerate(items(res.props, "blockDeviceMappings")):
            ebs = get(m, "ebs")
            if isinstance(ebs, Mapping) and not truthy(get(ebs, "encrypted")):
                yield (
                    f"launch template {res.name} blockDeviceMappings[{i}] ({get(m, 'deviceName', default='?')}) "
                    'is not encrypted; set ebs.encrypted = "true"'
                )
        return
    root = res.get("rootBlockDevice")
    if isinstance(root, Mapping) and not truthy(get(root, "encrypted")):
        yield f"instance {res.name} root volume is not encrypted; set rootBlockDevice.encrypted = true"
    for i, dev in enumerate(items(res.props, "ebsBlockDevices")):
        if not truthy(get(dev, "encrypted")):
            yield f"instance {res.name} ebsBlockDevices[{i}] is not encrypted; set encrypted = true"


ebs_encryption = ResourceRule(
    Meta(
        name="aws-ebs-volume-enforce-encryption",
        display_name="Encrypted EBS volumes",
        description="Root and data volumes of nodes, templates and standalone EBS volumes are encrypted.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation='Set encrypted = true (launch templates: ebs.encrypted = "true").',
        frameworks=("cis-aws", "soc2", "hipaa", "pci-dss"),
        controls=("SOC 2 CC6.1", "HIPAA 164.312(a)(2)(iv)", "PCI DSS 3.5", "Checkov CKV_AWS_8"),
    ),
    {LAUNCH_TEMPLATE, INSTANCE, EBS_VOLUME},
    _ebs_encrypted,
)


def _efs_encrypted(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.get("encrypted") is not UNKNOWN and not truthy(res.get("encrypted")):
        yield f"EFS file system {res.name} is not encrypted at rest; set encrypted = true (needs a new file system)"


efs_encryption = ResourceRule(
    Meta(
        name="aws-efs-filesystem-enforce-encryption",
        display_name="Encrypted EFS",
        description="EFS file systems are encrypted at rest.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Create the file system with encrypted = true; encryption cannot be turned on later.",
        frameworks=("cis-aws", "soc2", "hipaa", "pci-dss"),
        controls=("CIS AWS Foundations v6.0.0 3.3.1", "SOC 2 CC6.1", "HIPAA 164.312(a)(2)(iv)"),
    ),
    {EFS},
    _efs_encrypted,
)

# --------------------------------------------------------------------------------------------------
# Required tags

DEFAULT_REQUIRED_TAGS = REQUIRED_TAGS  # the catalog holds the list: `aicluster validate` checks it too
# Resources that cost money: these must carry the allocation tags even where the program gave them none.
COST_BEARING = frozenset({ASG, INSTANCE, LAUNCH_TEMPLATE, FSX_LUSTRE, EFS, NAT_GATEWAY, EIP, EBS_VOLUME})


# GCP carries tags as labels: keys and values lowercase, characters other than a-z 0-9 _ - become `_`, at
# most 63 characters (the tag `aicluster:cluster` is the label `aicluster_cluster`).
GCP_LABEL_MAX = 63
_GCP_LABEL_BAD = re.compile(r"[^a-z0-9_-]")


def gcp_label_key(tag: str) -> str:
    return _GCP_LABEL_BAD.sub("_", tag.lower())[:GCP_LABEL_MAX]


def _tag_field(res: Res) -> str:
    return "labels" if res.provider == "gcp" else "tags"


def _tag_keys(res: Res) -> set[str] | None:
    field = _tag_field(res)
    tags = res.get(field)
    if tags is UNKNOWN:
        return None
    keys: set[str] = set()
    if res.type == ASG:
        keys = {str(get(t, "key")) for t in items(res.props, "tags") if truthy(get(t, "propagateAtLaunch"))}
    elif isinstance(tags, Mapping):
        keys = {str(k) for k in tags}
    # AWS provider defaultTags.tags, GCP provider defaultLabels: the provider adds them to every resource
    if field == "labels":
        defaults = get(res.provider_props, "defaultLabels")
    else:
        defaults = get(res.provider_props, "defaultTags", "tags")
    if isinstance(defaults, Mapping):
        keys |= {str(k) for k in defaults}
    return keys


def _taggable(res: Res) -> bool:
    """AWS: declared tags, or a type that costs money. Azure and GCP: the SDK's resource class takes `tags`
    (GCP: `labels`), as the components' tagging transformation decides."""
    if res.provider == "aws":
        return res.type in COST_BEARING or "tags" in res.props
    if res.provider in SDK_MODULES:
        field = _tag_field(res)
        return field in res.props or _sdk_takes(res.type, field)
    return False


# Pulumi package -> the Python SDK whose resource classes say whether a type takes tags/labels.
SDK_MODULES = {"azure-native": "pulumi_azure_native", "gcp": "pulumi_gcp"}
_TAKES: dict[tuple[str, str], bool] = {}


def _sdk_takes(type_: str, field: str) -> bool:
    """Whether the SDK class behind a type token has the input: `azure-native:network:VirtualNetwork` ->
    pulumi_azure_native.network.VirtualNetwork.tags; `gcp:compute/instance:Instance` ->
    pulumi_gcp.compute.Instance.labels."""
    if (type_, field) not in _TAKES:
        parts = type_.split(":")
        found = False
        if len(parts) == 3 and all(parts) and parts[0] in SDK_MODULES:
            # azure-native modules may nest (network/v20240301); a GCP token's module is the part before `/`
            module_path = parts[1].replace("/", ".") if parts[0] == "azure-native" else parts[1].split("/")[0]
            try:
                module = importlib.import_module(f"{SDK_MODULES[parts[0]]}.{module_path}")
                found = isinstance(getattr(getattr(module, parts[2]), field, None), property)
            except (ImportError, AttributeError):
                found = False
        _TAKES[(type_, field)] = found
    return _TAKES[(type_, field)]


def _required_tags_for(provider: str, fix: str) -> Callable[[Res, Ctx], Iterator[str]]:
    def check(res: Res, ctx: Ctx) -> Iterator[str]:
        if res.provider != provider or not _taggable(res):
            return
        keys = _tag_keys(res)
        if keys is None:
            return
        required = [str(t) for t in ctx.setting("required_tags", default=DEFAULT_REQUIRED_TAGS)]
        if provider == "gcp":
            wanted = {gcp_label_key(t): t for t in required}
            missing = [k if k == t else f"{k} (tag {t})" for k, t in wanted.items() if k not in keys]
            if missing:
                yield f"{_kind(res)} {res.name} lacks required labels {', '.join(missing)}; {fix}"
            return
        missing = [t for t in required if t not in keys]
        if missing:
            where = "tags that propagate at launch" if res.type == ASG else "tags"
            yield f"{_kind(res)} {res.name} lacks required {where} {', '.join(missing)}; {fix}"

    return check


REQUIRED_TAGS_CONFIG: dict[str, dict[str, Any]] = {
    "required_tags": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Tag keys every resource needs. Default: owner, cost-center.",
    }
}


def _required_tags_rule(name: str, display_name: str, description: str, provider: str, fix: str) -> ResourceRule:
    """One policy per provider (names carry the provider), one check and config for all."""
    return ResourceRule(
        Meta(
            name=name,
            display_name=display_name,
            description=description,
            concern="compliance",
            severity=Severity.MEDIUM,
            enforcement=MANDATORY,
            remediation="Add the tags under aicluster:cluster.tags; AiCluster applies them to every resource.",
            frameworks=("soc2",),
            controls=("SOC 2 CC1.3",),
            config=REQUIRED_TAGS_CONFIG,
        ),
        None,  # every type of the provider: taggable ones are picked in the check
        _required_tags_for(provider, fix),
        provider=provider,
    )


required_tags = _required_tags_rule(
    "aws-resource-missing-required-tags",
    "Cost-allocation tags",
    "Every taggable resource, and every cost-bearing one, carries the owner and cost-center tags.",
    "aws",
    "add them to the cluster's tags in the stack file (aicluster:cluster.tags) or to the provider's defaultTags",
)

azure_required_tags = _required_tags_rule(
    "azure-resource-missing-required-tags",
    "Cost-allocation tags (Azure)",
    "Every Azure resource that takes tags carries the owner and cost-center tags.",
    "azure-native",
    "add them to the cluster's tags in the stack file (aicluster:cluster.tags)",
)

gcp_required_labels = _required_tags_rule(
    "gcp-resource-missing-required-labels",
    "Cost-allocation labels (GCP)",
    "Every GCP resource that takes labels carries the owner and cost-center tags as GCP labels.",
    "gcp",
    "add the tags to the cluster's tags in the stack file (aicluster:cluster.tags); GCP labels are the tag keys "
    "lowercased, other characters than a-z 0-9 _ - replaced by _",
)

# --------------------------------------------------------------------------------------------------
# Data residency


GLOBAL_PREFIXES = ("aws:iam/", "aicluster:", "pulumi:")
# Azure and GCP resources that are not regional say so with this location (DNS zones, Front Door, log buckets).
AZURE_GLOBAL_LOCATION = GLOBAL_LOCATION


def _allowed_regions(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    allowed = [str(r) for r in ctx.setting("allowed_regions", ("compliance", "allowed_regions"), [])]
    if not allowed:
        raise NotApplicable(
            "no allowed regions: set compliance.allowed_regions in the stack or allowed_regions in policy config"
        )
    # Azure locations compare as Azure reads them: "East US" is eastus (Res.region normalises the resource's)
    azure_allowed = {azure_location(r) for r in allowed}
    for res in stack.resources:
        if res.type.startswith(GLOBAL_PREFIXES):
            continue
        region = res.region  # a GCP zone counts as its region (Res.region: us-central1-a -> us-central1)
        if res.provider == "azure-native" and region in (AZURE_GLOBAL_LOCATION, *azure_allowed):
            continue
        if res.provider == "gcp" and region == GLOBAL_LOCATION:
            continue
        if region is not None and region not in allowed:
            yield (
                res,
                f"{_kind(res)} {res.name} is in {region}, outside compliance.allowed_regions "
                f"[{', '.join(allowed)}]; move it to an allowed region or add {region} to allowed_regions",
            )


allowed_regions = StackRule(
    Meta(
        name="aicluster-resource-enforce-allowed-regions",
        display_name="Data residency",
        description="Every regional resource lives in a region listed in compliance.allowed_regions.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Move the pool or file system to an allowed region, or amend compliance.allowed_regions.",
        frameworks=("gdpr",),
        controls=("GDPR Art. 44-49 (transfers to third countries)",),
        config={
            "allowed_regions": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Regions data may live in. Default: the AiCluster's compliance.allowed_regions.",
            }
        },
    ),
    _allowed_regions,
)

# --------------------------------------------------------------------------------------------------
# Audit logging

AUDITED_FRAMEWORKS = ("soc2", "hipaa", "pci-dss", "iso27001")
# GCP writes Admin Activity audit logs always; Data Access logs (ADMIN_READ, DATA_READ, DATA_WRITE) only where an
# audit config turns them on, for every service (allServices).
GCP_AUDIT_SERVICE = "allServices"
GCP_AUDIT_LOG_TYPES = ("ADMIN_READ", "DATA_READ", "DATA_WRITE")
AZURE_AUDIT = (
    AZURE_SUBSCRIPTION_DIAGNOSTICS,
    "azure-native:insights:DiagnosticSetting",
    "azure-native:monitor:DiagnosticSetting",
)
AZURE_AUDIT_CATEGORY = "Administrative"  # the activity log's record of every create, update and delete
AZURE_AUDIT_GROUPS = ("alllogs", "audit")  # category groups that include it


def _trail_ok(trail: Res) -> bool:
    return (
        truthy(trail.get("isMultiRegionTrail"))
        and truthy(trail.get("enableLogFileValidation"))
        and trail.get("enableLogging") is not False
    )


def _azure_audit_gaps(setting: Res) -> list[str]:
    """Why a diagnostic setting does not keep the Administrative activity log in a Log Analytics workspace
    (empty: it does). Values unknown during preview (the workspace's id) are taken as set."""
    gaps = []
    workspace = setting.get("workspaceId")
    if workspace is not UNKNOWN and not (isinstance(workspace, str) and workspace):
        gaps.append("workspaceId is not set")
    logs = setting.get("logs")

    def administrative(log: Any) -> bool:
        if log is UNKNOWN:
            return True
        enabled = get(log, "enabled")
        category = str(get(log, "category", default="")).lower()
        group = str(get(log, "categoryGroup", default="")).lower()
        named = category == AZURE_AUDIT_CATEGORY.lower() or group in AZURE_AUDIT_GROUPS
        return named and (enabled is UNKNOWN or truthy(enabled))

    if logs is not UNKNOWN and not any(administrative(log) for log in items(setting.props, "logs")):
        gaps.append(f"the {AZURE_AUDIT_CATEGORY} log category is not enabled")
    return gaps


def _gcp_audit_gaps(config: Res) -> list[str]:
    """Why an IAM audit config does not turn on Data Access logs for every service (empty: it does). Values
    unknown during preview are taken as set."""
    gaps = []
    service = config.get("service")
    if service is not UNKNOWN and service != GCP_AUDIT_SERVICE:
        gaps.append(f"service is {service!r}, not {GCP_AUDIT_SERVICE}")
    if config.get("auditLogConfigs") is UNKNOWN:
        return gaps
    logs = items(config.props, "auditLogConfigs")
    if any(log is UNKNOWN or get(log, "logType") is UNKNOWN for log in logs):
        return gaps
    have = {str(get(log, "logType")) for log in logs}
    missing = [t for t in GCP_AUDIT_LOG_TYPES if t not in have]
    if missing:
        gaps.append(f"log types {', '.join(missing)} are not enabled")
    return gaps


def _audit_logging(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    frameworks = [str(f) for f in ctx.setting("frameworks", ("compliance", "frameworks"), [])]
    needing = [f for f in frameworks if f in AUDITED_FRAMEWORKS]
    if not needing:
        raise NotApplicable(
            f"no framework that requires audit logs ({', '.join(sorted(AUDITED_FRAMEWORKS))}) in compliance.frameworks"
        )
    held = f"the stack is held to {', '.join(needing)}"
    providers = {r.provider for r in stack.resources if not r.type.startswith(("pulumi:", "aicluster:"))}
    if "aws" in providers and not any(_trail_ok(t) for t in stack.of(TRAIL)):
        yield (
            None,
            f"{held} but records no AWS API activity: add a CloudTrail trail with isMultiRegionTrail and "
            "enableLogFileValidation (aicluster adds one when compliance.frameworks names soc2, hipaa, pci-dss or "
            "iso27001), or waive this for an organization trail",
        )
    if "gcp" in providers:
        configs = [(c, _gcp_audit_gaps(c)) for c in stack.of(*GCP_AUDIT)]
        if not configs:
            yield (
                None,
                f"{held} but no GCP audit config turns on Data Access logs: add an IAM audit config for "
                f"{GCP_AUDIT_SERVICE} with log types {', '.join(GCP_AUDIT_LOG_TYPES)} (Admin Activity logs are always "
                "on; aicluster adds the config when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)",
            )
        elif all(gaps for _, gaps in configs):
            for c, gaps in configs:
                yield (
                    c,
                    f"{held} but IAM audit config {c.name} does not record Data Access for every service: "
                    f"{'; '.join(gaps)}; set service {GCP_AUDIT_SERVICE} and log types "
                    f"{', '.join(GCP_AUDIT_LOG_TYPES)}",
                )
    if "azure-native" in providers:
        settings = [(s, _azure_audit_gaps(s)) for s in stack.of(*AZURE_AUDIT)]
        if not settings:
            yield (
                None,
                f"{held} but no Azure diagnostic setting sends activity logs to a workspace: add a subscription "
                "diagnostic setting with workspaceId and the Administrative category enabled (aicluster adds one "
                "when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)",
            )
        elif all(gaps for _, gaps in settings):
            for s, gaps in settings:
                yield (
                    s,
                    f"{held} but {_kind(s)} {s.name} does not keep the Azure activity log: {'; '.join(gaps)}; "
                    f"send it to a Log Analytics workspace (workspaceId) with the {AZURE_AUDIT_CATEGORY} category "
                    "enabled",
                )


audit_logging = StackRule(
    Meta(
        name="aicluster-cluster-missing-audit-logging",
        display_name="Audit logging",
        description="Clusters held to SOC 2, HIPAA, PCI DSS or ISO 27001 record cloud API activity.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Declare the framework in compliance.frameworks (AiCluster adds a CloudTrail), or waive for an "
        "organization-wide trail.",
        frameworks=("soc2", "hipaa", "pci-dss", "iso27001", "cis-aws"),
        controls=("SOC 2 CC7.2", "HIPAA 164.312(b)", "PCI DSS 10.2", "ISO/IEC 27001:2022 A.8.15", "CIS AWS 3.1"),
        config={
            "frameworks": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Frameworks the stack is held to. Default: the AiCluster's compliance.frameworks.",
            }
        },
    ),
    _audit_logging,
)


def _kind(res: Res) -> str:
    """`launch template`, `security group`, ...: the type's last segment, spaced."""
    last = res.type.rsplit(":", 1)[-1]
    words = [last[0]]
    for ch in last[1:]:
        words.append(f" {ch}" if ch.isupper() and not words[-1][-1:].isupper() else ch)
    return "".join(words).lower()


POLICIES: list[ResourceRule | StackRule] = [
    imdsv2,
    public_ip,
    admin_from_internet,
    ebs_encryption,
    efs_encryption,
    required_tags,
    azure_public_ip,
    azure_admin_from_internet,
    azure_required_tags,
    gcp_public_ip,
    gcp_admin_from_internet,
    gcp_required_labels,
    allowed_regions,
    audit_logging,
]
