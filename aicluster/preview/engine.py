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

import asyncio
import concurrent.futures
import contextlib
import functools
import importlib.metadata
import os
import runpy
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime import resource as pulumi_resource
from pulumi.runtime import stack as pulumi_stack
from pulumi.runtime.proto import resource_pb2, source_pb2
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

from . import sdkload

# Pulumi's wire sentinel for values unknown during preview (what policies receive).
UNKNOWN = rpc.UNKNOWN
SECRET = "[secret]"
COMPUTED = "<computed>"
ROOT_TYPE = "pulumi:pulumi:Stack"


class _Secret:
    """Marks a captured value that the program made secret. Never carries the value."""

    def __repr__(self) -> str:
        return SECRET

    # One marker: code compares it by identity (`is SECRET_VALUE`), so a copied capture keeps the same object.
    def __copy__(self) -> _Secret:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> _Secret:
        return self


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
    # input property (camelCase) -> URNs of the resources its value came from
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    protect: bool = False
    provider: str | None = None
    # the inputs whose changes the engine ignores (ResourceOptions.ignore_changes, as Pulumi paths: `a.b[0].c`)
    ignore_changes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """As a Pulumi state resource: `protect` where set, and `propertyDependencies` (the inputs whose values come
        from other resources), which the change classification follows: a replaced resource changes its
        dependents' inputs."""
        out: dict[str, Any] = {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "inputs": jsonable(self.inputs),
        }
        if self.protect:
            out["protect"] = True
        if self.property_dependencies:
            out["propertyDependencies"] = self.property_dependencies
        if self.ignore_changes:
            out["ignoreChanges"] = self.ignore_changes
        return out


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


def _has_unknown(value: Any) -> bool:
    if isinstance(value, Unknown):
        return True
    if isinstance(value, Mapping):
        return any(_has_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_unknown(v) for v in value)
    return False


class _Mocks(mocks.Mocks):
    """As in a real preview of resources being created: outputs that are inputs are known, the id and
    every computed output (ARNs, generated names, addresses) stay unknown."""

    def __init__(self, config: Mapping[str, str]) -> None:
        # What a provider fills in from its own configuration during a real preview (GCP's default project).
        self.provider_defaults = {"gcp": {"project": config["gcp:project"]}} if config.get("gcp:project") else {}

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = {k: v for k, v in args.inputs.items() if not _has_unknown(v)}
        for key, value in self.provider_defaults.get(args.typ.split(":", 1)[0], {}).items():
            state.setdefault(key, value)
        return (None, state)

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        raise ProgramError(
            f"the program called {args.token}, which needs a cloud account; the offline preview cannot answer "
            "data-source calls"
        )


def _package_version(package: str) -> str:
    try:
        return importlib.metadata.version(f"pulumi-{package}")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


