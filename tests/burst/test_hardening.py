"""The unattended programs under hostile input and failing clouds (issue 31, findings 1-7): a configuration fuzz over
every field, a SLURM_RESUME_FILE fuzz, node sets isolated from each other, 9,000-node DOWN updates through a real
exec, a cloud endpoint that accepts and never answers, a busy group lock, scontrol's silent refusals and reasons that
try to forge fields or log lines. Every case ends with the affected nodes DOWN (or deleted, or reconciled) and the
others handled, never a traceback.

The subprocess cases run the real programs (`python -m aicluster.burst.resume`) with a stand-in scontrol that
records its arguments; the hostlist cases run the real scontrol (Slurm's client, with a minimal slurm.conf)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicluster.burst import resume as resume_mod
from aicluster.burst import suspend as suspend_mod
from aicluster.burst import sync as sync_mod
from aicluster.burst.cloud import CloudError, Group, Instance, open_group
from aicluster.burst.common import SafeFormatter, group_lock
from aicluster.burst.config import AwsNodeSet, BurstConfig, ConfigError, load
from aicluster.burst.slurm import (
    MAX_NODES_ARG,
    MAX_REASON,
    Scontrol,
    SlurmError,
    chunks,
    one_line,
    parse_node_line,
    read_resume_file,
)
from tests.burst.fakes import FakeGroup, FakeSlurm, expand
from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
SETS = [
    {"provider": "aws", "nodes": "aws-[00-03]", "region": "us-east-1", "group": "ga", "instance_type": "p5.48xlarge"},
    {"provider": "aws", "nodes": "spot-[00-01]", "region": "us-east-1", "group": "gs", "instance_type": "p5.48xlarge"},
]


def base(tmp_path: Path) -> dict[str, Any]:
    return {
        "cluster": "c",
        "state_dir": str(tmp_path / "state"),
        "log_file": str(tmp_path / "burst.log"),
        "launch_wait_s": 5,
        "poll_s": 1,
        "node_sets": [dict(s) for s in SETS],
    }


def write_config(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "aicluster-burst.json"
    path.write_text(json.dumps(data))
    return path


def opener_for(groups: dict[str, Group]) -> resume_mod.Opener:
    def opener(node_set: Any, config: BurstConfig) -> Group:
        group = groups.setdefault(node_set.group, FakeGroup(node_set.group))
        if isinstance(group, Exception):
            raise group
        return group

    return opener


# --- 1. the configuration: every field, hostile values -------------------------------------------------------------

HOSTILE: list[Any] = [
    None, "", " ", "-h", "--help", "a\nb", "\x1b[31mred", "x" * 70_000, "../../etc/passwd", "file:///etc/passwd",
    "not a url", "us east 1", "http://169.254.169.254/latest", "https://admin:Zq9SECRET@vpce.example.com",
    "https://vpce.example.com/?password=Zq9SECRET", "$(touch /tmp/x)", "`id`", "a;b", "NaN", "Infinity", -1, 0,
    1e309, True, [], {}, ["x"], {"a": 1}, "\u202eevil", "é", "A" * 300,
]  # fmt: skip
TOP_FIELDS = ["version", "cluster", "log_file", "state_dir", "scontrol", "launch_wait_s", "poll_s",
              "orphan_grace_s", "api_timeout_s", "lock_wait_s", "node_sets"]  # fmt: skip
SET_FIELDS = ["provider", "nodes", "region", "group", "instance_type", "market", "endpoint_url"]


def _cases() -> Iterator[Any]:
    for field in TOP_FIELDS:
        for i, value in enumerate(HOSTILE):
            yield pytest.param(field, None, value, id=f"{field}-{i}")
    for field in SET_FIELDS:
        for i, value in enumerate(HOSTILE):
            yield pytest.param(field, 0, value, id=f"node_sets[0].{field}-{i}")


CASES = list(_cases())


def _run_resume(tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, FakeSlurm, dict[str, Any]]:
    slurm = FakeSlurm()
    monkeypatch.setattr(resume_mod, "scontrol_for", lambda config: slurm)
    groups: dict[str, Any] = {"ga": FakeGroup("ga"), "gs": FakeGroup("gs")}
    rc = resume_mod.main(["--config", str(path), "aws-[00-01],spot-00"], opener=opener_for(groups))
    return rc, slurm, groups


def test_the_config_fuzz_covers_every_field_of_the_schema() -> None:
    schema = BurstConfig.model_json_schema()
    assert set(schema["properties"]) == set(TOP_FIELDS)
    aws = schema["$defs"]["AwsNodeSet"]["properties"]
    assert set(aws) == set(SET_FIELDS)


@pytest.mark.parametrize(("field", "index", "value"), CASES)
def test_config_fuzz_each_value_is_refused_by_name_or_handled_and_no_node_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], field: str,
    index: int | None, value: Any,
) -> None:  # fmt: skip
    data = base(tmp_path)
    (data["node_sets"][index] if index is not None else data)[field] = value
    path = write_config(tmp_path, data)
    try:
        load(path)
        refused = ""
    except ConfigError as exc:
        refused = str(exc)
    rc, slurm, _ = _run_resume(tmp_path, path, monkeypatch)
    out = capsys.readouterr()
    log = (tmp_path / "burst.log").read_text() if (tmp_path / "burst.log").is_file() else ""
    everything = out.out + out.err + log + json.dumps(slurm.updates)
    assert "Traceback" not in everything
    assert "Zq9SECRET" not in everything + refused  # a password in an endpoint is never echoed
    asked = ["aws-00", "aws-01", "spot-00"]
    if refused:
        where = f"node_sets[{index}].{field}" if index is not None else field
        assert where in refused, refused
        assert rc == 2
        ((nodes, fields),) = slurm.updates
        assert sorted(nodes) == asked
        assert fields["state"] == "DOWN"
        assert fields["reason"].startswith("aicluster-resume: bad configuration:")
    else:
        assert rc == 0
        handled = {n for ns, f in slurm.updates for n in ns if "nodeaddr" in f or f.get("state") == "DOWN"}
        assert handled == set(asked)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("endpoint_url", "not a url", "an endpoint has no space or control character"),
        ("endpoint_url", "not-a-url", "write https://HOST[:PORT]"),
        ("endpoint_url", "file:///etc/passwd", "write https://HOST[:PORT]"),
        ("endpoint_url", "http://vpce.example.com", "plain http only to this machine"),
        ("endpoint_url", "https://admin:Zq9SECRET@vpce.example.com", "got 'https://***@vpce.example.com'"),
        ("endpoint_url", "https://vpce.example.com/?password=Zq9SECRET", "no user, password, query or fragment"),
        ("region", "us east 1", "an AWS region name (e.g. `us-east-1`)"),
        ("nodes", "-h", "write a Slurm hostlist"),
        ("nodes", "aws-[00-03", "a '[' is not closed"),
        ("group", "a;b", "letters, digits, - _ . only"),
    ],
)
def test_a_bad_node_set_field_says_how_to_write_it(tmp_path: Path, field: str, value: str, message: str) -> None:
    data = base(tmp_path)
    data["node_sets"][0][field] = value
    with pytest.raises(ConfigError) as err:
        load(write_config(tmp_path, data))
    assert f"node_sets[0].{field}: " in str(err.value)
    assert message in str(err.value)
    assert "Zq9SECRET" not in str(err.value)


def test_plain_http_is_allowed_to_this_machine_only(tmp_path: Path) -> None:
    for ok in ("http://127.0.0.1:5000", "http://[::1]:80/", "http://localhost:4566", "https://vpce-1.example.com"):
        data = base(tmp_path)
        data["node_sets"][0]["endpoint_url"] = ok
        assert load(write_config(tmp_path, data)).node_sets[0].endpoint_url == ok  # type: ignore[union-attr]


def test_gcp_and_azure_names_have_their_clouds_form(tmp_path: Path) -> None:
    gcp = {**SETS[0], "provider": "gcp", "region": "us-central1", "zone": "europe-west4-a", "project": "my-project"}
    azure = {**SETS[1], "provider": "azure", "region": "East US", "subscription_id": "0000",
             "resource_group": "rg."}  # fmt: skip
    data = {**base(tmp_path), "node_sets": [gcp, azure]}
    with pytest.raises(ConfigError) as err:
        load(write_config(tmp_path, data))
    text = str(err.value)
    assert "node_sets[0].zone: got 'europe-west4-a'; it is not in region 'us-central1'" in text
    assert "node_sets[1].region: got 'East US'; an Azure region name, lowercase with no space" in text
    assert "node_sets[1].subscription_id: got '0000'; an Azure subscription id, a GUID" in text
    assert "node_sets[1].resource_group: got 'rg.'" in text


@pytest.mark.parametrize("raw", [b"\xff\xfe", b"[" * 100_000, b"x" * 100, b'{"cluster": NaN}'])
def test_a_config_that_is_not_json_is_a_config_error(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(raw)
    with pytest.raises(ConfigError, match=r"c\.json: "):
        load(path)


# --- runtime: what passes the schema and still fails ---------------------------------------------------------------


def test_a_log_file_that_cannot_be_opened_logs_to_stderr_and_resume_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for log_file in (tmp_path, tmp_path / "a-file" / "burst.log"):  # a directory; under a file
        (tmp_path / "a-file").write_text("")
        data = {**base(tmp_path), "log_file": str(log_file)}
        rc, slurm, _ = _run_resume(tmp_path, write_config(tmp_path, data), monkeypatch)
        assert rc == 0
        assert sorted(n for (n,), f in slurm.updates if "nodeaddr" in f) == ["aws-00", "aws-01", "spot-00"]
        err = capsys.readouterr().err
        assert f"log_file {log_file}: " in err
        assert "logging to stderr" in err


def test_a_state_dir_under_a_file_sets_the_nodes_down_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    data = {**base(tmp_path), "state_dir": str(tmp_path / "a-file" / "state")}
    resume_file = tmp_path / "resume.1"
    resume_file.write_text('{"all_nodes": "aws-00", "jobs": []}')
    monkeypatch.setenv("SLURM_RESUME_FILE", str(resume_file))
    rc, slurm, _ = _run_resume(tmp_path, write_config(tmp_path, data), monkeypatch)
    assert rc == 0
    down = {n: f["reason"] for ns, f in slurm.updates if f.get("state") == "DOWN" for n in ns}
    assert sorted(down) == ["aws-00", "aws-01", "spot-00"]
    assert all("Not a directory" in r for r in down.values()), down
    assert "could not keep a copy of SLURM_RESUME_FILE" in (tmp_path / "burst.log").read_text()


FAILURES = [ValueError("Invalid endpoint: not a url"), KeyError("x"), RuntimeError("boom"), TimeoutError("lock"),
            CloudError("InvalidRegionError", "Provided region_name 'us east 1' doesn't match")]  # fmt: skip


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: type(e).__name__)
def test_a_failing_first_node_set_never_stops_the_second(tmp_path: Path, error: Exception) -> None:
    config = BurstConfig.model_validate(base(tmp_path))
    # resume: the first set's nodes DOWN with the reason, the second's bound
    slurm = FakeSlurm()
    failed = resume_mod.resume(config, slurm, ["aws-00", "spot-00"], opener_for({"ga": error, "gs": FakeGroup("gs")}))
    assert list(failed) == ["aws-00"]
    assert (("spot-00",), {"nodeaddr": "10.0.0.1", "nodehostname": "ip-1"}) in slurm.updates
    # suspend: the second set's instance is still deleted
    gs = FakeGroup("gs", desired=1, pool=[Instance("i-9", "spot-00", "10.0.0.9", None, True)])
    errors = suspend_mod.suspend(config, FakeSlurm(), ["aws-00", "spot-00"], opener_for({"ga": error, "gs": gs}))
    assert len(errors) == 1
    assert errors[0].startswith("ga: ")
    assert gs.removed == ["i-9"]
    # sync: the second set is still reconciled
    gs = FakeGroup("gs", pool=[Instance("i-9", "spot-00", None, None, False, "EC2 state terminated")])
    slurm = FakeSlurm()
    slurm.node("spot-00", "ALLOCATED+CLOUD")
    assert len(sync_mod.sync(config, slurm, opener_for({"ga": error, "gs": gs}))) == 1
    assert [f["state"] for (n,), f in slurm.updates if n == "spot-00"] == ["POWER_DOWN_FORCE"]


def test_an_sdk_that_refuses_the_node_set_is_a_cloud_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from aicluster.burst import aws

    def refuse(*args: object) -> None:
        raise ValueError("Invalid endpoint: https://x")

    monkeypatch.setattr(aws.AwsGroup, "connect", refuse)
    node_set = AwsNodeSet.model_validate(SETS[0])
    with pytest.raises(CloudError, match=r"^ValueError: Invalid endpoint: https://x$"):
        open_group(node_set, "c")


def test_a_hostlist_scontrol_refuses_for_one_node_set_leaves_the_others(tmp_path: Path) -> None:
    class Refusing(FakeSlurm):
        def hostnames(self, expression: str) -> list[str]:
            if expression.startswith("aws"):
                raise SlurmError("scontrol show hostnames 'aws-[00-03]': scontrol refused the hostlist")
            return expand(expression)

    config = BurstConfig.model_validate(base(tmp_path))
    slurm = Refusing()
    failed = resume_mod.resume(config, slurm, ["aws-00", "spot-00"], opener_for({"gs": FakeGroup("gs")}))
    assert failed == {"aws-00": "node is in no node set of the bursting configuration"}
    assert (("spot-00",), {"nodeaddr": "10.0.0.1", "nodehostname": "ip-1"}) in slurm.updates


# --- 2. SLURM_RESUME_FILE fuzz -------------------------------------------------------------------------------------

RESUME_FILES: list[bytes] = [
    b"\xff\xfe\x00garbage", b'{"all_nodes":"aws-00","jobs":5}', b"[" * 100_000 + b"]" * 100_000,
    b'{"all_nodes": 5}', b'{"all_nodes":"aws-00","jobs":[{"job_id":true}]}',
    b'{"all_nodes":"aws-00","jobs":[{"job_id":1,"partition":["p"]}]}', b'{"all_nodes":"aws-00","jobs":{"a":1}}',
    b"", b"null", b'"all_nodes"', b'{"all_nodes":"aws-00","jobs":[{"job_id":1e400}]}', b"\x00" * 1000,
    json.dumps({"all_nodes_resume": "aws-00", "jobs": [{"job_id": 9, "partition": "p\n2026-11-28 00:00:00 forged",
                "features": "\x1b[31mred\x1b[0m", "nodes_resume": "aws-00"}]}).encode(),
]  # fmt: skip


@pytest.mark.parametrize("content", RESUME_FILES, ids=range(len(RESUME_FILES)))
def test_resume_file_fuzz_warns_and_resumes_the_nodes_slurm_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    resume_file = tmp_path / "resume.7"
    resume_file.write_bytes(content)
    monkeypatch.setenv("SLURM_RESUME_FILE", str(resume_file))
    rc, slurm, _ = _run_resume(tmp_path, write_config(tmp_path, base(tmp_path)), monkeypatch)
    assert rc == 0
    assert sorted(n for (n,), f in slurm.updates if "nodeaddr" in f) == ["aws-00", "aws-01", "spot-00"]
    log = (tmp_path / "burst.log").read_text()
    assert "Traceback" not in log + capsys.readouterr().err
    lines = log.splitlines()
    assert all(" aicluster-resume[" in line for line in lines), lines  # no forged line
    assert "\x1b" not in log
    if b"forged" in content:
        assert "partition p\\x0a2026-11-28 00:00:00 forged, features \\x1b[31mred\\x1b[0m" in log
    else:
        assert "resume.7: not a Slurm resume file" in log


def test_a_resume_file_that_is_a_fifo_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "resume.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("SLURM_RESUME_FILE", str(fifo))
    rc, _, _ = _run_resume(tmp_path, write_config(tmp_path, base(tmp_path)), monkeypatch)
    assert rc == 0
    assert "resume.fifo: not a plain file, not read" in (tmp_path / "burst.log").read_text()


def test_the_resume_file_reader_refuses_wrong_types() -> None:
    for text in (b'{"all_nodes":"a","jobs":5}', b'{"all_nodes":"a","jobs":[{"job_id":true}]}', b"\xff"):
        with pytest.raises(ValueError, match="not a Slurm resume file"):
            read_resume_file(text)


# --- 3. thousands of nodes -----------------------------------------------------------------------------------------


def recording_scontrol(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in scontrol: `show hostnames -- EXPR` expands a[0-9] forms, `update` appends its argv to a file."""
    record = tmp_path / "scontrol.calls"
    script = tmp_path / "scontrol"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.burst.fakes import expand\n"
        "args = sys.argv[1:]\n"
        "if args[:2] == ['show', 'hostnames']:\n"
        "    print('\\n'.join(expand(args[-1])))\n"
        "elif args[:1] == ['update']:\n"
        f"    open({str(record)!r}, 'a').write(json.dumps(args) + '\\n')\n"
        "else:\n"
        "    sys.exit(1)\n"
    )
    script.chmod(0o755)
    return script, record


