"""`aicluster tune` drives real Ansible through ansible-runner: one failing host does not stop the others, the
summary names it, the exit code says so, and a rerun limited to it succeeds once the fault is gone. The hosts here
are local connections (four inventory hosts on this machine); tests/tune/test_tune_hosts.py runs the real roles
against SSH hosts in network namespaces."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PLAYBOOK = """\
- name: Injected faults
  hosts: slurm_compute
  gather_facts: false
  tasks:
    - name: Fail where a fault file exists
      ansible.builtin.fail:
        msg: "fault injected on {{ inventory_hostname }}"
      when: (lookup('ansible.builtin.env', 'FAULT_DIR') ~ '/' ~ inventory_hostname) is exists
    - name: Reach the host with the pool
      ansible.builtin.ping:
        data: "{{ pool }} node {{ node_index }}"
"""


def rows(stdout: str) -> dict[str, list[str]]:
    """The summary table's rows: host -> [ok, changed, failed, unreachable, skipped, last failure]."""
    out = {}
    for line in stdout.splitlines():
        if "│" not in line:
            continue  # progress lines, messages
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if cells and cells[0].startswith("h100-"):
            out[cells[0]] = cells[1:]
    return out


def tune(project: Path, faults: Path, *args: str, transport: str = "local") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "FAULT_DIR": str(faults), "ANSIBLE_TRANSPORT": transport}
    env["ANSIBLE_PYTHON_INTERPRETER"] = sys.executable
    return subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "tune", "good", "--playbook", str(project / "play.yml"), *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )


def test_one_failing_host_does_not_stop_the_others(project: Path, tmp_path: Path) -> None:
    (project / "play.yml").write_text(PLAYBOOK)
    faults = tmp_path / "faults"
    faults.mkdir()
    (faults / "h100-002").write_text("")
    proc = tune(project, faults)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    table = rows(proc.stdout)
    assert set(table) == {"h100-000", "h100-001", "h100-002", "h100-003"}
    # ok changed failed unreachable skipped: the three others skipped the fault and ran the second task
    for host in ("h100-000", "h100-001", "h100-003"):
        assert table[host][:5] == ["1", "0", "0", "0", "1"], table[host]
    assert table["h100-002"] == ["0", "0", "1", "0", "0", "fault injected on h100-002"]
    assert "1 host(s) failed: h100-002" in proc.stdout
    # no terminal (CI): progress comes as lines while it runs, before the summary table
    progress = proc.stdout.index("h100-002: failed at Fail where a fault file exists: fault injected on h100-002")
    assert proc.stdout.index("play: Injected faults") < progress < proc.stdout.index("tune good")
    # the retry runs the same playbook: the flags given are kept, the limit replaced
    assert f"retry them: aicluster tune good --playbook {project / 'play.yml'} --limit h100-002" in proc.stdout
    artifacts = project / ".work" / "good" / "runner" / "artifacts"
    assert any(artifacts.iterdir())  # kept for the post-mortem

    (faults / "h100-002").unlink()
    proc = tune(project, faults, "--limit", "h100-002")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 host(s) tuned" in proc.stdout
    assert list(rows(proc.stdout)) == ["h100-002"]


