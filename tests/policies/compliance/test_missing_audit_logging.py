"""Audit logging per cloud: a CloudTrail trail (p5-small), an Azure activity-log diagnostic setting, a GCP Data
Access audit config."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN, Capture
from policies.facts import Res
from policies.rule import NotApplicable
from tests.policies.conftest import judge, messages, mutated, res, set_at, stack_findings
from tests.policies.resources.azure import ACTIVITY_LOG, cluster, vmss
from tests.policies.resources.gcp import AUDIT_CONFIG, controller

AUDIT = "aicluster-cluster-missing-audit-logging"

CATEGORIES = ("Administrative", "Security", "ServiceHealth", "Alert", "Recommendation", "Policy", "Autoscale")


def activity_log(**changes: Any) -> Res:
    props: dict[str, Any] = {
        "name": "aicluster-llm",
        "workspaceId": UNKNOWN,  # the workspace's id, known once it exists
        "logs": [{"category": c, "enabled": True} for c in CATEGORIES],
    }
    return res(ACTIVITY_LOG, "llm-audit-activity", props | changes)


SOC2 = {"frameworks": ["soc2"]}


def audit_config(**changes: Any) -> Res:
    props: dict[str, Any] = {
        "service": "allServices",
        "project": UNKNOWN,
        "auditLogConfigs": [{"logType": t} for t in ("ADMIN_READ", "DATA_READ", "DATA_WRITE")],
    }
    return res(AUDIT_CONFIG, "llm-audit-data-access", props | changes)


CASES = [
    pytest.param(
        "aicluster-cluster-missing-audit-logging",
        {"llm-dev-audit-trail": set_at("enableLogFileValidation", False)},
        "the stack is held to soc2 but records no AWS API activity: add a CloudTrail trail with isMultiRegionTrail "
        "and enableLogFileValidation (aicluster adds one when compliance.frameworks names soc2, hipaa, pci-dss or "
        "iso27001), or waive this for an organization trail",
        id="trail-without-validation",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_subscription_activity_log_satisfies_the_audit_rule() -> None:
    assert stack_findings(AUDIT, [vmss(), activity_log()], SOC2) == []
    assert (
        stack_findings(AUDIT, [vmss(), activity_log(logs=[{"categoryGroup": "allLogs", "enabled": True}])], SOC2) == []
    )
    workspace = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.OperationalInsights/workspaces/llm-logs"
    assert stack_findings(AUDIT, [vmss(), activity_log(workspaceId=workspace)], SOC2) == []
    with pytest.raises(NotApplicable, match="no framework that requires audit logs"):  # held to none
        stack_findings(AUDIT, [vmss()])
    declared = cluster(compliance={"frameworks": ["hipaa"]})
    assert stack_findings(AUDIT, [declared, vmss(), activity_log()]) == []


def test_azure_stack_without_an_activity_log() -> None:
    assert stack_findings(AUDIT, [vmss()], SOC2) == [
        "the stack is held to soc2 but no Azure diagnostic setting sends activity logs to a workspace: add a "
        "subscription diagnostic setting with workspaceId and the Administrative category enabled (aicluster adds "
        "one when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)"
    ]


@pytest.mark.parametrize(
    ("changes", "gaps"),
    [
        pytest.param({"workspaceId": None}, "workspaceId is not set", id="no-workspace"),
        pytest.param(
            {"logs": [{"category": "Administrative", "enabled": False}, {"category": "Security", "enabled": True}]},
            "the Administrative log category is not enabled",
            id="administrative-off",
        ),
        pytest.param(
            {"workspaceId": "", "logs": []},
            "workspaceId is not set; the Administrative log category is not enabled",
            id="neither",
        ),
    ],
)
def test_activity_log_that_keeps_no_administrative_record(changes: dict[str, Any], gaps: str) -> None:
    assert stack_findings(AUDIT, [vmss(), activity_log(**changes)], SOC2) == [
        f"the stack is held to soc2 but subscription diagnostic setting llm-audit-activity does not keep the Azure "
        f"activity log: {gaps}; send it to a Log Analytics workspace (workspaceId) with the Administrative category "
        "enabled"
    ]
    # one complete setting is enough
    assert stack_findings(AUDIT, [vmss(), activity_log(**changes), activity_log()], SOC2) == []


def test_data_access_audit_config_satisfies_the_audit_rule() -> None:
    assert stack_findings(AUDIT, [controller(), audit_config()], SOC2) == []
    with pytest.raises(NotApplicable, match="no framework that requires audit logs"):  # held to none
        stack_findings(AUDIT, [controller()])


def test_gcp_stack_without_an_audit_config() -> None:
    assert stack_findings(AUDIT, [controller()], SOC2) == [
        "the stack is held to soc2 but no GCP audit config turns on Data Access logs: add an IAM audit config for "
        "allServices with log types ADMIN_READ, DATA_READ, DATA_WRITE (Admin Activity logs are always on; aicluster "
        "adds the config when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)"
    ]


@pytest.mark.parametrize(
    ("changes", "gaps"),
    [
        pytest.param(
            {"service": "storage.googleapis.com"},
            "service is 'storage.googleapis.com', not allServices",
            id="one-service",
        ),
        pytest.param(
            {"auditLogConfigs": [{"logType": "ADMIN_READ"}]},
            "log types DATA_READ, DATA_WRITE are not enabled",
            id="no-data",
        ),
    ],
)
def test_audit_config_that_misses_data_access(changes: dict[str, Any], gaps: str) -> None:
    assert stack_findings(AUDIT, [controller(), audit_config(**changes)], SOC2) == [
        f"the stack is held to soc2 but IAM audit config llm-audit-data-access does not record Data Access for every "
        f"service: {gaps}; set service allServices and log types ADMIN_READ, DATA_READ, DATA_WRITE"
    ]
    assert stack_findings(AUDIT, [controller(), audit_config(**changes), audit_config()], SOC2) == []
