"""Managed Kubernetes (EKS, GKE, AKS): a closed control plane, encrypted secrets, audit logs, tainted accelerator
nodes that Kueue's flavors tolerate, EFA node groups in one zone with their device plugin, pinned add-ons and no
public node addresses.

Each rule reads the resources as the engine hands them (camelCase inputs of the providers' own types):

* `aws:eks/cluster:Cluster` vpcConfig.endpointPublicAccess (default true) / publicAccessCidrs (default 0.0.0.0/0),
  encryptionConfig {provider.keyArn, resources}, enabledClusterLogTypes (EKS control plane logging:
  https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html).
* `gcp:container/cluster:Cluster` privateClusterConfig.enablePrivateEndpoint, masterAuthorizedNetworksConfig,
  databaseEncryption {state, keyName}, loggingConfig.enableComponents (GKE: APISERVER among SYSTEM_COMPONENTS).
* `azure-native:containerservice:ManagedCluster` apiServerAccessProfile {enablePrivateCluster, authorizedIPRanges},
  securityProfile.azureKeyVaultKms.enabled; its audit logs go through a diagnostic setting on the cluster with the
  kube-audit or kube-audit-admin category (AKS monitoring reference:
  https://learn.microsoft.com/en-us/azure/aks/monitor-aks-reference#resource-logs).
* Node groups (policies.facts.NodeGroup): EKS node groups and their launch templates, GKE node pools, AKS agent
  pools. Kueue `ResourceFlavor` objects and Helm `Release`s come from the kubernetes provider.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import KubernetesAddon, load_catalog

from .facts import (
    AKS_CLUSTER,
    EKS_CLUSTER,
    EKS_NODE_GROUP,
    GKE_CLUSTER,
    KUBERNETES_CLUSTERS,
    NODE_GROUP_TYPES,
    UNKNOWN,
    NodeGroup,
    Res,
    Stack,
    Taint,
    get,
    items,
)
from .rule import Ctx, Meta, NotApplicable, ResourceRule, StackRule

MANDATORY = EnforcementLevel.MANDATORY
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
RESOURCE_FLAVORS = (
    "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor",
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
)
DIAGNOSTIC_SETTINGS = ("azure-native:insights:DiagnosticSetting", "azure-native:monitor:DiagnosticSetting")
AKS_AUDIT_CATEGORIES = ("kube-audit", "kube-audit-admin")
AKS_AUDIT_GROUPS = ("audit", "allLogs")  # AKS category groups that hold kube-audit
HOLDING_EFFECTS = ("NoSchedule", "NoExecute")  # taints that keep pods without the toleration off
EFA_PLUGIN = "efa-device-plugin"  # catalog add-on id
# An exact chart version: semantic version, optionally "v"-prefixed, with pre-release/build (no ranges, no latest).
EXACT_VERSION = re.compile(r"v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")
OPEN_NETWORKS = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))


def _open(cidrs: list[Any]) -> list[str]:
    """The CIDRs that open the endpoint to the whole internet (0.0.0.0/0, ::/0, or written as 0.0.0.0/1 etc.)."""
    out = []
    for c in cidrs:
        try:
            net = ipaddress.ip_network(str(c), strict=False)
        except ValueError:
            continue
        if net.prefixlen <= 1 or net in OPEN_NETWORKS:
            out.append(str(c))
    return out


# -- 1. control-plane endpoint ------------------------------------------------------------------------------------


def _endpoint(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type == EKS_CLUSTER:
        public = res.get("vpcConfig", "endpointPublicAccess", default=True)  # EKS's default: public
        if public is UNKNOWN or public is False:
            return
        if res.get("vpcConfig", "publicAccessCidrs") is UNKNOWN:
            return
        cidrs = items(res.props, "vpcConfig", "publicAccessCidrs") or ["0.0.0.0/0"]  # EKS's default
        where, fix = "vpcConfig.publicAccessCidrs", "set vpcConfig.endpointPublicAccess = false"
    elif res.type == GKE_CLUSTER:
        if res.get("privateClusterConfig", "enablePrivateEndpoint") in (True, UNKNOWN):
            return
        if res.get("controlPlaneEndpointsConfig", "ipEndpointsConfig", "enablePublicEndpoint") is False:
            return
        if res.get("masterAuthorizedNetworksConfig") is UNKNOWN:
            return
        blocks = items(res.props, "masterAuthorizedNetworksConfig", "cidrBlocks")
        cidrs = [get(b, "cidrBlock") for b in blocks]
        where, fix = "masterAuthorizedNetworksConfig", "set privateClusterConfig.enablePrivateEndpoint = true"
    else:
        if res.get("apiServerAccessProfile", "enablePrivateCluster") in (True, UNKNOWN):
            return
        if res.get("apiServerAccessProfile", "authorizedIPRanges") is UNKNOWN:
            return
        cidrs = items(res.props, "apiServerAccessProfile", "authorizedIPRanges")
        where, fix = "apiServerAccessProfile.authorizedIPRanges", "set apiServerAccessProfile.enablePrivateCluster"
        fix += " = true"
    spec_fix = "(scheduler.endpoint: private, or scheduler.authorized_networks: your admin CIDRs)"
    if not cidrs:
        yield (
            f"cluster {res.name}: the API server endpoint is public and {where} names no authorized networks, so "
            f"anyone on the internet can reach it; {fix}, or authorize only your networks {spec_fix}"
        )
        return
    wide = _open(cidrs)
    if wide:
        yield (
            f"cluster {res.name}: the API server endpoint is public and {where} authorizes {', '.join(wide)} (the "
            f"whole internet); {fix}, or authorize only your networks {spec_fix}"
        )


endpoint = ResourceRule(
    Meta(
        name="aicluster-kubernetes-cluster-disallow-public-endpoint",
        display_name="Private Kubernetes API endpoint",
        description="An EKS, GKE or AKS API server is private, or public only to authorized networks (none of them "
        "0.0.0.0/0).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Set scheduler.endpoint: private, or list your admin networks in scheduler.authorized_networks.",
        frameworks=("soc2", "pci-dss", "iso27001"),
        controls=("CIS Amazon EKS Benchmark 5.4.2", "CIS GKE Benchmark 5.6.3", "CIS AKS Benchmark 5.4.1"),
    ),
    KUBERNETES_CLUSTERS,
    _endpoint,
)


# -- 2. secrets encryption ----------------------------------------------------------------------------------------


def _secrets(res: Res, ctx: Ctx) -> Iterator[str]:
    fix = "(scheduler secrets encryption is KMS in aicluster's components)"
    if res.type == EKS_CLUSTER:
        configs = items(res.props, "encryptionConfig") or [res.get("encryptionConfig")]
        if res.get("encryptionConfig") is UNKNOWN:
            return
        keyed = [
            c
            for c in configs
            if isinstance(c, Mapping)
            and get(c, "provider", "keyArn") is not None
            and "secrets" in [*items(c, "resources"), *([UNKNOWN] if get(c, "resources") is UNKNOWN else [])]
        ]
        if not keyed:
            yield (
                f"cluster {res.name}: encryptionConfig does not encrypt secrets with a KMS key (got "
                f"{res.get('encryptionConfig')!r}); set encryptionConfig = {{provider: {{keyArn: <KMS key ARN>}}, "
                f"resources: [secrets]}} {fix}"
            )
    elif res.type == GKE_CLUSTER:
        state, key = res.get("databaseEncryption", "state"), res.get("databaseEncryption", "keyName")
        if state is UNKNOWN or (state == "ENCRYPTED" and key is not None):
            return
        yield (
            f"cluster {res.name}: databaseEncryption.state is {state or 'not set'}"
            + ("" if key is not None else " with no keyName")
            + f"; set databaseEncryption = {{state: ENCRYPTED, keyName: <Cloud KMS key>}} {fix}"
        )
    else:
        enabled = res.get("securityProfile", "azureKeyVaultKms", "enabled")
        if enabled is True or enabled is UNKNOWN:
            return
        got = enabled if enabled is not None else "not set"
        yield (
            f"cluster {res.name}: securityProfile.azureKeyVaultKms.enabled is {got}"
            f"; set securityProfile.azureKeyVaultKms = {{enabled: true, keyId: <Key Vault key>}} {fix}"
        )


secrets_encryption = ResourceRule(
    Meta(
        name="aicluster-kubernetes-cluster-enforce-secrets-encryption",
        display_name="Kubernetes secrets encrypted with KMS",
        description="Kubernetes secrets are envelope-encrypted with a customer-managed KMS key (EKS encryptionConfig, "
        "GKE databaseEncryption, AKS Key Vault KMS).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Encrypt secrets with a KMS key: EKS encryptionConfig, GKE databaseEncryption ENCRYPTED, AKS "
        "securityProfile.azureKeyVaultKms.",
        frameworks=("soc2", "pci-dss", "hipaa", "iso27001"),
        controls=("CIS Amazon EKS Benchmark 5.3.1", "CIS GKE Benchmark 5.3.1", "CIS AKS Benchmark 5.3.1"),
    ),
    KUBERNETES_CLUSTERS,
    _secrets,
)


# -- 3. audit logs ------------------------------------------------------------------------------------------------


def _aks_audited(stack: Stack, cluster: Res) -> bool | None:
    """Whether a diagnostic setting on the cluster sends its kube-audit logs (None: a setting's logs are unknown)."""
    unknown = False
    for d in stack.of(*DIAGNOSTIC_SETTINGS):
        uri = d.get("resourceUri")
        if cluster not in d.linked("resourceUri") and not (isinstance(uri, str) and uri.endswith(f"/{cluster.name}")):
            continue
        if d.get("logs") is UNKNOWN:
            unknown = True
        for log in items(d.props, "logs"):
            if get(log, "enabled") is not True:
                continue
            if get(log, "category") in AKS_AUDIT_CATEGORIES or get(log, "categoryGroup") in AKS_AUDIT_GROUPS:
                return True
    return None if unknown else False


def _audit(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for r in stack.of(EKS_CLUSTER):
        types = r.get("enabledClusterLogTypes")
        if types is not UNKNOWN and "audit" not in items(r.props, "enabledClusterLogTypes"):
            yield (
                r,
                f"cluster {r.name}: enabledClusterLogTypes is {items(r.props, 'enabledClusterLogTypes')} without "
                "audit, so nobody can tell who changed what in the cluster; add audit (and authenticator)",
            )
    for r in stack.of(GKE_CLUSTER):
        listed = items(r.props, "loggingConfig", "enableComponents")
        if r.get("loggingConfig", "enableComponents") is not UNKNOWN and "APISERVER" not in listed:
            yield (
                r,
                f"cluster {r.name}: loggingConfig.enableComponents is {listed}"
                " without APISERVER; set loggingConfig.enableComponents = [SYSTEM_COMPONENTS, APISERVER, ...]",
            )
    for r in stack.of(AKS_CLUSTER):
        if _aks_audited(stack, r) is False:
            yield (
                r,
                f"cluster {r.name}: no diagnostic setting on it sends kube-audit or kube-audit-admin logs; add an "
                "azure-native:insights:DiagnosticSetting with resourceUri = the cluster's id and logs [{category: "
                "kube-audit-admin, enabled: true}] to a Log Analytics workspace",
            )


audit_logs = StackRule(
    Meta(
        name="aicluster-kubernetes-cluster-enable-audit-logs",
        display_name="Kubernetes audit logs",
        description="The control plane's audit logs are on: EKS audit log type, GKE API server logs, AKS kube-audit "
        "through a diagnostic setting.",
        concern="compliance",
        severity=Severity.MEDIUM,
        enforcement=MANDATORY,
        remediation="Turn on the control plane's audit logs (aicluster's components do: audit_logs in the plan).",
        frameworks=("soc2", "pci-dss", "hipaa", "iso27001"),
        controls=("CIS Amazon EKS Benchmark 2.1.1", "CIS AKS Benchmark 2.1.1", "SOC 2 CC7.2"),
    ),
    _audit,
    types=KUBERNETES_CLUSTERS,
)


# -- 4. accelerator taint -----------------------------------------------------------------------------------------


def _holding(g: NodeGroup) -> list[Taint]:
    return [t for t in g.taints if t.effect in HOLDING_EFFECTS]


def _accelerator_taint(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    groups = [g for g in stack.node_groups if g.accelerators]
    if not groups:
        raise NotApplicable("no Kubernetes node group of accelerator nodes in the stack")
    for g in groups:
        if not _holding(g):
            got = ", ".join(str(t) for t in g.taints) or "no taint"
            yield (
                g.res,
                f"{g.name} runs {g.instance_type} ({g.accelerators} accelerators per node) with {got}, so any pod "
                "can land on its nodes and hold them; add the taint nvidia.com/gpu=present:NoSchedule (TPU: "
                "google.com/tpu=present:NoSchedule) and let the jobs that request GPUs tolerate it",
            )


accelerator_taint = StackRule(
    Meta(
        name="aicluster-kubernetes-nodegroup-enforce-gpu-taint",
        display_name="Tainted accelerator node groups",
        description="A node group whose instance type carries GPUs (or TPUs) has a NoSchedule taint, so only the "
        "jobs that need them land there.",
        concern="cost",
        severity=Severity.MEDIUM,
        enforcement=MANDATORY,
        remediation="Add nvidia.com/gpu=present:NoSchedule (google.com/tpu for TPUs) to the node group.",
    ),
    _accelerator_taint,
    types=NODE_GROUP_TYPES,
)


# -- 5. Kueue flavors tolerate their node groups' taints ----------------------------------------------------------


def _tolerates(toleration: Any, taint: Taint) -> bool:
    """Kubernetes' rule: key (or empty key with Exists), Equal value or Exists, effect (or empty: any)."""
    key, operator = get(toleration, "key", default=""), get(toleration, "operator", default="Equal")
    effect = get(toleration, "effect", default="")
    if effect and effect != taint.effect:
        return False
    if operator == "Exists":
        return key in ("", taint.key)
    return bool(key == taint.key and get(toleration, "value", default="") == taint.value)


def _flavors(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for flavor in stack.of(*RESOURCE_FLAVORS):
        selector = flavor.get("spec", "nodeLabels")
        if selector is UNKNOWN or not isinstance(selector, Mapping) or not selector:
            continue  # a flavor that selects no labels selects no node group to judge against
        tolerations = items(flavor.props, "spec", "tolerations")
        if flavor.get("spec", "tolerations") is UNKNOWN:
            continue
        shown = get(flavor.props, "metadata", "name", default=flavor.name)
        for g in stack.node_groups:
            if not all(g.labels.get(k) == v for k, v in selector.items()):
                continue
            missing = [t for t in _holding(g) if not any(_tolerates(x, t) for x in tolerations)]
            if missing:
                yield (
                    flavor,
                    f"Kueue ResourceFlavor {shown} selects {g.name} (nodeLabels {dict(selector)}) but does not "
                    f"tolerate its taint {', '.join(str(t) for t in missing)}, so the jobs it admits stay Pending; "
                    "add spec.tolerations ["
                    + ", ".join(
                        f"{{key: {t.key}, operator: Equal, value: {t.value}, effect: {t.effect}}}" for t in missing
                    )
                    + "]",
                )


flavor_tolerations = StackRule(
    Meta(
        name="aicluster-kueue-resourceflavor-missing-tolerations",
        display_name="Kueue flavors tolerate their nodes' taints",
        description="Every Kueue ResourceFlavor tolerates the NoSchedule/NoExecute taints of the node groups its "
        "nodeLabels select.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Give the flavor spec.tolerations matching its node groups' taints.",
    ),
    _flavors,
    types=RESOURCE_FLAVORS,
)


# -- 6. EFA node groups: one zone, and the device plugin ----------------------------------------------------------


def _efa_groups(stack: Stack) -> list[NodeGroup]:
    groups = [g for g in stack.node_groups if g.res.type == EKS_NODE_GROUP and g.efa]
    if not groups:
        raise NotApplicable("no EKS node group of EFA nodes in the stack")
    return groups


def _efa_single_az(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for g in _efa_groups(stack):
        named = items(g.res.props, "subnetIds")
        if len(g.zones) > 1 or (not g.zones and len(named) > 1):
            where = ", ".join(g.zones) if g.zones else f"{len(named)} subnets"
            yield (
                g.res,
                f"{g.name} spreads EFA nodes over {where}; EFA traffic does not cross Availability Zones, so its "
                "nodes cannot all reach each other over the fabric: give subnetIds one subnet (the pool's zone)",
            )


efa_single_az = StackRule(
    Meta(
        name="aws-eks-nodegroup-enforce-efa-single-az",
        display_name="EFA node groups in one AZ",
        description="EKS node groups of EFA nodes launch into subnets of a single Availability Zone.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Give the node group one subnet, in the zone of its pool (and of its capacity reservation).",
    ),
    _efa_single_az,
    types=(EKS_NODE_GROUP,),
)


def _chart(release: Res) -> str:
    chart = release.get("chart")
    return chart.rstrip("/").rsplit("/", 1)[-1].split(":", 1)[0] if isinstance(chart, str) else ""


def _efa_plugin(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    groups = _efa_groups(stack)
    addon = stack.catalog.addons.get(EFA_PLUGIN)
    chart = addon.chart if addon else "aws-efa-k8s-device-plugin"
    releases = stack.of(HELM_RELEASE, HELM_CHART)
    if any(_chart(r) == chart or r.get("chart") is UNKNOWN for r in releases):
        return
    for g in groups:
        yield (
            g.res,
            f"{g.name} has EFA interfaces but no Helm release of {chart} is in the stack, so pods cannot request "
            "vpc.amazonaws.com/efa and NCCL falls back to TCP; install the chart "
            + (f"{chart} {addon.version} from {addon.repository}" if addon else chart),
        )


efa_plugin = StackRule(
    Meta(
        name="aws-eks-nodegroup-missing-efa-device-plugin",
        display_name="EFA device plugin installed",
        description="A cluster with EFA node groups installs the AWS EFA Kubernetes device plugin.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Install the aws-efa-k8s-device-plugin Helm chart (aicluster's add-ons do for EFA pools).",
    ),
    _efa_plugin,
    types=(EKS_NODE_GROUP,),
)


# -- 7. pinned add-on versions ------------------------------------------------------------------------------------


def _pinned(res: Res, ctx: Ctx) -> Iterator[str]:
    version = res.get("version")
    if version is UNKNOWN:
        return
    chart = res.get("chart")
    if isinstance(version, str) and EXACT_VERSION.fullmatch(version.strip()):
        return
    got = f"version {version!r}" if version not in (None, "") else "no version"
    addon = _addon(chart)
    yield (
        f"Helm release {res.name} (chart {chart}) has {got}, so every `up` may install whatever the repository "
        "serves then; pin an exact chart version"
        + (f" (e.g. {addon.version}, the catalog's)" if addon else " (e.g. 1.2.3)")
    )


def _addon(chart: Any) -> KubernetesAddon | None:
    """The catalog's add-on of a chart (its pinned version is the fix to suggest)."""
    if not isinstance(chart, str):
        return None
    name = chart.rstrip("/").rsplit("/", 1)[-1]
    return next((a for a in load_catalog().addons.values() if a.chart == name), None)


pinned_versions = ResourceRule(
    Meta(
        name="aicluster-helm-release-enforce-pinned-version",
        display_name="Pinned add-on versions",
        description="Every Helm release names an exact chart version (not empty, not a range, not latest).",
        concern="compliance",
        severity=Severity.MEDIUM,
        enforcement=MANDATORY,
        remediation="Set the release's version to an exact chart version (aicluster pins them in its catalog).",
        frameworks=("soc2", "iso27001"),
        controls=("SOC 2 CC8.1 (change management)",),
    ),
    (HELM_RELEASE, HELM_CHART),
    _pinned,
)


# -- 8. no public node addresses ----------------------------------------------------------------------------------


def _public_nodes(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for g in stack.node_groups:
        if g.public:
            yield (
                g.res,
                f"{g.name} gives its nodes public IP addresses ({g.public}); {g.fix_public}: nodes egress "
                "through NAT and are reached through the cluster's API",
            )


public_nodes = StackRule(
    Meta(
        name="aicluster-kubernetes-nodegroup-disallow-public-ip",
        display_name="No public node addresses",
        description="Kubernetes nodes get no public IP addresses (EKS launch templates and subnets, GKE private "
        "nodes, AKS enableNodePublicIP).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Keep nodes private: no associatePublicIpAddress, GKE private nodes, AKS enableNodePublicIP false.",
        frameworks=("cis-aws", "soc2"),
        controls=("CIS Amazon EKS Benchmark 5.4.3", "CIS GKE Benchmark 5.6.5", "SOC 2 CC6.1"),
    ),
    _public_nodes,
    types=NODE_GROUP_TYPES,
)

POLICIES: list[ResourceRule | StackRule] = [
    endpoint,
    secrets_encryption,
    audit_logs,
    accelerator_taint,
    flavor_tolerations,
    efa_single_az,
    efa_plugin,
    pinned_versions,
    public_nodes,
]
