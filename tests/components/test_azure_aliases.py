"""Azure components drop the azure-native SDK's API-version aliases (each one cost the SDK a chain of Outputs and
tasks per resource) and keep every other alias; what the engine records about a resource does not change."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure
import pytest

from aicluster.catalog import Catalog
from aicluster.plan import plan
from aicluster.preview import engine
from aicluster.spec import parse_cluster
from components import AiCluster
from components.azure.aliases import VERSIONED_TYPE, is_api_version_alias, without_api_version_aliases
from tests.helpers import azure_cluster

VERSIONED = "azure-native:network/v20230901:Subnet"


@pytest.mark.parametrize(
    ("alias", "dropped"),
    [
        pytest.param(pulumi.Alias(type_=VERSIONED), True, id="api-version-of-the-type"),
        pytest.param(pulumi.Alias(type_="azure-native:netapp/v20240901preview:Pool"), True, id="preview-version"),
        pytest.param(pulumi.Alias(type_="azure-native:insights:DiagnosticSetting"), False, id="rename-kept"),
        pytest.param(pulumi.Alias(type_=VERSIONED, name="old-name"), False, id="also-renames-the-resource"),
        pytest.param(pulumi.Alias(type_=VERSIONED, parent=None), False, id="also-moves-the-parent"),
        pytest.param(pulumi.Alias(name="old-name"), False, id="name-only"),
        pytest.param("urn:pulumi:s::p::azure-native:network/v20230901:Subnet::x", False, id="urn-string"),
        pytest.param(pulumi.Alias(type_="kubernetes:apps/v1beta1:Deployment"), False, id="other-package"),
    ],
)
def test_only_plain_api_version_aliases_are_dropped(alias: Any, dropped: bool) -> None:
    assert is_api_version_alias(alias) is dropped


def test_transformation_keeps_props_and_other_options() -> None:
    keep = pulumi.Alias(type_="azure-native:insights:DiagnosticSetting")
    opts = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=VERSIONED), keep], ignore_changes=["tags"])
    props = {"location": "eastus"}
    args = pulumi.ResourceTransformationArgs(None, "azure-native:network:Subnet", "s", props, opts)  # type: ignore[arg-type]
    result = without_api_version_aliases(args)
    assert result is not None
    assert result.props is props
    assert result.opts.aliases == [keep]
    assert result.opts.ignore_changes == ["tags"]
    assert opts.aliases is not None
    assert len(opts.aliases) == 2
    only_versions = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=VERSIONED)])
    result = without_api_version_aliases(
        pulumi.ResourceTransformationArgs(None, "azure-native:network:Subnet", "s", props, only_versions)  # type: ignore[arg-type]
    )
    assert result is not None
    assert result.opts.aliases is None
    other = pulumi.ResourceTransformationArgs(None, "aws:ec2/vpc:Vpc", "v", props, opts)  # type: ignore[arg-type]
    assert without_api_version_aliases(other) is None


def test_resources_under_azure_components_register_without_version_aliases(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole Azure cluster (network, pool, Lustre, controller, audit log) against one resource made outside any
    component: the SDK gives that one its version aliases, ours carry none and keep the SDK's renames."""
    sent: dict[str, list[str]] = {}
    register = engine._Monitor.RegisterResource

    def recording(self: engine._Monitor, request: Any) -> Any:
        sent[request.name] = [a.spec.type or a.urn for a in request.aliases]
        return register(self, request)

    monkeypatch.setattr(engine._Monitor, "RegisterResource", recording)
    cluster_plan = plan(parse_cluster(azure_cluster(compliance={"frameworks": ["hipaa"]}), "test"), catalog)

    def program() -> None:
        AiCluster(cluster_plan.name, {"plan": cluster_plan})
        azure.resources.ResourceGroup("outside", location="eastus")

    capture = engine.run(program, "aicluster", "test")

    assert len([t for t in sent["outside"] if VERSIONED_TYPE.fullmatch(t)]) > 10  # the SDK does add them
    ours = [r for r in capture.custom() if r.type.startswith("azure-native:") and r.name != "outside"]
    assert len(ours) >= 15
    for r in ours:
        assert not [t for t in sent[r.name] if VERSIONED_TYPE.fullmatch(t)], r.name
    (diag,) = [r for r in ours if r.type == "azure-native:monitor:SubscriptionDiagnosticSetting"]
    assert "azure-native:insights:SubscriptionDiagnosticSetting" in sent[diag.name]  # a rename stays