class _Monitor(mocks.MockMonitor):
    def __init__(self, project: str, stack: str, config: Mapping[str, str], secret_keys: frozenset[str]) -> None:
        self._mocks = _Mocks(config)
        super().__init__(self._mocks)
        self.project = project
        self.stack = stack
        self.config = config
        self.secret_keys = secret_keys
        self.root_urn = f"urn:pulumi:{stack}::{project}::{ROOT_TYPE}::{project}-{stack}"
        self.captured: list[Resource] = []
        self.default_providers: dict[str, Resource] = {}
        self.outputs: dict[str, Any] = {}

    def _default_provider(self, package: str) -> str:
        """The engine registers one default provider per package for resources that name none,
        configured from the stack's `<package>:*` config; record it as the engine would."""
        if package not in self.default_providers:
            version = _package_version(package)
            name = "default_" + version.replace(".", "_")
            inputs: dict[str, Any] = {"version": version}
            for key, value in self.config.items():
                if key.startswith(f"{package}:"):
                    inputs[key.split(":", 1)[1]] = SECRET_VALUE if key in self.secret_keys else value
            self.default_providers[package] = Resource(
                urn=f"urn:pulumi:{self.stack}::{self.project}::pulumi:providers:{package}::{name}",
                type=f"pulumi:providers:{package}",
                name=name,
                parent=None,
                custom=True,
                inputs=inputs,
            )
        return self.default_providers[package].urn

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The engine's scheme: the parent's qualified type is prefixed, except for the root stack.
        if parent and parent != self.root_urn:
            parent_type = parent.split("::")[2]
            type_ = f"{parent_type}${type_}"
        if type_ == ROOT_TYPE:
            return self.root_urn
        return f"urn:pulumi:{self.stack}::{self.project}::{type_}::{name}"

    def GetDeploymentInfo(self, request: Any) -> Any:
        """The SDK's mock monitor offers resource references, which it cannot answer: a resource given as another's
        input is rebuilt inside the registration call and then awaited on the wrong event loop, and the preview
        waits forever (pulumi/pulumi#6465). Without the feature the SDK sends such an input as the resource's ID
        (unknown until it exists, as in a real preview) or a component's URN, and the dependency as usual."""
        info = super().GetDeploymentInfo(request)  # type: ignore[no-untyped-call]
        features = [f for f in info.supportedFeatures if f != resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES]
        return resource_pb2.DeploymentInfo(supportedFeatures=features)

    def SupportsFeature(self, request: Any) -> Any:
        if request.id == "resourceReferences":  # an SDK that probes features one by one (see GetDeploymentInfo)
            return type("SupportsFeatureResponse", (object,), {"hasSupport": False})
        return super().SupportsFeature(request)  # type: ignore[no-untyped-call]

    # Every call the SDK's mock monitor answers with what it awaits on the calling thread's loop (_sync_await) runs
    # with the kept thread's loop for the run (_CallThread.loop), not one Pulumi would make there and never close.
    def RegisterResource(self, request: Any) -> Any:
        with _call_thread().loop():
            return self._register(request)

    def Invoke(self, request: Any) -> Any:
        with _call_thread().loop():
            return super().Invoke(request)  # type: ignore[no-untyped-call]

    def ReadResource(self, request: Any) -> Any:
        with _call_thread().loop():
            return super().ReadResource(request)  # type: ignore[no-untyped-call]

    def _register(self, request: Any) -> Any:
        """What the SDK's mock monitor does (MockMonitor.RegisterResource), with one deserialization of the inputs,
        which the capture keeps too: the new resource's state is its known inputs (_Mocks.new_resource), so the
        response is the request's own properties less the unknown ones, not those inputs serialized again (the SDK
        turns the one into the other unchanged: same values, secrets, assets)."""
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == ROOT_TYPE:
            return resource_pb2.RegisterResourceResponse(urn=urn)
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
        resource_id, state = self._mocks.new_resource(
            mocks.MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=inputs,
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
            )
        )
        answer = type(request.object)()  # a protobuf Struct
        answer.CopyFrom(request.object)
        for key in [k for k in answer if k not in state]:
            del answer[key]
        added = {k: v for k, v in state.items() if k not in request.object}  # the provider's defaults
        if added:
            answer.update(_sync_await(rpc.serialize_properties(added, {})))
        # as the SDK's mock monitor records it (for reads of it): the id it was given, None here
        self.resources[urn] = mocks.MockMonitor.ResourceRegistration(urn, resource_id, state)  # type: ignore[arg-type]
        provider = request.provider or None
        if request.custom and not provider and not request.type.startswith("pulumi:providers:"):
            provider = self._default_provider(request.type.split(":", 1)[0])
        self.captured.append(
            Resource(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent or None,
                custom=bool(request.custom),
                inputs=_clean(inputs),
                dependencies=list(request.dependencies),
                property_dependencies={
                    k: sorted(v.urns) for k, v in sorted(request.propertyDependencies.items()) if v.urns
                },
                protect=bool(request.protect),
                provider=provider,
                ignore_changes=sorted(request.ignoreChanges),
            )
        )
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id or "", object=answer)

    def RegisterResourceOutputs(self, request: Any) -> Any:
        with _call_thread().loop():
            if request.urn == self.root_urn:
                self.outputs = _clean(rpc.deserialize_properties(request.outputs, keep_unknowns=True))
            return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]


# Stands for "a root exists" while set_mocks runs (see run); never registered, never seen by the program.
_NO_ROOT_YET = object()


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on `loop` and close it, so that no loop is left for the garbage collector (its __del__
    at interpreter exit printed "Exception ignored in: BaseEventLoop.__del__ ... Invalid file descriptor")."""
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


class _CallThread(concurrent.futures.ThreadPoolExecutor):
    """Where the mock monitor's calls run: the SDK hands each one to its event loop's default executor, and every
    run's loop gets this one. One thread, kept for the process: the calls are pure Python, so more threads only
    take turns on the GIL, and a pool of its own per run started its threads again each time. The thread has one
    event loop per run for what Pulumi's mock monitor awaits inside a call (its _sync_await), closed when the run
    ends: a loop per call cost about 0.2 ms each (an Azure preview at 3,072 nodes makes about 120 calls), and
    Pulumi's own, made when a thread has none, is never closed (its __del__ at exit printed "Invalid file
    descriptor")."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="aicluster-mock-monitor", initializer=self._started)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _started(self) -> None:
        self._thread = threading.current_thread()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """A run's loop shuts its default executor down when it closes: this one stays for the next run. Its idle
        thread ends with the interpreter (concurrent.futures joins it at exit), or with stop_call_thread()."""

    def stop(self) -> None:
        super().shutdown(wait=True)

    @contextlib.contextmanager
    def loop(self) -> Iterator[None]:
        """Inside a call: the thread's event loop for this run, as the current one."""
        if threading.current_thread() is not self._thread:  # a call from elsewhere: a loop of its own
            with _own_loop():
                yield
            return
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            yield
        finally:
            asyncio.set_event_loop(None)

    def end_run(self) -> None:
        """Close the run's loop on the thread, after every call the run made (they are queued before this)."""

        def close() -> None:
            if self._loop is not None:
                self._loop.close()  # nothing runs it between calls
                self._loop = None

        self.submit(close).result()


