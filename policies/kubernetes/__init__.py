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
* Node groups (policies.facts.model.NodeGroup): EKS node groups and their launch templates, GKE node pools, AKS agent
  pools. Kueue `ResourceFlavor` objects and Helm `Release`s come from the kubernetes provider.

One rule a module.
"""

from __future__ import annotations

from ..rule import Rule
from . import (
    audit_logs,
    efa_device_plugin,
    efa_single_az,
    gpu_taint,
    missing_tolerations,
    pinned_version,
    public_endpoint,
    public_ip,
    secrets_encryption,
)

POLICIES: list[Rule] = [
    public_endpoint.POLICY,
    secrets_encryption.POLICY,
    audit_logs.POLICY,
    gpu_taint.POLICY,
    missing_tolerations.POLICY,
    efa_single_az.POLICY,
    efa_device_plugin.POLICY,
    pinned_version.POLICY,
    public_ip.POLICY,
]
