"""The offline engine: run the real Pulumi program as `pulumi preview` would, under Pulumi's mocks.

The program (`__main__.py` of the project) runs with the stack's config, the project and stack
names, and `dry_run` set, exactly as the Python language host runs it: `runpy` inside
`pulumi.runtime.run_in_stack`. A mock monitor stands in for the engine and records every resource
registration: type, name, URN (the engine's URN scheme), parent, custom or component, dependencies,
and the inputs as the engine would receive them (camelCase wire names, numbers as floats). Values
that only exist after `up` stay unknown, as in a real preview; secrets are recorded as secret and
never unwrapped into the capture.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

# Pulumi's wire sentinel for values unknown during preview (what policies receive).
UNKNOWN = rpc.UNKNOWN
SECRET = "[secret]"
COMPUTED = "<computed>"
ROOT_TYPE = "pulumi:pulumi:Stack"


class _Secret:
    """Marks a captured value that the program made secret. Never carries the value."""

    def __repr__(self) -> str:
        return SECRET


SECRET_VALUE = _Secret()


@dataclass
class Resource:
    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]  # Unknown -> UNKNOWN sentinel, secrets -> SECRET_VALUE
    dependencies: list[str] = field(default_factory=list)
    protect: bool = False
    provider: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "inputs": jsonable(self.inputs),
        }


@dataclass
class Capture:
    project: str
    stack: str
    resources: list[Resource]
    outputs: dict[str, Any]
    seconds: float

    def custom(self) -> list[Resource]:
        return [r for r in self.resources if r.custom]


class ProgramError(Exception):
    """The Pulumi program failed; `message` is what `pulumi preview` would print."""


def _clean(value: Any) -> Any:
    if isinstance(value, Unknown):
        return UNKNOWN
    if rpc.is_rpc_secret(value):
        return SECRET_VALUE
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def jsonable(value: Any) -> Any:
    if value is SECRET_VALUE:
        return SECRET
    if value == UNKNOWN:
        return COMPUTED
    if isinstance(value, Mapping):
        return {k: jsonable(value[k]) for k in sorted(value)}  # stable for diffs
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


class _Mocks(mocks.Mocks):
    """Resources come back with only their inputs: every computed output stays unknown."""

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return (None, {})

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        raise ProgramError(
            f"the program called {args.token}, which needs a cloud account; the offline preview cannot answer "
            "data-source calls"
        )


class _Monitor(mocks.MockMonitor):
    def __init__(self, project: str, stack: str) -> None:
        super().__init__(_Mocks())
        self.project = project
        self.stack = stack
        self.root_urn = f"urn:pulumi:{stack}::{project}::{ROOT_TYPE}::{project}-{stack}"
        self.captured: list[Resource] = []
        self.outputs: dict[str, Any] = {}

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The engine's scheme: the parent's qualified type is prefixed, except for the root stack.
        if parent and parent != self.root_urn:
            parent_type = parent.split("::")[2]
            type_ = f"{parent_type}${type_}"
        if type_ == ROOT_TYPE:
            return self.root_urn
        return f"urn:pulumi:{self.stack}::{self.project}::{type_}::{name}"

    def RegisterResource(self, request: Any) -> Any:
        resp = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != ROOT_TYPE:
            inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.captured.append(
                Resource(
                    urn=resp.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent or None,
                    custom=bool(request.custom),
                    inputs=_clean(inputs),
                    dependencies=list(request.dependencies),
                    protect=bool(request.protect),
                    provider=request.provider or None,
                )
            )
        return resp

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if request.urn == self.root_urn:
            self.outputs = _clean(rpc.deserialize_properties(request.outputs, keep_unknowns=True))
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]


@contextlib.contextmanager
def _program_environment(project_dir: Path) -> Iterator[None]:
    """cwd and sys.path as the Python language host sets them for the program."""
    old_cwd = Path.cwd()
    old_path = list(sys.path)
    os.chdir(project_dir)
    sys.path.insert(0, str(project_dir))
    try:
        yield
    finally:
        os.chdir(old_cwd)
        sys.path[:] = old_path


def run(
    program: Callable[[], object],
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    secret_keys: frozenset[str] = frozenset(),
) -> Capture:
    """Run a Pulumi program function under the capturing mocks, in preview mode."""
    start = time.perf_counter()
    monitor = _Monitor(project, stack)
    pulumi.runtime.set_all_config(dict(config or {}), sorted(secret_keys))
    mocks.set_mocks(monitor.mocks, project=project, stack=stack, preview=True, monitor=monitor)
    settings.set_root_resource(None)  # type: ignore[arg-type]  # run_in_stack creates the root, as the host does
    try:
        _sync_await(run_in_stack(program))  # type: ignore[arg-type]
    except pulumi.RunError as err:  # the program's own, user-facing error: its message only
        raise ProgramError(str(err)) from None
    except ProgramError:
        raise
    except Exception as err:  # a crash in the program: show where, as `pulumi preview` does
        raise ProgramError("".join(traceback.format_exception(err)).rstrip()) from None
    finally:
        settings.set_root_resource(None)  # type: ignore[arg-type]
        pulumi.runtime.set_all_config({}, [])
    # Registration order depends on asyncio scheduling; sort so that two previews of the same
    # program are identical (reports and diffs compare them).
    resources = sorted(monitor.captured, key=lambda r: r.urn)
    return Capture(project, stack, resources, monitor.outputs, time.perf_counter() - start)


def run_program(
    project_dir: Path,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: frozenset[str] = frozenset(),
    program: str = "__main__.py",
) -> Capture:
    """Run the project's program file offline, as the Python language host would."""
    with _program_environment(project_dir):
        return run(lambda: runpy.run_path(program, run_name="__main__"), project, stack, config, secret_keys)
