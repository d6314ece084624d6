"""The offline engine runs a real program file as `pulumi preview` would and captures it faithfully."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from aicluster.preview.engine import SECRET, UNKNOWN, ProgramError, jsonable, run_program

PROGRAM = textwrap.dedent(
    """
    import pulumi
    import pulumi_aws as aws

    class Box(pulumi.ComponentResource):
        def __init__(self, name, opts=None):
            super().__init__("test:index:Box", name, {}, opts)
            self.vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block="10.0.0.0/16", opts=pulumi.ResourceOptions(parent=self))
            self.register_outputs({})

    cfg = pulumi.Config("aicluster")
    box = Box("box")
    aws.ec2.Subnet("sn", vpc_id=box.vpc.id, cidr_block="10.0.1.0/24")
    aws.ssm.Parameter("p", type="SecureString", value=cfg.require_secret("dbPassword"))
    pulumi.export("vpc", box.vpc.id)
    pulumi.export("password", cfg.require_secret("dbPassword"))
    pulumi.export("stack", pulumi.get_stack())
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "__main__.py").write_text(PROGRAM)
    return tmp_path


def capture(project: Path):  # type: ignore[no-untyped-def]
    return run_program(project, "proj", "dev", {"aicluster:dbPassword": "hunter2"}, frozenset({"aicluster:dbPassword"}))


def test_urns_parents_and_custom_flags_follow_the_engine(project: Path) -> None:
    cap = capture(project)
    by_name = {r.name: r for r in cap.resources}
    assert by_name["box"].urn == "urn:pulumi:dev::proj::test:index:Box::box"
    assert by_name["box"].custom is False
    assert by_name["box-vpc"].urn == "urn:pulumi:dev::proj::test:index:Box$aws:ec2/vpc:Vpc::box-vpc"
    assert by_name["box-vpc"].parent == by_name["box"].urn
    assert by_name["sn"].urn == "urn:pulumi:dev::proj::aws:ec2/subnet:Subnet::sn"
    assert by_name["sn"].parent == "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"


def test_inputs_use_wire_names_and_computed_values_stay_unknown(project: Path) -> None:
    sn = next(r for r in capture(project).resources if r.name == "sn")
    assert sn.inputs["cidrBlock"] == "10.0.1.0/24"
    assert sn.inputs["vpcId"] == UNKNOWN


def test_secrets_are_masked_in_inputs_and_outputs(project: Path) -> None:
    cap = capture(project)
    param = next(r for r in cap.resources if r.name == "p")
    dumped = json.dumps([r.to_json() for r in cap.resources]) + json.dumps(jsonable(cap.outputs))
    assert "hunter2" not in dumped
    assert param.to_json()["inputs"]["value"] == SECRET
    assert jsonable(cap.outputs)["password"] == SECRET
    assert cap.outputs["stack"] == "dev"