def test_nine_thousand_nodes_go_down_through_a_real_exec_in_bounded_arguments(tmp_path: Path) -> None:
    names = [f"aws-p5-training-{i:05d}" for i in range(9000)]  # 22 characters each: 207 KB as one argument
    script, record = recording_scontrol(tmp_path)
    resume_mod.report_down(Scontrol(str(script)), dict.fromkeys(names, "InsufficientInstanceCapacity"))
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(calls) > 1
    assert all(len(arg) <= MAX_NODES_ARG + len("nodename=") for call in calls for arg in call)
    got = [n for call in calls for n in call[1].removeprefix("nodename=").split(",")]
    assert got == names
    assert {call[2] for call in calls} == {"state=DOWN"}


def test_chunks_keep_every_name_once_and_within_the_limit() -> None:
    names = [f"n{i}" for i in range(5000)]
    parts = chunks(names, limit=100)
    assert [n for p in parts for n in p] == names
    assert all(len(",".join(p)) <= 100 for p in parts)
    assert chunks([]) == []


def test_log_lines_are_bounded_and_name_long_node_lists_by_count(tmp_path: Path) -> None:
    config = BurstConfig.model_validate({**base(tmp_path), "node_sets": [{**SETS[0], "nodes": "aws-[0000-8999]"}]})
    slurm = FakeSlurm()
    from aicluster.burst.common import setup_logging

    setup_logging(config, "test")
    resume_mod.report_down(slurm, dict.fromkeys(expand("aws-[0000-8999]"), "x" * 10_000))
    lines = (tmp_path / "burst.log").read_text().splitlines()
    assert max(len(line) for line in lines) < 4200
    assert "9000 node(s) DOWN (aws-0000,aws-0001," in lines[-1]
    assert "... (9000 nodes)" in lines[-1]