def test_check_mode_and_missing_playbook(project: Path, tmp_path: Path) -> None:
    (project / "play.yml").write_text(PLAYBOOK)
    proc = tune(project, tmp_path, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(check mode: nothing changed)" in proc.stdout
    proc = tune(project, tmp_path, "-e", "not a pair")
    assert proc.returncode == 2
    assert "--extra-vars not a pair: expected KEY=VALUE with KEY a variable name" in proc.stderr
    assert "Traceback" not in proc.stderr
    (project / "play.yml").unlink()
    shutil.rmtree(project / ".work")
    proc = tune(project, tmp_path)
    assert proc.returncode == 2
    assert "play.yml: no such playbook" in proc.stderr
    assert not (project / ".work").exists()  # nothing written


TAGGED = """\
- name: Tagged
  hosts: slurm_compute
  gather_facts: false
  tags: [base]
  tasks:
    - name: Only on the first node
      ansible.builtin.ping:
      when: inventory_hostname == 'h100-000'
"""


def test_unknown_tags_and_limits_are_refused_before_running(project: Path, tmp_path: Path) -> None:
    (project / "play.yml").write_text(TAGGED)
    proc = tune(project, tmp_path, "--check", "--tags", "nosuchtag")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--tags nosuchtag: nosuchtag not a tag of play.yml; known tags: base" in proc.stderr
    assert "tuned" not in proc.stdout
    assert not (project / ".work" / "good" / "runner").exists()  # nothing ran
    proc = tune(project, tmp_path, "--limit", "nosuchhost")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--limit nosuchhost: nosuchhost matches no host or group of the inventory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_host_that_ran_no_task_is_not_tuned(project: Path, tmp_path: Path) -> None:
    (project / "play.yml").write_text(TAGGED)
    proc = tune(project, tmp_path, "--tags", "base")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "3 host(s) ran no task: h100-001, h100-002, h100-003" in proc.stdout
    assert "tuned" not in proc.stdout
    proc = tune(project, tmp_path, "--tags", "base", "--limit", "h100-000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 host(s) tuned" in proc.stdout


def test_hosts_without_an_address_are_refused_over_ssh(project: Path, tmp_path: Path) -> None:
    (project / "play.yml").write_text(PLAYBOOK)
    proc = tune(project, tmp_path, "--limit", "slurm_compute", transport="ssh")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no address for h100-000, h100-001, h100-002, h100-003: give them with --hosts FILE" in proc.stderr
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("h100-000: 192.0.2.10\n")
    proc = tune(project, tmp_path, "--hosts", str(hosts), "--limit", "h100-000", "--check", transport="local")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the address given once is kept: a later run without --hosts still knows it
    proc = tune(
        project,
        tmp_path,
        "--limit",
        "h100-000",
        "--check",
        transport="ssh",
    )
    assert "no address" not in proc.stderr


def test_a_refused_run_writes_nothing(project: Path, tmp_path: Path) -> None:
    """Exit 2 means nothing was written: the inventory is checked in a scratch directory and moved into place only
    once the tags, the limit and the addresses are known good."""
    (project / "play.yml").write_text(TAGGED)
    inventory = project / ".work" / "good" / "inventory"
    for args, transport in (
        (("--check", "--tags", "nosuchtag"), "local"),
        (("--limit", "nosuchhost"), "local"),
        (("--limit", "slurm_compute"), "ssh"),  # no address for them
    ):
        proc = tune(project, tmp_path, *args, transport=transport)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "wrote" not in proc.stdout, args
        assert not inventory.exists(), args
        assert "Traceback" not in proc.stderr
    proc = tune(project, tmp_path, "--check", "--limit", "h100-000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.index("wrote") < proc.stdout.index("tune good")
    assert (inventory / "hosts.yml").is_file()


def test_every_limit_pattern_must_match(project: Path, tmp_path: Path) -> None:
    (project / "play.yml").write_text(TAGGED)
    proc = tune(project, tmp_path, "--check", "--limit", "h100-000,nosuch")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--limit h100-000,nosuch: nosuch matches no host or group of the inventory" in proc.stderr
    assert "slurm_compute" in proc.stderr  # the known groups
    proc = tune(project, tmp_path, "--check", "--limit", "slurm_compute:&pool_nosuch")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pool_nosuch matches no host or group" in proc.stderr
    for empty in ("--tags", "--limit"):
        proc = tune(project, tmp_path, "--check", empty, "")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"{empty} is empty" in proc.stderr
    # negations, intersections, globs and ranges that do match pass
    proc = tune(project, tmp_path, "--check", "--limit", "slurm_compute[0:1]:&pool_h100:!h100-001:!nosuch")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(rows(proc.stdout)) == ["h100-000"]


LOCAL_ONLY = """\
- name: Checks on the controller
  hosts: slurm_compute
  gather_facts: false
  tasks:
    - name: Assert on an inventory variable
      ansible.builtin.assert:
        that: pool is defined
    - name: Delegated to the controller
      ansible.builtin.ping:
      delegate_to: localhost
"""


def test_hosts_no_task_reached_are_checked_not_tuned(project: Path, tmp_path: Path) -> None:
    """Assertions on inventory variables and delegated tasks never connect to the host: with unreachable addresses
    the run succeeds, and says the hosts were checked, not tuned."""
    (project / "play.yml").write_text(LOCAL_ONLY)
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("".join(f"h100-00{i}: 192.0.2.{10 + i}\n" for i in range(4)))
    proc = tune(project, tmp_path, "--hosts", str(hosts), "--limit", "slurm_compute", transport="ssh")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 host(s) checked (no task reached the host): h100-000, h100-001, h100-002, h100-003" in proc.stdout
    assert "tuned" not in proc.stdout