@contextlib.contextmanager
def _own_loop() -> Iterator[None]:
    """A mock monitor call on a thread other than _CallThread's (never in run(); a caller of its own): give it a
    loop of its own and close it after. On the main thread the run's own loop is the current one."""
    if threading.current_thread() is threading.main_thread():
        yield
        return
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        # Nothing ever runs this loop (what Pulumi schedules on it never ran before either): close it as it is.
        asyncio.set_event_loop(None)
        loop.close()


@functools.cache
def _call_thread() -> _CallThread:
    """The process's one _CallThread, started with the first run (runs take turns: the SDK's state is global)."""
    return _CallThread()


# A forked child has the parent's _CallThread but not its thread (a fork copies only the forking thread): its first
# call would wait for a thread that never runs. The child starts its own.
os.register_at_fork(after_in_child=_call_thread.cache_clear)


def stop_call_thread() -> None:
    """End the kept call thread, if a run started it (the next run starts another): for a process that leaves
    without the interpreter's teardown, which leaves only when no other thread runs (aicluster.cli.app.entry)."""
    if _call_thread.cache_info().currsize:
        _call_thread().stop()
        _call_thread.cache_clear()


async def _drain_outputs() -> None:
    """Wait for the program's pending outputs, and for those they make while this waits, until all are done or one
    fails or is cancelled; then await what is done (re-raising the first failure, as the SDK does) and leave what
    is not in SETTINGS.outputs. Each output gets one callback, once: when one completes, the outputs made since are
    taken from SETTINGS.outputs, as the SDK's next asyncio.wait would have taken them."""
    lock, outputs = settings.SETTINGS.lock, settings.SETTINGS.outputs
    waiter = asyncio.get_running_loop().create_future()
    seen: list[asyncio.Task[Any]] = []
    pending: set[asyncio.Task[Any]] = set()
    failed: list[asyncio.Task[Any]] = []

    def failure(task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is not None:
            failed.append(task)
            if not waiter.done():
                waiter.set_result(None)

    def take_new() -> None:
        with lock:
            new = list(outputs)
            outputs.clear()
        for task in new:
            seen.append(task)
            if task.done():
                failure(task)
            else:
                pending.add(task)
                task.add_done_callback(on_done)

    def on_done(task: asyncio.Task[Any]) -> None:
        pending.discard(task)
        failure(task)
        take_new()
        if not pending and not waiter.done():
            waiter.set_result(None)

    take_new()
    try:
        if pending and not waiter.done():
            await waiter
    finally:
        for task in list(pending):
            task.remove_done_callback(on_done)
    for task in [*failed[:1], *seen]:
        if task.done():
            await task  # re-raises the task's exception here, as the SDK does
    not_done = [task for task in seen if not task.done()]
    if not_done:
        with lock:
            outputs.update(not_done)


async def _wait_for_rpcs(await_all_outstanding_tasks: bool = True) -> None:
    """pulumi.runtime.stack.wait_for_rpcs (SDK 3.272), with its outputs drain made linear.

    The SDK's drain waits on every pending output with asyncio.wait(FIRST_COMPLETED), once per event-loop turn
    in which any output resolves: each wait adds and removes a callback on every pending output. A program
    whose resources have many output properties (every property is an Output task) has hundreds pending for
    a hundred turns: 72,000 callbacks, about 0.3 s of a 0.5 s Azure program at 3,072 nodes. _drain_outputs gives
    each output one callback and takes new outputs as each completes, so it returns, and raises, when the SDK's
    loop would; the RPC loop is the SDK's, line for line. tests/test_preview_engine.py pins the SDK's source, so
    an SDK change is reviewed against this copy.
    """
    rpc_manager = settings._get_rpc_manager()
    outputs = settings.SETTINGS.outputs
    while True:
        while len(rpc_manager.rpcs) > 0:
            await asyncio.sleep(0)
            try:
                await rpc_manager.rpcs.pop()
            except Exception as exn:
                if rpc_manager.unhandled_exception is not None:
                    cause = rpc_manager.unhandled_exception.with_traceback(rpc_manager.exception_traceback)
                    raise exn from cause
                raise
        if rpc_manager.unhandled_exception is not None:
            raise rpc_manager.unhandled_exception.with_traceback(rpc_manager.exception_traceback)
        if await_all_outstanding_tasks:
            while True:
                with settings.SETTINGS.lock:
                    if len(outputs) == 0:
                        break
                await _drain_outputs()
        if len(rpc_manager.rpcs) == 0:
            break


@contextlib.contextmanager
def _linear_output_drain() -> Iterator[None]:
    """Run the program with _wait_for_rpcs in place of the SDK's, and put the SDK's back after."""
    original = pulumi_stack.wait_for_rpcs
    pulumi_stack.wait_for_rpcs = _wait_for_rpcs
    try:
        yield
    finally:
        pulumi_stack.wait_for_rpcs = original


@contextlib.contextmanager
def _no_source_positions() -> Iterator[None]:
    """Run the program without the SDK's source positions: for every resource it extracts the Python stack (each
    frame's source line read through linecache) and turns each frame into a file URI, for the engine's diagnostics
    (about 0.25 ms a resource). The offline engine records and shows none of it; the requests carry an empty stack,
    as the SDK's own function gives when it finds no frame of the program. The SDK's function is put back after."""
    original = pulumi_resource._get_stack_trace
    pulumi_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        pulumi_resource._get_stack_trace = original


STACK_FILE_ENV = "AICLUSTER_STACK_FILE"  # the stack file as the user named it, for the program's messages


@contextlib.contextmanager
def _program_environment(project_dir: Path, stack_file: str | None = None) -> Iterator[None]:
    """cwd and sys.path as the Python language host sets them for the program; STACK_FILE_ENV names `stack_file`
    (the program's messages name the file the user gave, not the one it would guess from the stack's name)."""
    old_cwd = Path.cwd()
    old_path = list(sys.path)
    old_file = os.environ.pop(STACK_FILE_ENV, None)
    os.chdir(project_dir)
    sys.path.insert(0, str(project_dir))
    if stack_file is not None:
        os.environ[STACK_FILE_ENV] = stack_file
    try:
        yield
    finally:
        os.chdir(old_cwd)
        sys.path[:] = old_path
        os.environ.pop(STACK_FILE_ENV, None)
        if old_file is not None:
            os.environ[STACK_FILE_ENV] = old_file


def run(
    program: Callable[[], object],
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    secret_keys: frozenset[str] = frozenset(),
) -> Capture:
    """Run a Pulumi program function under the capturing mocks, in preview mode."""
    start = time.perf_counter()
    sdkload.install()
    loop = asyncio.new_event_loop()  # this run's own, closed when it ends
    asyncio.set_event_loop(loop)
    calls = _call_thread()
    loop.set_default_executor(calls)
    monitor = _Monitor(project, stack, dict(config or {}), secret_keys)
    pulumi.runtime.set_all_config(dict(config or {}), sorted(secret_keys))
    # set_mocks makes a root Stack of its own when none is set, and registers its (empty) outputs on a task
    # that could run after the program's root stack registered the real ones, leaving the capture with none
    # (a race: 30 of 40 in-process runs of a two-resource stack lost their outputs). Hold a stand-in root
    # while it runs, so the only root stack is the one run_in_stack makes, as under the language host.
    settings.set_root_resource(_NO_ROOT_YET)  # type: ignore[arg-type]
    try:
        mocks.set_mocks(monitor.mocks, project=project, stack=stack, preview=True, monitor=monitor)
    finally:
        settings.set_root_resource(None)  # type: ignore[arg-type]  # run_in_stack creates the root, as the host does
    try:
        with _linear_output_drain(), _no_source_positions():
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
        try:
            _close(loop)
        finally:
            try:
                calls.end_run()
            finally:
                # A failed program leaves its failed and cancelled outputs (and RPCs) in the SDK's process-wide
                # sets, for the language host to find at exit; the next run in this process would await them, on
                # a closed loop.
                settings.SETTINGS.outputs.clear()
                settings.SETTINGS.rpc_manager.clear()
    # Registration order depends on asyncio scheduling; sort so that two previews of the same
    # program are identical (reports and diffs compare them).
    resources = sorted([*monitor.captured, *monitor.default_providers.values()], key=lambda r: r.urn)
    return Capture(project, stack, resources, monitor.outputs, time.perf_counter() - start)


def run_program(
    project_dir: Path,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: frozenset[str] = frozenset(),
    program: str | None = "__main__.py",
    stack_file: str | None = None,
) -> Capture:
    """Run the project's program file offline, as the Python language host would; `program` None: the installed
    program (aicluster.program), for a stack file outside any project. `stack_file`: the stack file as the user named
    it, for the program's messages."""
    with _program_environment(project_dir, stack_file):
        if program is None:
            from aicluster.program import main

            return run(main, project, stack, config, secret_keys)
        path = program
        return run(lambda: runpy.run_path(path, run_name="__main__"), project, stack, config, secret_keys)
