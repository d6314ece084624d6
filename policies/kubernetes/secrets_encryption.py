"""Kubernetes secrets encrypted with KMS: envelope encryption with a customer-managed key (EKS encryptionConfig
{provider.keyArn, resources}, GKE databaseEncryption {state, keyName}, AKS securityProfile.azureKeyVaultKms)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import UNKNOWN, Res, get, items
from ..facts.kubernetes import EKS_CLUSTER, GKE_CLUSTER, KUBERNETES_CLUSTERS
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY


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


POLICY = ResourceRule(
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
