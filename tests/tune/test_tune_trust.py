"""What `aicluster tune` hands to ssh (issue 31 #8, #9): an address from an edited inventory marker never reaches it,
and host key checking is the caller's to set (environment or ansible.cfg), or on with --host-key-checking.

The runs are real: `aicluster tune` in a subprocess drives Ansible through ansible-runner. Where a test needs to see
ssh's command line, ANSIBLE_SSH_EXECUTABLE points Ansible's own ssh connection at a stand-in that records its
arguments and fails as an unreachable host would."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from aicluster import tune as tune_module
from aicluster.inventory import MARKER
from tests.tune.test_tune_local import PLAYBOOK

CHECKS_OFF = "StrictHostKeyChecking=no"  # what Ansible adds to ssh's command line when host_key_checking is off


def tune(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {"ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_CONFIG"}}
    return subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "tune", "good", "--playbook", str(project / "play.yml"), *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        env={**base, "COLUMNS": "200", "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_TIMEOUT": "5", **env},
        timeout=300,
    )


def fake_ssh(tmp_path: Path) -> tuple[Path, Path]:
    """An ssh that records each command line (one JSON list a line) and fails like an unreachable host."""
    log = tmp_path / "ssh-calls.jsonl"
    script = tmp_path / "fake-ssh"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"with open({str(log)!r}, 'a') as fh:\n"
        "    fh.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "sys.stderr.write('ssh: connect to host: Connection refused\\n')\n"
        "sys.exit(255)\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script, log


def ssh_calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def addressed(project: Path, tmp_path: Path) -> Path:
    """The `good` project with its play and an inventory whose marker holds h100-000's address (192.0.2.10)."""
    (project / "play.yml").write_text(PLAYBOOK)
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("h100-000: 192.0.2.10\n")
    proc = subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "-q", "inventory", "good", "--hosts", str(hosts)],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return project / ".work" / "good" / "inventory" / MARKER


# ------------------------------------------------------------------------------------------------
# 8: an edited marker
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ssh", ["real", "recorded"])
def test_an_address_edited_into_the_marker_never_reaches_ssh(
    project: Path, tmp_path: Path, addressed: Path, ssh: str
) -> None:
    pwned = tmp_path / "pwned"
    doc = json.loads(addressed.read_text(encoding="utf-8"))
    doc["addresses"]["h100-000"] = f"-oProxyCommand=touch {pwned}"
    addressed.write_text(json.dumps(doc), encoding="utf-8")
    env = {"ANSIBLE_TRANSPORT": "ssh"}
    log = tmp_path / "none"
    if ssh == "recorded":
        script, log = fake_ssh(tmp_path)
        env["ANSIBLE_SSH_EXECUTABLE"] = str(script)
    proc = tune(project, "--limit", "h100-000", **env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert str(addressed) in first  # the file
    assert 'addresses.h100-000: got "-oProxyCommand=touch ' in first  # the host and the value (clipped)
    assert "--hosts FILE" in first  # the fix
    assert not pwned.exists()  # ssh's ProxyCommand never ran
    assert ssh_calls(log) == []  # ssh never ran at all
    assert not (project / ".work" / "good" / "runner").exists()  # nothing ran


def test_a_marker_directory_others_can_write_is_refused_by_tune(project: Path, tmp_path: Path, addressed: Path) -> None:
    addressed.parent.chmod(0o777)
    script, log = fake_ssh(tmp_path)
    proc = tune(project, "--limit", "h100-000", ANSIBLE_TRANSPORT="ssh", ANSIBLE_SSH_EXECUTABLE=str(script))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "chmod go-w" in proc.stderr
    assert str(addressed.parent) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert ssh_calls(log) == []
    assert stat.S_IMODE(addressed.parent.stat().st_mode) == 0o777  # told, never changed behind the user's back


# ------------------------------------------------------------------------------------------------
# 9: host key checking
# ------------------------------------------------------------------------------------------------


def _ssh_line(project: Path, tmp_path: Path, *args: str, **env: str) -> str:
    script, log = fake_ssh(tmp_path)
    proc = tune(
        project, "--limit", "h100-000", *args, ANSIBLE_TRANSPORT="ssh", ANSIBLE_SSH_EXECUTABLE=str(script), **env
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the stand-in is unreachable
    calls = ssh_calls(log)
    assert calls, proc.stdout + proc.stderr
    assert all("192.0.2.10" in call for call in calls)
    log.unlink()
    return " ".join(" ".join(call) for call in calls)


def test_host_keys_are_unchecked_by_default_and_checked_with_the_flag(
    project: Path, tmp_path: Path, addressed: Path
) -> None:
    assert CHECKS_OFF in _ssh_line(project, tmp_path)  # first contact with fresh hosts (docs: tune)
    assert CHECKS_OFF not in _ssh_line(project, tmp_path, "--host-key-checking")


@pytest.mark.parametrize("value", ["True", "yes", "1"])
def test_the_callers_environment_turns_checking_on(project: Path, tmp_path: Path, addressed: Path, value: str) -> None:
    assert CHECKS_OFF not in _ssh_line(project, tmp_path, ANSIBLE_HOST_KEY_CHECKING=value)


def test_an_ansible_cfg_that_sets_checking_is_obeyed(project: Path, tmp_path: Path, addressed: Path) -> None:
    """ansible-runner itself sets ANSIBLE_HOST_KEY_CHECKING=False where it is missing, which would override the
    caller's ansible.cfg: the setting read from it goes into the run's environment."""
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\nhost_key_checking = True\n")
    assert CHECKS_OFF not in _ssh_line(project, tmp_path, ANSIBLE_CONFIG=str(cfg))
    (project / "ansible.cfg").write_text("[defaults]\nhost_key_checking = yes\n")  # where ansible-playbook runs
    assert CHECKS_OFF not in _ssh_line(project, tmp_path)
    cfg.write_text("[defaults]\nhost_key_checking = False\n")
    assert CHECKS_OFF in _ssh_line(project, tmp_path, ANSIBLE_CONFIG=str(cfg))


def test_the_flag_against_the_callers_false_is_refused(project: Path, tmp_path: Path, addressed: Path) -> None:
    script, log = fake_ssh(tmp_path)
    proc = tune(
        project,
        "--host-key-checking",
        "--limit",
        "h100-000",
        ANSIBLE_TRANSPORT="ssh",
        ANSIBLE_SSH_EXECUTABLE=str(script),
        ANSIBLE_HOST_KEY_CHECKING="False",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--host-key-checking" in proc.stderr
    assert "ANSIBLE_HOST_KEY_CHECKING=False" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert ssh_calls(log) == []


@pytest.mark.parametrize("value", ["True", "False", "yes", "no", "1", "0", "", "bogus"])
def test_the_callers_setting_reaches_ansible_as_given(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", value)
    for flag in (False, True):
        assert tune_module._env(Path("roles"), None, flag)["ANSIBLE_HOST_KEY_CHECKING"] == value
    monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING")
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")  # no ~/.ansible.cfg
    monkeypatch.chdir("/")
    if Path("/etc/ansible/ansible.cfg").exists():
        pytest.skip("this machine's /etc/ansible/ansible.cfg may set host_key_checking")
    assert tune_module._env(Path("roles"), None)["ANSIBLE_HOST_KEY_CHECKING"] == "False"
    assert tune_module._env(Path("roles"), None, True)["ANSIBLE_HOST_KEY_CHECKING"] == "True"
