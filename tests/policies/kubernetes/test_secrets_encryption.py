"""Kubernetes secrets encrypted with a KMS key on EKS, GKE and AKS."""

from __future__ import annotations

from typing import Any

import pytest

from policies.facts.kubernetes import AKS_CLUSTER, EKS_CLUSTER, GKE_CLUSTER
from tests.policies.conftest import findings
from tests.policies.resources.kubernetes import CLUSTERS, changed

SECRETS = "aicluster-kubernetes-cluster-enforce-secrets-encryption"


@pytest.mark.parametrize("type_", list(CLUSTERS), ids=lambda t: t.split(":")[0])
def test_encrypted_control_planes_pass(type_: str) -> None:
    assert findings(SECRETS, type_, CLUSTERS[type_]) == []


@pytest.mark.parametrize(
    ("type_", "change", "expected"),
    [
        pytest.param(EKS_CLUSTER, lambda p: p.pop("encryptionConfig"), "encryptionConfig does not", id="eks-none"),
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["encryptionConfig"].update(resources=[]),
            "encryptionConfig does not encrypt secrets",
            id="eks-not-secrets",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p.update(databaseEncryption={"state": "DECRYPTED"}),
            "databaseEncryption.state is DECRYPTED with no keyName",
            id="gke-decrypted",
        ),
        pytest.param(
            AKS_CLUSTER,
            lambda p: p.pop("securityProfile"),
            "securityProfile.azureKeyVaultKms.enabled is not set",
            id="aks-no-kms",
        ),
    ],
)
def test_secrets_without_a_kms_key_fail(type_: str, change: Any, expected: str) -> None:
    (message,) = findings(SECRETS, type_, changed(CLUSTERS[type_], change))
    assert message.startswith("cluster x: ")
    assert expected in message
    assert "; set " in message