def test_program_errors_surface_as_program_errors(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text("import pulumi\nraise pulumi.RunError('boom: bad things')\n")
    with pytest.raises(ProgramError, match="boom: bad things"):
        run_program(tmp_path, "proj", "dev", {})


def test_data_source_calls_are_refused_offline(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text(
        "import pulumi_aws as aws\naws.ec2.get_ami(most_recent=True, owners=['amazon'])\n"
    )
    with pytest.raises(ProgramError, match="needs a cloud account"):
        run_program(tmp_path, "proj", "dev", {})


def test_runs_are_independent(project: Path) -> None:
    first, second = capture(project), capture(project)
    assert [r.urn for r in first.resources] == [r.urn for r in second.resources]


def test_the_root_stack_registers_its_outputs_once_and_they_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """set_mocks used to make a second root stack whose empty outputs could land after the program's and wipe
    them (30 of 40 in-process runs of onprem-dgx-h100 lost every stack output)."""
    from aicluster.preview import engine
    from aicluster.stackfile import find_project, read_stack
    from tests.conftest import ROOT

    root_outputs: list[int] = []
    register = engine._Monitor.RegisterResourceOutputs

    def counting(self: engine._Monitor, request: object) -> object:
        if request.urn == self.root_urn:  # type: ignore[attr-defined]
            root_outputs.append(len(request.outputs.fields))  # type: ignore[attr-defined]
        return register(self, request)

    monkeypatch.setattr(engine._Monitor, "RegisterResourceOutputs", counting)
    stack = read_stack(find_project(ROOT), "onprem-dgx-h100")
    for _ in range(5):
        root_outputs.clear()
        capture = run_program(
            stack.project.root, stack.project.name, stack.stack, stack.engine_config(), stack.secret_keys
        )
        assert len(root_outputs) == 1
        assert root_outputs[0] > 0
        assert set(capture.outputs) >= {"cluster", "sites"}


# The offline engine drains outputs with its own copy of the SDK's wait_for_rpcs (linear in the pending outputs).
SDK_WAIT_FOR_RPCS_SHA256 = "c0f9027f85ad09255ded0a1908033b490f76d303a3e40b50d3cf47a69265469d"

LATE_OUTPUTS = textwrap.dedent(
    """
    import asyncio
    import pulumi
    import pulumi_aws as aws

    async def later(value):
        await asyncio.sleep(0.01)
        return value

    vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
    # An apply whose result is an output made inside it, after the resources resolved: the drain must wait for it.
    chained = vpc.urn.apply(lambda urn: pulumi.Output.from_input(later(urn)).apply(lambda u: u.split("::")[-1]))
    pulumi.export("chained", chained)
    pulumi.export("many", pulumi.Output.all(*[pulumi.Output.from_input(later(i)) for i in range(200)]))
    """
)

FAILING_APPLY = textwrap.dedent(
    """
    import pulumi
    import pulumi_aws as aws

    def fail(urn):
        raise ValueError("apply failed after " + urn.split("::")[-1])

    vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
    vpc.urn.apply(fail)
    """
)


# An output that never resolves (until 10 s pass), and an apply that makes an output which fails at once: the
# drain must raise the late output's failure, as the SDK's does, not wait for the first.
LATE_FAILURE = textwrap.dedent(
    """
    import asyncio
    import pulumi

    async def fail(what):
        raise ValueError(what)

    never = asyncio.get_event_loop().create_future()
    asyncio.get_event_loop().call_later(10, never.set_exception, RuntimeError("10 s passed"))
    pending = pulumi.Output.from_input(never)
    pulumi.Output.from_input(1).apply(lambda _: pulumi.Output.from_input(fail("late output failed")))
    """
)


def _sdk_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    from aicluster.preview import engine

    monkeypatch.setattr(engine, "_linear_output_drain", contextlib.nullcontext)


@pytest.fixture(params=["engine", "sdk"])
def either_drain(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Runs a test with the engine's output drain, then with the SDK's; either way the SDK's is in place after."""
    from pulumi.runtime import stack

    if request.param == "sdk":
        _sdk_drain(monkeypatch)
    sdk_wait = stack.wait_for_rpcs
    yield
    assert stack.wait_for_rpcs is sdk_wait


def test_the_sdk_wait_loop_is_the_one_the_engine_copies() -> None:
    """If this fails, the Pulumi SDK changed wait_for_rpcs: compare engine._wait_for_rpcs with it, then update."""
    from pulumi.runtime import stack

    source = inspect.getsource(stack.wait_for_rpcs)
    assert hashlib.sha256(source.encode()).hexdigest() == SDK_WAIT_FOR_RPCS_SHA256


@pytest.mark.usefixtures("either_drain")
def test_outputs_made_while_draining_are_awaited(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text(LATE_OUTPUTS)
    cap = run_program(tmp_path, "proj", "dev", {})
    assert cap.outputs["chained"] == "vpc"
    assert cap.outputs["many"] == list(range(200))


@pytest.mark.usefixtures("either_drain")
def test_a_failing_apply_fails_the_preview(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text(FAILING_APPLY)
    with pytest.raises(ProgramError, match="ValueError: apply failed after vpc"):
        run_program(tmp_path, "proj", "dev", {})


def test_the_engine_drain_captures_what_the_sdk_drain_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    from aicluster.stackfile import find_project, read_stack
    from tests.conftest import ROOT

    stack = read_stack(find_project(ROOT), "azure-nd-h100")
    args = (stack.project.root, stack.project.name, stack.stack, stack.engine_config(), stack.secret_keys)

    def dump() -> str:
        cap = run_program(*args)
        return json.dumps([[r.to_json() for r in cap.resources], jsonable(cap.outputs)], sort_keys=True)

    ours = dump()
    _sdk_drain(monkeypatch)
    assert dump() == ours


@pytest.mark.usefixtures("either_drain")
def test_an_output_made_while_draining_that_fails_fails_the_preview_at_once(tmp_path: Path) -> None:
    (tmp_path / "failing").mkdir()
    (tmp_path / "failing" / "__main__.py").write_text(LATE_FAILURE)
    with pytest.raises(ProgramError, match="ValueError: late output failed"):
        run_program(tmp_path / "failing", "proj", "dev", {})
    # The failed run's outputs do not stay behind for the next run in this process (they failed it, on a closed loop).
    (tmp_path / "__main__.py").write_text(PROGRAM)
    assert {r.name for r in capture(tmp_path).resources} >= {"box", "sn", "p"}


def test_the_mock_monitor_calls_share_one_kept_thread_and_each_run_closes_its_loop(project: Path) -> None:
    import threading

    from aicluster.preview import engine

    capture(project)
    calls = engine._call_thread()
    thread = calls._thread
    assert thread is not None
    assert thread is not threading.main_thread()
    threads = threading.active_count()
    seen: list[tuple[threading.Thread, object]] = []
    register = engine._Monitor._register

    def spy(self, request):  # type: ignore[no-untyped-def]
        import asyncio

        seen.append((threading.current_thread(), asyncio.get_event_loop()))
        return register(self, request)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine._Monitor, "_register", spy)
        for _ in range(3):
            assert {r.name for r in capture(project).resources} >= {"box", "box-vpc", "sn", "p"}
    assert threading.active_count() == threads  # no thread started per run
    assert {t for t, _ in seen} == {thread}  # every registration on the kept thread
    loops = {id(loop) for _, loop in seen}
    assert len(loops) == 3  # one loop per run, shared by its calls...
    assert calls._loop is None  # ...closed when the run ended
    assert all(loop.is_closed() for _, loop in seen)  # type: ignore[attr-defined]


def test_a_failed_run_closes_its_loop_and_the_next_run_has_the_thread(tmp_path: Path) -> None:
    from aicluster.preview import engine

    (tmp_path / "__main__.py").write_text(PROGRAM + "\nraise ValueError('the program failed')\n")
    with pytest.raises(ProgramError, match="the program failed"):
        capture(tmp_path)
    assert engine._call_thread()._loop is None
    (tmp_path / "__main__.py").write_text(PROGRAM)
    assert {r.name for r in capture(tmp_path).resources} >= {"box", "box-vpc", "sn", "p"}


def test_a_mock_monitor_call_off_the_kept_thread_gets_a_loop_of_its_own_closed_after() -> None:
    import asyncio
    import threading

    from aicluster.preview import engine

    got: list[asyncio.AbstractEventLoop] = []

    def call() -> None:
        with engine._call_thread().loop():
            got.append(asyncio.get_event_loop())

    other = threading.Thread(target=call)
    other.start()
    other.join()
    assert len(got) == 1
    assert got[0].is_closed()


def test_a_forked_child_previews_with_a_call_thread_of_its_own(tmp_path: Path) -> None:
    """A fork copies only the forking thread: the child must not wait for the parent's kept call thread."""
    import os
    import subprocess
    import sys

    (tmp_path / "__main__.py").write_text(PROGRAM)
    script = textwrap.dedent(
        f"""
        import os, signal
        from aicluster.preview.engine import run_program
        secret = "aicluster:dbPassword"
        args = ({str(tmp_path)!r}, "proj", "dev", {{secret: "x"}}, frozenset({{secret}}))
        print("parent", len(run_program(*args).resources), flush=True)
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)  # a hang ends the child instead of the test
            print("child", len(run_program(*args).resources), flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("child status", os.waitstatus_to_exitcode(status), flush=True)
        print("parent again", len(run_program(*args).resources), flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("parent ")
    count = lines[0].split()[1]
    assert lines[1:] == [f"child {count}", "child status 0", f"parent again {count}"]


def test_every_mock_monitor_call_uses_the_runs_loop_which_is_closed_after(tmp_path: Path) -> None:
    """Pulumi's mock monitor makes an event loop on the calling thread when it has none, and never closes it (reads,
    registrations): every call it answers runs with the run's loop instead, closed when the run ends."""
    from pulumi.runtime import mocks

    read = "vpc = aws.ec2.Vpc.get('read', 'vpc-0123')\npulumi.export('read', vpc.id)\n"
    (tmp_path / "__main__.py").write_text(PROGRAM + "\n" + read)
    loops: list[object] = []
    ensure = mocks._ensure_event_loop

    def spy():  # type: ignore[no-untyped-def]
        loop = ensure()
        loops.append(loop)
        return loop

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mocks, "_ensure_event_loop", spy)
        names = {r.name for r in capture(tmp_path).resources}
    assert {"box", "sn", "p"} <= names
    assert loops  # the read (the engine answers registrations itself)
    assert all(loop.is_closed() for loop in loops)  # type: ignore[attr-defined]


RESOURCE_AS_INPUT = textwrap.dedent(
    """
    import pulumi
    import pulumi_aws as aws

    class Thing(pulumi.CustomResource):
        def __init__(self, name, props, opts=None):
            super().__init__("test:index:Thing", name, props, opts)

    vpc = aws.ec2.Vpc("v", cidr_block="10.0.0.0/16")
    Thing("t", {"other": vpc, "x": 1})
    pulumi.export("vpc", vpc)
    """
)


def test_a_resource_given_as_an_input_is_its_unknown_id_and_a_dependency(tmp_path: Path) -> None:
    """The SDK's mock monitor cannot answer resource references (the preview waited forever): the engine offers no
    such feature, so the SDK sends the resource's ID, unknown until it exists, as in a real preview. In a process
    of its own, so that a hang fails the test instead of stopping the suite."""
    import os
    import subprocess
    import sys

    (tmp_path / "__main__.py").write_text(RESOURCE_AS_INPUT)
    script = textwrap.dedent(
        f"""
        import json
        from aicluster.preview.engine import jsonable, run_program
        for _ in range(2):
            cap = run_program({str(tmp_path)!r}, "proj", "dev", {{}})
            print(json.dumps([[r.to_json() | {{"deps": r.property_dependencies}} for r in cap.resources],
                              jsonable(cap.outputs)]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == second
    resources, outputs = json.loads(first)
    by_name = {r["name"]: r for r in resources}
    assert by_name["t"]["inputs"] == {"other": "<computed>", "x": 1.0}
    assert by_name["t"]["deps"] == {"other": [by_name["v"]["urn"]]}
    # an exported resource is its outputs, as the language host exports it: known inputs, unknown rest
    assert outputs["vpc"]["cidr_block"] == "10.0.0.0/16"
    assert outputs["vpc"]["id"] == "<computed>"


@pytest.mark.parametrize("stack_name", ["azure-nd-h100", "gcp-a3mega-slurm", None])
def test_the_engine_answers_each_registration_as_the_sdks_mock_monitor_does(tmp_path: Path, stack_name: str) -> None:
    """The engine answers registrations itself (one deserialization, the request's own properties less the unknown
    ones): the same response as the SDK's MockMonitor.RegisterResource gives for every request of a run, secrets,
    unknowns and a provider's defaults (GCP's project) included."""
    from pulumi.runtime import mocks

    from aicluster.preview import engine
    from aicluster.stackfile import find_project, read_stack
    from tests.conftest import ROOT

    pairs: list[tuple[object, object]] = []
    ours = engine._Monitor._register

    def both(self, request):  # type: ignore[no-untyped-def]
        sdk = mocks.MockMonitor.RegisterResource(self, request)
        mine = ours(self, request)
        pairs.append((sdk, mine))
        return mine

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine._Monitor, "_register", both)
        if stack_name is None:
            (tmp_path / "__main__.py").write_text(PROGRAM)
            capture(tmp_path)
        else:
            stack = read_stack(find_project(ROOT), stack_name)
            run_program(stack.project.root, stack.project.name, stack.stack, stack.engine_config(), stack.secret_keys)
    assert len(pairs) >= 5
    assert all(sdk == mine for sdk, mine in pairs), [(s, m) for s, m in pairs if s != m][:1]


def test_the_program_runs_without_source_positions_and_the_sdks_function_comes_back(tmp_path: Path) -> None:
    """The engine records no source positions: the SDK's stack extraction is left out while the program runs (the
    requests carry an empty stack, as the SDK's own function gives when it finds no program frame) and put back
    after a run, a failed one too."""
    from pulumi.runtime import resource

    from aicluster.preview import engine

    original = resource._get_stack_trace
    stacks: list[int] = []
    register = engine._Monitor._register

    def spy(self, request):  # type: ignore[no-untyped-def]
        stacks.append(len(request.stackTrace.frames))
        assert not request.HasField("sourcePosition")
        return register(self, request)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine._Monitor, "_register", spy)
        (tmp_path / "__main__.py").write_text(PROGRAM)
        assert {r.name for r in capture(tmp_path).resources} >= {"box", "box-vpc", "sn", "p"}
    assert stacks
    assert set(stacks) == {0}
    assert resource._get_stack_trace is original
    (tmp_path / "__main__.py").write_text(PROGRAM + "\nraise ValueError('the program failed')\n")
    with pytest.raises(ProgramError, match="the program failed"):
        capture(tmp_path)
    assert resource._get_stack_trace is original
