"""A real capture to mutate: the p5-small example stack as the offline engine records it."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from aicluster.preview import PolicyResult, Resource
from aicluster.preview.engine import Capture, run_program
from aicluster.preview.policy import evaluate
from aicluster.stackfile import find_project, read_stack
from policies import POLICIES, ResourceRule, Rule, StackRule
from policies.facts import Res, Stack
from tests.conftest import ROOT

_CAPTURES: dict[str, Capture] = {}


def capture_of(stack: str) -> Capture:
    """The example stack's program run under the capturing mocks, as the pack receives it: a fresh deep copy each
    call (tests may mutate it), of one run per stack per test process (a pure function of the stack and the code;
    many tests judge the same example stacks)."""
    if stack not in _CAPTURES:
        st = read_stack(find_project(ROOT), stack)
        _CAPTURES[stack] = run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)
    return copy.deepcopy(_CAPTURES[stack])


@pytest.fixture(scope="session")
def p5_small() -> Capture:
    return capture_of("p5-small")


def policy(name: str) -> Rule:
    return next(p for p in POLICIES if p.name == name)


def res(type_: str, name: str, props: dict[str, Any], **links: list[Res]) -> Res:
    """A resource as the engine hands it to the pack; `links` are its property dependencies."""
    r = Res(type_, name, f"urn:pulumi:s::p::{type_}::{name}", props)
    r.property_dependencies = dict(links)
    return r


def findings(name: str, type_: str, props: dict[str, Any], config: dict[str, Any] | None = None) -> list[str]:
    """What a resource policy reports on one resource named x."""
    found: list[str] = []
    rule = policy(name)
    assert isinstance(rule, ResourceRule)
    assert rule.types is None or type_ in rule.types
    rule.run(res(type_, "x", props), config or {}, lambda m, u=None: found.append(m))
    return found


def stack_findings(name: str, resources: Sequence[Res], config: dict[str, Any] | None = None) -> list[str]:
    """What a stack policy reports on these resources."""
    found: list[str] = []
    rule = policy(name)
    assert isinstance(rule, StackRule)
    rule.run(Stack(resources), config or {}, lambda m, u=None: found.append(m))
    return found


Mutation = Callable[[dict[str, Any]], None]


def mutated(capture: Capture, changes: dict[str, Mutation]) -> Capture:
    """A copy of the capture with `changes[name](inputs)` applied to the named resources."""
    resources: list[Resource] = copy.deepcopy(capture.resources)
    for r in resources:
        if r.name in changes and not r.type.startswith("aicluster:aws"):
            changes[r.name](r.inputs)
    return Capture(capture.project, capture.stack, resources, capture.outputs, capture.seconds)


def judge(capture: Capture, names: Sequence[str], config: dict[str, Any] | None = None) -> PolicyResult:
    return evaluate(capture, config, [policy(n) for n in names])


def messages(result: PolicyResult) -> list[str]:
    return [v.message for v in result.violations]
