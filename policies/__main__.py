"""Entry point the Pulumi CLI runs: builds the pack from its explicit list and serves it (blocks)."""

from pulumi_policy import EnforcementLevel, PolicyPack

from policies import PACK_NAME, POLICIES

PolicyPack(
    name=PACK_NAME,
    policies=list(POLICIES),
    enforcement_level=EnforcementLevel.ADVISORY,
    description="Cost, power, compliance and AI-fabric guardrails for GPU clusters",
    display_name="aicluster guardrails",
)