def test_the_formatter_escapes_control_characters_and_cuts_long_messages() -> None:
    import logging

    record = logging.makeLogRecord({"msg": "a\nb\x1bc %s", "args": ("d" * 10_000,), "levelname": "INFO"})
    text = SafeFormatter("%(levelname)s %(message)s").format(record)
    assert text.startswith("INFO a\\x0ab\\x1bc ddd")
    assert "\n" not in text
    assert len(text) < 4100
    assert text.endswith("characters cut)")


# --- 4. a cloud that never answers, a lock that stays busy ---------------------------------------------------------


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A TCP server that accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for s in held:
            s.close()
        server.close()


def program_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def test_a_hung_endpoint_sets_the_nodes_down_within_the_configured_bound(tmp_path: Path) -> None:
    pytest.importorskip("boto3", reason="install the dev extras: pip install -e '.[dev]'")
    script, record = recording_scontrol(tmp_path)
    with silent_server() as port:
        data = {**base(tmp_path), "scontrol": str(script), "api_timeout_s": 1}
        data["node_sets"][0]["endpoint_url"] = f"http://127.0.0.1:{port}"
        config = write_config(tmp_path, data)
        # the hang guard is generous: 2 attempts x 1 s plus botocore's backoff are the configured bound
        proc = subprocess.run(
            [sys.executable, "-m", "aicluster.burst.resume", "--config", str(config), "aws-[00-01]"],
            env=program_env(tmp_path), capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    ((*_, nodes, state, reason),) = [json.loads(line) for line in record.read_text().splitlines()]
    assert (nodes, state) == ("nodename=aws-00,aws-01", "state=DOWN")
    assert reason.startswith("reason=aicluster-resume: ")
    assert "timeout" in reason.lower(), reason


def test_suspend_waits_at_most_lock_wait_s_for_a_busy_group_lock(tmp_path: Path) -> None:
    script, _ = recording_scontrol(tmp_path)
    data = {**base(tmp_path), "scontrol": str(script), "lock_wait_s": 0.5}
    config_path = write_config(tmp_path, data)
    config = BurstConfig.model_validate(data)
    with group_lock(config, "aws-us-east-1-ga"):  # another program holds the group
        proc = subprocess.run(
            [sys.executable, "-m", "aicluster.burst.suspend", "--config", str(config_path), "aws-00"],
            env=program_env(tmp_path), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert proc.returncode == 1
    log = (tmp_path / "burst.log").read_text()
    assert re.search(r"group ga: lock \S+ held for over [01] s", log), log
    assert "Traceback" not in proc.stderr + log


def test_the_lock_wait_is_the_configured_one(tmp_path: Path) -> None:
    config = BurstConfig.model_validate({**base(tmp_path), "lock_wait_s": 0.3})
    Path(config.state_dir).mkdir(parents=True)
    with (Path(config.state_dir) / "k.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(TimeoutError, match="held for over 0 s"), group_lock(config, "k"):
            pass


class Running:
    """An Azure LROPoller / GCP ExtendedOperation still running when result(timeout) returns."""

    error_message = None

    def result(self, timeout: float | None = None) -> None:
        return None

    def done(self) -> bool:
        return False


def test_an_azure_operation_still_running_after_its_timeout_is_a_failure() -> None:
    from types import SimpleNamespace as NS

    from aicluster.burst.azure import AzureGroup

    vmss = NS(sku=NS(name="Standard_ND96isr_H100_v5", tier="Standard", capacity=0))
    sets = NS(get=lambda rg, name: vmss, begin_update=lambda rg, name, body: Running())
    models = NS(VirtualMachineScaleSetUpdate=lambda sku: NS(sku=sku), Sku=NS)
    group = AzureGroup("vmss", "rg", NS(virtual_machine_scale_sets=sets), None, models, operation_timeout_s=3)
    with pytest.raises(CloudError, match=r"^OperationTimeout: resize to 2 of scale set vmss still running after 3 s$"):
        group.resize(2)
    assert group.failures(0) == ["OperationTimeout: resize to 2 of scale set vmss still running after 3 s"]


def test_a_gcp_operation_still_running_after_its_timeout_is_a_failure() -> None:
    from types import SimpleNamespace as NS

    from aicluster.burst.gcp import GcpGroup

    managers = NS(resize=lambda **kw: Running())
    group = GcpGroup("mig", "my-project", "us-central1-a", managers, None, None, operation_timeout_s=4)
    with pytest.raises(CloudError, match=r"^OperationTimeout: operation still running after 4 s$"):
        group.resize(1)


# --- 5. reasons that try to forge fields ---------------------------------------------------------------------------


def test_a_reason_cannot_rewrite_the_nodes_fields() -> None:
    line = (
        "NodeName=aws-00 Arch=x86_64 State=DOWN+CLOUD NodeAddr=10.0.0.1 "
        "Reason=InsufficientInstanceCapacity NodeName=aws-99 State=IDLE+CLOUD [root@2026-11-24T00:17:14]"
    )
    record = parse_node_line(line)
    assert (record["NodeName"], record["State"]) == ("aws-00", "DOWN+CLOUD")


def test_our_own_reasons_carry_no_equals_sign_nor_control_character() -> None:
    reason = one_line("cloud said: NodeName=aws-99 State=IDLE\x1b[31m\nnext")
    assert reason == "cloud said: NodeName:aws-99 State:IDLE [31m next"
    assert len(one_line("x" * 1000)) == MAX_REASON


# --- 6. node lists through the real scontrol -----------------------------------------------------------------------


@pytest.fixture
def real_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scontrol:
    if shutil.which("scontrol") is None:
        message = "scontrol not found: apt-get install slurm-client"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=t\nSlurmctldHost=localhost\nAuthType=auth/none\nCredType=cred/none\n"
        "NodeName=aws-[00-03] CPUs=1 State=CLOUD\nPartitionName=p Nodes=aws-[00-03]\n"
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    return Scontrol("scontrol")


def test_scontrol_expands_a_good_hostlist(real_scontrol: Scontrol) -> None:
    assert real_scontrol.hostnames("aws-[00-01],spot-7") == ["aws-00", "aws-01", "spot-7"]


@pytest.mark.parametrize(
    "expression", ["a[0-70000]", "aws-[05-02]", "-h", "--help", "aws-[00-01", "a b", "a;b", "a\nb", "[]"]
)
def test_a_hostlist_scontrol_refuses_is_an_error_not_no_nodes(real_scontrol: Scontrol, expression: str) -> None:
    with pytest.raises(SlurmError):
        real_scontrol.hostnames(expression)


def test_resume_with_an_option_for_a_hostlist_exits_1_and_names_no_node(
    real_scontrol: Scontrol, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_updates: list[Any] = []
    monkeypatch.setattr(Scontrol, "update", lambda self, nodes, **f: slurm_updates.append((nodes, f)))
    path = write_config(tmp_path, base(tmp_path))
    assert resume_mod.main(["--config", str(path), "--", "-h"], opener=opener_for({})) == 1
    assert slurm_updates == []
    assert "not a hostlist: '-h'" in (tmp_path / "burst.log").read_text()


# --- 7. suspend says why -------------------------------------------------------------------------------------------


def test_suspend_names_a_node_in_no_node_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slurm = FakeSlurm()
    monkeypatch.setattr(suspend_mod, "scontrol_for", lambda config: slurm)
    path = write_config(tmp_path, base(tmp_path))
    groups: dict[str, Any] = {"ga": FakeGroup("ga"), "gs": FakeGroup("gs")}
    assert suspend_mod.main(["--config", str(path), "gpu-7,aws-00"], opener=opener_for(groups)) == 1
    log = (tmp_path / "burst.log").read_text()
    assert "1 node(s) in no node set of the bursting configuration, nothing deleted for them: gpu-7" in log
