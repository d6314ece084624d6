"""`aicluster inventory`: hosts and groups from the plan, group_vars from the plan and the stack outputs,
files only the owner can read, parsed by Ansible's own `ansible-inventory`."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from aicluster.catalog import Catalog
from aicluster.inventory import group_name, inventory, known, read_yaml, write
from tests.conftest import ROOT, run_cli
from tests.helpers import (
    azure_cluster,
    azure_pool,
    data_stack,
    gcp_pool,
    hybrid_site_cluster,
    plan_of,
    pool,
    tpu_pool,
)


def load(files: dict[str, str], rel: str) -> dict[str, object]:
    doc = read_yaml(files[rel])
    assert isinstance(doc, dict)
    return doc


def test_groups_by_pool_provider_fabric_and_role(catalog: Catalog) -> None:
    data = azure_cluster(pools=[pool(), azure_pool(name="nd", nodes=4), gcp_pool(name="a3", nodes=2)], storage=[])
    p = plan_of(catalog, data)
    files = inventory(p, {}, {}, "offline preview")
    children = load(files, "hosts.yml")["all"]["children"]  # type: ignore[index]
    assert list(children["pool_h100"]["hosts"]) == ["h100-000", "h100-001", "h100-002", "h100-003"]
    assert children["provider_aws"]["children"] == {"pool_h100": {}}
    assert children["provider_gcp"]["children"] == {"pool_a3": {}}
    assert children["fabric_efa"]["children"] == {"pool_h100": {}}
    assert children["fabric_infiniband"]["children"] == {"pool_nd": {}}
    assert children["fabric_gpudirect_tcpxo"]["children"] == {"pool_a3": {}}
    assert set(children["slurm_compute"]["children"]) == {"pool_h100", "pool_nd", "pool_a3"}
    assert list(children["slurm_controller"]["hosts"]) == ["nd-train-slurmctld"]
    assert children["pool_nd"]["hosts"]["nd-001"] == {"node_index": 1, "fabric_domain": "nd-ib0"}
    assert children["pool_h100"]["hosts"]["h100-000"] == {"node_index": 0}  # AWS: the pool is the domain
    a3 = load(files, "group_vars/pool_a3.yml")
    assert a3["fabric"] == "gpudirect-tcpxo"
    assert [n["nic_type"] for n in a3["gpu_nics"]] == ["GVNIC"] * 9  # type: ignore[union-attr]
    h100 = load(files, "group_vars/pool_h100.yml")
    assert h100["efa_devices"] == 32
    assert h100["nccl_profile"] == "aws-efa-ofi-1.7"
    # the versions the roles install are the ones the profile was chosen for (catalog default_versions)
    assert h100["nccl_library_versions"] == {"efa-installer": "1.51.0", "aws-ofi-nccl": "1.22.0", "nccl": "2.27.7"}
    assert "NCCL_SOCKET_IFNAME=en" in h100["nccl_conf"]  # type: ignore[operator]
    assert "NCCL_FASTRAK_IFNAME" in a3["nccl_env"]  # type: ignore[operator]


def test_fabric_domains_of_a_large_azure_pool_and_tpu_slices(catalog: Catalog) -> None:
    p = plan_of(catalog, azure_cluster(pools=[azure_pool(nodes=250)], storage=[]))
    hosts = load(inventory(p, {}, {}, "x"), "hosts.yml")["all"]["children"]["pool_h100"]["hosts"]  # type: ignore[index]
    assert hosts["h100-099"]["fabric_domain"] == "h100-ib0"
    assert hosts["h100-100"]["fabric_domain"] == "h100-ib1"
    assert hosts["h100-249"]["fabric_domain"] == "h100-ib2"
    tpu = plan_of(catalog, {"name": "pod", "pools": [tpu_pool()]})
    files = inventory(tpu, {}, {}, "x")
    hosts = load(files, "hosts.yml")["all"]["children"]["pool_v5p"]["hosts"]  # type: ignore[index]
    assert (hosts["v5p-031"]["fabric_domain"], hosts["v5p-032"]["fabric_domain"]) == ("v5p-s0", "v5p-s1")
    assert load(files, "group_vars/pool_v5p.yml")["nccl_profile"] is None  # TPUs do not use NCCL
    assert load(files, "group_vars/pool_v5p.yml")["tpu"] == {
        "accelerator_type": "v5p-256",
        "chips_per_host": 4,
        "hosts_per_slice": 32,
        "runtime_version": "v2-alpha-tpuv5",
    }


def test_outputs_fill_in_what_is_known_and_nothing_else(catalog: Catalog) -> None:
    p = plan_of(
        catalog,
        {
            "name": "c",
            "pools": [pool()],
            "storage": [{"name": "scratch", "kind": "lustre", "capacity_tib": 4.8, "mount": "/fsx"}],
        },
    )
    outputs = {
        "pools": {"h100": {"asg_name": "c-h100-asg", "launch_template_id": "<computed>", "nodes": 4.0}},
        "filesystems": {"scratch": {"dns_name": "fs-1.fsx.aws", "mount_name": "[secret]"}},
        "controller": {"private_ip": "10.8.0.10"},
    }
    files = inventory(p, outputs, {"h100-000": "192.0.2.10", "c-slurmctld": "192.0.2.1"}, "pulumi stack output")
    pool_vars = load(files, "group_vars/pool_h100.yml")
    assert pool_vars["outputs"] == {"asg_name": "c-h100-asg", "nodes": 4}
    (fs,) = load(files, "group_vars/all.yml")["filesystems"]  # type: ignore[misc]
    assert fs["dns_name"] == "fs-1.fsx.aws"
    assert "mount_name" not in fs  # secrets are never written
    assert load(files, "group_vars/slurm_controller.yml")["outputs"] == {"private_ip": "10.8.0.10"}
    everywhere = load(files, "group_vars/all.yml")
    assert everywhere["slurm_version"] == "22.05"
    assert set(everywhere["slurm_files"]) >= {
        "/etc/slurm/slurm.conf",
        "/etc/slurm/gres.conf",
        "/etc/slurm/topology.conf",
    }  # type: ignore[arg-type]
    assert "NodeName=h100-[000-003]" in everywhere["slurm_files"]["/etc/slurm/slurm.conf"]  # type: ignore[index]
    children = load(files, "hosts.yml")["all"]["children"]  # type: ignore[index]
    assert children["pool_h100"]["hosts"]["h100-000"]["ansible_host"] == "192.0.2.10"
    assert "ansible_host" not in children["pool_h100"]["hosts"]["h100-001"]
    assert children["slurm_controller"]["hosts"]["c-slurmctld"] == {"ansible_host": "192.0.2.1"}


def test_helpers() -> None:
    assert group_name("pool", "gpu-a100") == "pool_gpu_a100"
    assert known({"a": "<computed>", "b": [1.0, "[secret]"], "c": 2.5}) == {"b": [1], "c": 2.5}


def test_cli_writes_owner_only_files_in_a_work_dir(project: Path) -> None:
    proc = run_cli("inventory", "good", cwd=project)
    assert proc.returncode == 0, proc.stderr
    out = project / ".work" / "good" / "inventory"
    assert "outputs from the offline preview" in proc.stdout
    # offline, the cloud groups are unknown: repair holds the replacements, and the user is told what to do
    assert "aicluster-repair holds their nodes' replacements" in proc.stderr
    assert "again after `pulumi up`" in proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert [p.relative_to(out).as_posix() for p in files] == [
        ".aicluster-inventory.json",  # what aicluster wrote here (a later run removes only those)
        ".aicluster-inventory.lock",  # one run at a time writes here (empty once the run ends)
        "group_vars/all.yml",
        "group_vars/pool_h100.yml",
        "group_vars/slurm_controller.yml",
        "hosts.yml",
    ]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
    assert (out / ".aicluster-inventory.lock").read_text() == ""
    assert not (project / "playbooks").exists()


def test_cli_refuses_playbooks_and_unknown_hosts(project: Path, tmp_path: Path) -> None:
    proc = run_cli("inventory", "good", "--out", str(project / "playbooks" / "inv"), cwd=project)
    assert proc.returncode == 2
    assert "inside playbooks/" in proc.stderr
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("h100-000: 10.0.0.1\nh100-0009: 10.0.0.2\n")
    proc = run_cli("inventory", "good", "--hosts", str(hosts), cwd=project)
    assert proc.returncode == 2
    assert "hosts.yml:2: h100-0009: not a node of this stack" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (project / ".work").exists()  # nothing written
    hosts.write_text("- not a mapping\n")
    proc = run_cli("inventory", "good", "--hosts", str(hosts), cwd=project)
    assert proc.returncode == 2
    assert "expected a mapping of node name -> address" in proc.stderr


def with_fake_pulumi(tmp_path: Path, script: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "pulumi"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "COLUMNS": "200"}


@pytest.mark.parametrize("quiet", [False, True], ids=["warns", "quiet"])
def test_cli_falls_back_to_the_offline_preview_when_the_stack_is_not_deployed(
    project: Path, tmp_path: Path, quiet: bool
) -> None:
    """The fallback is a warning; --quiet hides it as it hides every warning."""
    env = with_fake_pulumi(tmp_path, "echo 'error: no stack named good found' >&2; exit 255")
    flags = ["--quiet"] if quiet else []
    proc = subprocess.run(
        [sys.executable, "-m", "aicluster.cli", *flags, "inventory", "good"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    fallback = "pulumi stack output failed (error: no stack named good found); using the offline preview"
    if quiet:
        assert proc.stderr == ""
    else:
        assert fallback in proc.stderr
    assert "outputs from the offline preview" in proc.stdout


def test_cli_reads_live_outputs_through_the_pulumi_cli(project: Path, tmp_path: Path) -> None:
    """With `pulumi` on PATH the deployed stack's outputs are used (a stand-in CLI prints them here)."""
    outputs = {"pools": {"h100": {"asg_name": "llm-dev-h100"}}, "controller": {"private_ip": "10.8.0.9"}}
    env = with_fake_pulumi(tmp_path, f"echo '{json.dumps(outputs)}'")
    proc = subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "inventory", "good"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "outputs from the pulumi stack output" in proc.stdout
    gv = read_yaml((project / ".work" / "good" / "inventory" / "group_vars" / "pool_h100.yml").read_text())
    assert gv["outputs"] == {"asg_name": "llm-dev-h100"}


def test_ansible_reads_the_inventory(project: Path) -> None:
    exe = shutil.which("ansible-inventory", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("ansible-core is not installed (pip install -e '.[dev]')")
    assert run_cli("inventory", "good", cwd=project).returncode == 0
    inv = project / ".work" / "good" / "inventory" / "hosts.yml"
    proc = subprocess.run([exe, "-i", str(inv), "--list"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["pool_h100"]["hosts"] == ["h100-000", "h100-001", "h100-002", "h100-003"]
    assert data["slurm_compute"]["children"] == ["pool_h100"]
    # values are data to Ansible, never templates: `ansible-inventory` shows them as the unsafe values they are
    host = {
        k: v["__ansible_unsafe"] if isinstance(v, dict) and "__ansible_unsafe" in v else v
        for k, v in data["_meta"]["hostvars"]["h100-002"].items()
    }
    assert host["node_index"] == 2
    assert host["efa_devices"] == 32  # group_vars of its pool
    assert host["cluster"] == "llm-dev"  # group_vars/all


def test_gpu_platform_without_an_nccl_profile_is_said_so(catalog: Catalog) -> None:
    a4 = gcp_pool(name="b200", instance_type="a4-highgpu-8g", zone="us-central1-b")
    p = plan_of(
        catalog,
        {"name": "c", "pools": [a4], "pricing": {"overrides": [{"sku": "a4-highgpu-8g", "usd_per_hour": 90.0}]}},
    )
    profiles = tuple(
        prof.model_copy(update={"instance_types": ("a3-ultragpu-8g",)}) if prof.id == "gcp-a3ultra-gib" else prof
        for prof in catalog.nccl.profiles
    )
    without_a4 = dataclasses.replace(catalog, nccl=catalog.nccl.model_copy(update={"profiles": profiles}))
    gv = load(inventory(p, {}, {}, "x", catalog=without_a4), "group_vars/pool_b200.yml")
    assert gv["nccl_profile"] is None
    assert "a4-highgpu-8g" in gv["nccl_profile_missing"]  # type: ignore[operator]
    assert "nccl_conf" not in gv


def test_the_controller_address_comes_from_the_outputs_unless_given(catalog: Catalog) -> None:
    p = plan_of(catalog, azure_cluster(pools=[pool()], storage=[]))
    name = p.controller_host()

    def controller(outputs: dict[str, object], addresses: dict[str, str]) -> dict[str, object]:
        doc = load(inventory(p, outputs, addresses, "x"), "hosts.yml")
        return doc["all"]["children"]["slurm_controller"]["hosts"][name]  # type: ignore[index,no-any-return]

    assert controller({"controller": {"private_ip": "10.0.0.9"}}, {})["ansible_host"] == "10.0.0.9"
    assert "ansible_host" not in controller({"controller": {"private_ip": "<computed>"}}, {})  # offline preview
    assert controller({"controller": {"private_ip": "10.0.0.9"}}, {name: "192.0.2.1"})["ansible_host"] == "192.0.2.1"


def test_cli_renders_the_slurm_files_for_the_nodes_slurm_release(project: Path) -> None:
    proc = run_cli("inventory", "good", "--slurm-version", "23.11", cwd=project)
    assert proc.returncode == 0, proc.stderr
    gv = read_yaml((project / ".work/good/inventory/group_vars/all.yml").read_text())
    assert gv["slurm_version"] == "23.11"
    assert "TopologyPlugin=topology/block" in gv["slurm_files"]["/etc/slurm/slurm.conf"]
    for bad, message in (("23", "expected a Slurm release as YY.MM"), ("20.02", "for 20.11 and later")):
        proc = run_cli("inventory", "good", "--slurm-version", bad, "--out", str(project / "other"), cwd=project)
        assert proc.returncode == 2, proc.stdout
        assert message in proc.stderr
        assert not (project / "other").exists()


def test_rack_scale_hosts_carry_their_nvlink_domain_and_each_domain_is_a_group(catalog: Catalog) -> None:
    """A host of a GB200 NVL72 rack names its NVLink domain; each domain is a group (children of nvlink_domains)
    whose group_vars give the IMEX domain: its nodes in order, the same list for every node of the rack."""
    p = plan_of(catalog, data_stack("gb200-site"))
    given = {f"gb200-{i:03d}": f"10.210.1.{10 + i}" for i in range(20)}  # --hosts: the first rack and two more
    files = inventory(p, {}, given, "x", slurm_version=(24, 11))
    children = load(files, "hosts.yml")["all"]["children"]  # type: ignore[index]
    assert children["pool_gb200"]["hosts"]["gb200-019"] == {
        "ansible_host": "10.210.1.29",
        "node_index": 19,
        "nvlink_domain": "gb200-nvl1",
    }
    assert children["nvlink_domains"]["children"] == {f"nvlink_gb200_nvl{k}": {} for k in range(4)}
    assert list(children["nvlink_gb200_nvl1"]["hosts"]) == [f"gb200-{i:03d}" for i in range(18, 36)]
    assert load(files, "group_vars/nvlink_gb200_nvl1.yml") == {
        "nvlink_domain_pool": "gb200",
        "nvlink_domain_unit": "rack",
        "nvlink_domain_gpus": 72,
        "nvlink_domain_whole": True,
        "nvlink_domain_rack": "gb200-r02",
        "nvidia_imex_domain": "gb200-nvl1",
        "nvidia_imex_nodes": [f"gb200-{i:03d}" for i in range(18, 36)],
        "nvidia_imex_unaddressed": [f"gb200-{i:03d}" for i in range(20, 36)],  # the role stops on them
    }
    nvl0 = load(files, "group_vars/nvlink_gb200_nvl0.yml")
    assert nvl0["nvidia_imex_addresses"] == [f"10.210.1.{10 + i}" for i in range(18)]
    slurm = load(files, "group_vars/all.yml")["slurm_files"]
    assert "BlockName=gb200-nvl1 Nodes=gb200-[018-035]" in slurm["/etc/slurm/topology.conf"]  # type: ignore[index]
    # 8-GPU pools have no NVLink domain: no such host var or group
    plain = load(inventory(plan_of(catalog, azure_cluster(storage=[])), {}, {}, "x"), "hosts.yml")
    assert "nvlink_domains" not in plain["all"]["children"]  # type: ignore[index]


def test_cli_refuses_rack_scale_pools_for_a_slurm_without_blocks(project: Path) -> None:
    """22.05 (the default, Debian 12's) has no topology/block: one problem at the pool's instance_type line, exit 2,
    nothing written; the release the nodes run (--slurm-version 24.11) writes the inventory."""
    shutil.copy(ROOT / "tests" / "data" / "stacks" / "Pulumi.gb200-gcp.yaml", project / "stacks")
    proc = run_cli("inventory", "gb200-gcp", cwd=project)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.splitlines()[0] == (
        'error: stacks/Pulumi.gb200-gcp.yaml:14: pools[0].instance_type: got "a4x-highgpu-4g"; a rack-scale type: '
        "the pool's 2 NVLink domain(s) of 18 nodes are Slurm blocks (topology/block), which Slurm 22.05 "
        "(--slurm-version's default) does not have; render the Slurm files for the release the nodes run, 23.11 or "
        "later (--slurm-version 23.11: Ubuntu 24.04's Slurm; 24.11: Debian 13's)"
    )
    assert not (project / ".work" / "gb200-gcp" / "inventory").exists()
    proc = run_cli("inventory", "gb200-gcp", "--slurm-version", "22.05", cwd=project)
    assert "which Slurm 22.05 does not have" in proc.stderr
    proc = run_cli("inventory", "gb200-gcp", "--slurm-version", "24.11", cwd=project)
    assert proc.returncode == 0, proc.stderr
    gv = read_yaml((project / ".work/gb200-gcp/inventory/group_vars/all.yml").read_text())
    assert "SwitchType=switch/nvidia_imex" in gv["slurm_files"]["/etc/slurm/slurm.conf"]


def inventory_cli(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "inventory", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200", **env},
    )


def test_no_event_loop_is_left_to_the_garbage_collector(project: Path) -> None:
    """The offline outputs run the Pulumi program: every asyncio loop it used is closed before exit (one left open
    printed "Exception ignored in: BaseEventLoop.__del__ ... Invalid file descriptor: -1" now and then)."""
    proc = inventory_cli(project, "good", PYTHONWARNINGS="always::ResourceWarning")
    assert proc.returncode == 0, proc.stderr
    assert "unclosed event loop" not in proc.stderr
    assert "Exception ignored" not in proc.stderr


def test_stack_values_are_data_to_ansible_never_templates(catalog: Catalog, tmp_path: Path) -> None:
    """A template in a stack value (here a mount path, built past the spec's own checks) reaches Ansible as the
    literal text: ansible-playbook prints and writes it, and never runs the lookup on the controller."""
    exe = shutil.which("ansible-playbook", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("ansible-core is not installed (pip install -e '.[dev]')")
    p = plan_of(catalog, azure_cluster(pools=[pool(nodes=1)]))
    evil = "/fsx{{ lookup('pipe', 'echo PWNED') }}"
    fs = p.filesystems[0].model_copy(update={"mount": evil})
    p = p.model_copy(update={"filesystems": (fs, *p.filesystems[1:])})
    from aicluster.inventory import AddressError

    with pytest.raises(AddressError, match="not an address"):  # an address is never even written as a template
        inventory(p, {}, {"h100-000": "{{ 'PWNED' }}"}, "x")
    files = inventory(p, {}, {"h100-000": "192.0.2.7"}, "x")
    assert evil in read_yaml(files["group_vars/all.yml"])["filesystems"][0]["mount"]
    write(tmp_path / "inv", files, {}, shown="inv")
    result = tmp_path / "result.txt"
    (tmp_path / "play.yml").write_text(
        "- hosts: h100-000\n  connection: local\n  gather_facts: false\n  tasks:\n"
        '    - ansible.builtin.debug:\n        msg: "{{ filesystems[0].mount }}"\n'
        "    - ansible.builtin.copy:\n"
        f"        dest: {result}\n"
        '        content: "{{ filesystems[0].mount }}\\n{{ ansible_host }}\\n"\n        mode: "0600"\n'
    )
    env = {
        **os.environ,
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "PATH": f"{Path(exe).parent}:{os.environ['PATH']}",
    }
    proc = subprocess.run(
        [exe, "-i", str(tmp_path / "inv" / "hosts.yml"), str(tmp_path / "play.yml")],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PWNED" not in proc.stdout.replace("echo PWNED", "").replace("'PWNED'", "")
    assert result.read_text() == f"{evil}\n192.0.2.7\n"


def test_inventory_never_writes_outside_the_stacks_work_directory(project: Path) -> None:
    shutil.copy(project / "stacks" / "Pulumi.good.yaml", project / "stacks" / "Pulumi....yaml")  # stack ".."
    proc = inventory_cli(project, "..")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (project / "inventory").exists()
    assert not (project / ".work").exists()


def test_out_refuses_a_directory_it_does_not_own_and_a_link(project: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    (mine / "group_vars").mkdir(parents=True)
    (mine / "group_vars" / "site.yml").write_text("keep: me\n")
    mine.chmod(0o755)
    proc = inventory_cli(project, "good", "--out", str(mine))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--out {mine}: a non-empty directory aicluster did not write" in proc.stderr
    assert (mine / "group_vars" / "site.yml").read_text() == "keep: me\n"
    assert stat.S_IMODE(mine.stat().st_mode) == 0o755
    assert not (mine / "hosts.yml").exists()

    link = tmp_path / "link"
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    empty.chmod(0o755)
    link.symlink_to(empty)
    proc = inventory_cli(project, "good", "--out", str(link))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--out {link}: is a symbolic link" in proc.stderr
    assert stat.S_IMODE(empty.stat().st_mode) == 0o755
    assert not any(empty.iterdir())

    proc = inventory_cli(project, "good", "--out", str(empty))  # an empty directory: written, its mode kept
    assert proc.returncode == 0, proc.stderr
    assert (empty / "hosts.yml").is_file()
    assert stat.S_IMODE(empty.stat().st_mode) == 0o755


def test_rewriting_removes_only_what_aicluster_wrote(project: Path, tmp_path: Path) -> None:
    text = (project / "stacks" / "Pulumi.good.yaml").read_text()
    (project / "stacks" / "Pulumi.other.yaml").write_text(text.replace("name: h100", "name: gpu"))
    out = tmp_path / "inv"
    assert inventory_cli(project, "good", "--out", str(out)).returncode == 0
    assert (out / "group_vars" / "pool_h100.yml").is_file()
    assert stat.S_IMODE(out.stat().st_mode) == 0o700  # made by aicluster: only the owner reads it
    (out / "group_vars" / "site.yml").write_text("keep: me\n")  # the user's own
    proc = inventory_cli(project, "other", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert not (out / "group_vars" / "pool_h100.yml").exists()  # aicluster's, no longer part of it
    assert (out / "group_vars" / "site.yml").read_text() == "keep: me\n"


def test_addresses_given_once_are_kept(project: Path, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("h100-000: 10.0.0.10\nh100-001: 10.0.0.11\n")
    assert inventory_cli(project, "good", "--hosts", str(hosts)).returncode == 0
    proc = inventory_cli(project, "good")  # as `tune` rewrites it, without --hosts
    assert proc.returncode == 0, proc.stderr
    assert "2 with an address (2 kept from the previous inventory)" in proc.stdout
    doc = read_yaml((project / ".work/good/inventory/hosts.yml").read_text())
    assert doc["all"]["children"]["pool_h100"]["hosts"]["h100-001"]["ansible_host"] == "10.0.0.11"


def test_the_writer_never_follows_a_link_out_of_its_directory(catalog: Catalog, tmp_path: Path) -> None:
    p = plan_of(catalog, azure_cluster(pools=[pool(nodes=1)]))
    files = inventory(p, {}, {}, "x")
    target = tmp_path / "inv"
    write(target, files, {}, shown="inv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "all.yml").write_text("theirs\n")
    shutil.rmtree(target / "group_vars")
    (target / "group_vars").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="would be written outside it"):
        write(target, files, {}, shown="inv")
    assert (elsewhere / "all.yml").read_text() == "theirs\n"
    assert sorted(f.name for f in elsewhere.iterdir()) == ["all.yml"]


def test_owned_hosts_and_the_site_controller_are_addressed_from_the_stack(catalog: Catalog) -> None:
    p = plan_of(catalog, hybrid_site_cluster())
    files = inventory(p, {}, {"dgx-001": "dgx-001.mgmt.example"}, "offline preview", catalog=catalog)
    children = load(files, "hosts.yml")["all"]["children"]  # type: ignore[index]
    owned = children["pool_h100"]["hosts"]
    assert owned["dgx-000"] == {"node_index": 0, "ansible_host": "10.200.1.10"}
    assert owned["dgx-001"]["ansible_host"] == "dgx-001.mgmt.example"  # --hosts wins over the stack
    assert children["slurm_controller"]["hosts"] == {"slurm01": {"ansible_host": "10.200.0.5"}}
    assert "ansible_host" not in children["pool_p5"]["hosts"]["p5-000"]  # cloud nodes: outputs, --discover
    assert children["site_fra1"]["children"] == {"pool_h100": {}}
    assert children["provider_onprem"]["children"] == {"pool_h100": {}}
    assert children["fabric_infiniband"]["children"] == {"pool_h100": {}}
    gv = load(files, "group_vars/pool_h100.yml")
    assert (gv["provider"], gv["site"], gv["site_fabric"]) == ("onprem", "fra1", "fra1")
    assert gv["nccl_profile"] == "onprem-dgx-h100-ib"
    assert gv["nccl_library_versions"] == {"nccl": "2.30.7"}
    assert "NCCL_IB_HCA==mlx5_0,mlx5_3," in gv["nccl_conf"]  # type: ignore[operator]
    # the Slurm files the roles install are the site layout: the controller on the site host
    slurm_conf = load(files, "group_vars/all.yml")["slurm_files"]["/etc/slurm/slurm.conf"]  # type: ignore[index]
    assert "\nSlurmctldHost=slurm01(10.200.0.5)\n" in slurm_conf


def test_discover_says_owned_hosts_come_from_the_stack(project: Path) -> None:
    shutil.copy(ROOT / "stacks" / "Pulumi.onprem-dgx-h100.yaml", project / "stacks" / "Pulumi.site.yaml")
    proc = run_cli("inventory", "site", "--discover", cwd=project)
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert "on-prem pool(s) h100: their hosts and addresses come from the stack (pools[].hosts)" in said
    assert "129 host(s), 1 with an address" in said  # the controller host; the 128 nodes are named, not listed
    hosts = read_yaml((project / ".work" / "site" / "inventory" / "hosts.yml").read_text())
    assert hosts["all"]["children"]["slurm_controller"]["hosts"]["slurm01"] == {"ansible_host": "10.200.0.5"}


def test_a_rack_scale_pool_says_its_architecture_and_nvlink_domains(catalog: Catalog) -> None:
    """A4X (GB200, Grace hosts): the roles choose arm64 packages and IMEX from cpu_arch and nvlink, and the NCCL texts
    carry multi-node NVLink; an 8-GPU x86 pool says x86_64 and has no nvlink."""
    a4x = gcp_pool(
        name="gb200",
        instance_type="a4x-highgpu-4g",
        region="us-east4",
        zone="us-east4-b",
        nodes=36,
        market="reserved",
        reservation="projects/p/reservations/gb200",
    )
    pricing = {"overrides": [{"sku": "a4x-highgpu-4g", "market": "reserved", "usd_per_hour": 40.0}]}
    files = inventory(
        plan_of(catalog, {"name": "c", "pools": [a4x], "pricing": pricing}), {}, {}, "x", slurm_version=(24, 11)
    )
    gv = load(files, "group_vars/pool_gb200.yml")
    assert gv["cpu_arch"] == "arm64"
    assert gv["nvlink"] == {"unit": "subblock", "nodes_per_domain": 18, "gpus_per_domain": 72}
    assert [d["name"] for d in gv["fabric_domains"]] == ["gb200-nvl0", "gb200-nvl1"]  # type: ignore[index,union-attr]
    assert 'export NCCL_MNNVL_ENABLE="1"' in gv["nccl_env"]  # type: ignore[operator]
    h100 = load(inventory(plan_of(catalog, {"name": "c", "pools": [pool()]}), {}, {}, "x"), "group_vars/pool_h100.yml")
    assert h100["cpu_arch"] == "x86_64"
    assert "nvlink" not in h100


def _slurm_gpu_pools() -> list[tuple[str, str]]:
    from aicluster.preview import plan_stack
    from aicluster.stackfile import find_project, read_stack
    from tests.conftest import SLURM_STACKS

    out = []
    for stack in SLURM_STACKS:
        plan = plan_stack(read_stack(find_project(ROOT), stack))
        out += [(stack, p.name) for p in plan.pools if p.accelerator_kind == "gpu"]
    return out


@pytest.mark.parametrize(("stack", "pool_name"), _slurm_gpu_pools())
def test_every_gpu_pool_has_an_acceptance_gate_under_its_wire_rate(stack: str, pool_name: str) -> None:
    """The Slurm acceptance role gates a ring all_reduce of 8 GiB on each pair of nodes on `nccl_expected_busbw_gb_s`:
    the collective model at that shape, for every GPU type (issue 29: p5 was held to AWS's 2-node tree figure, 487
    GB/s, over EFA's 400 GB/s; ND H100 v5 to a single-VM NVLink minimum; five types had no gate and the role failed
    with "render the inventory again"). Across nodes it never exceeds what a node's NICs carry; inside an NVLink
    domain (a pair of NVL72 trays) it is NVLink's ring."""
    from aicluster.catalog import load_catalog
    from aicluster.inventory import _nccl_vars
    from aicluster.preview import plan_stack
    from aicluster.render.nccl import ACCEPTANCE_MESSAGE_BYTES, acceptance_busbw
    from aicluster.stackfile import find_project, read_stack

    catalog = load_catalog()
    plan = plan_stack(read_stack(find_project(ROOT), stack))
    pool = next(p for p in plan.pools if p.name == pool_name)
    gate = _nccl_vars(pool, catalog)
    model = acceptance_busbw(pool, catalog, 2)
    assert model is not None
    assert (model.message_bytes, model.nodes) == (ACCEPTANCE_MESSAGE_BYTES, 2)
    assert gate["nccl_expected_busbw_gb_s"] == model.busbw_gb_s > 0
    assert gate["nccl_expected_busbw_nodes"] == 2
    if pool.nvlink is None:
        assert model.algorithm == "ring"
        network = catalog.collectives.network_of(pool.provider, pool.instance_type)
        assert network is not None
        assert model.busbw_gb_s <= network.node_gb_s
    else:
        assert model.algorithm == "nvlink-ring"


def test_the_acceptance_roles_test_is_the_shape_the_gate_is_computed_for() -> None:
    import yaml as _yaml

    from aicluster.render.nccl import ACCEPTANCE_ALGORITHM, ACCEPTANCE_MESSAGE_BYTES, ACCEPTANCE_PAIR_NODES

    defaults = _yaml.safe_load((ROOT / "playbooks/roles/acceptance/defaults/main.yml").read_text())
    assert int(defaults["acceptance_message_bytes"]) == ACCEPTANCE_MESSAGE_BYTES
    assert defaults["acceptance_env"]["NCCL_ALGO"].lower() == ACCEPTANCE_ALGORITHM
    assert "--nodes=2" in defaults["acceptance_launcher"]
    assert ACCEPTANCE_PAIR_NODES == 2


# --- two runs into one --out: the second waits its turn, never mistakes the first's files (issue 31 #14) --------

# `python -m aicluster.cli ARGS` whose first os.fsync of a file under DIR says "writing" on stderr and waits for a
# line on stdin: a real run held in the middle of writing its inventory (some files written, no marker yet).
_HELD_RUN = """
import os, runpy, sys
folder, sys.argv = sys.argv[1], ["aicluster", *sys.argv[2:]]
fsync, held = os.fsync, []
def hold(fd):
    fsync(fd)
    if not held and os.readlink(f"/proc/self/fd/{fd}").startswith(folder + os.sep):
        held.append(fd)
        sys.stderr.write("writing\\n")
        sys.stderr.flush()
        sys.stdin.readline()
os.fsync = hold
runpy.run_module("aicluster.cli", run_name="__main__", alter_sys=True)
"""


def _held_inventory(project: Path, out: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HELD_RUN, str(out), "inventory", "good", "--out", str(out)],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line == "writing\n":
            return proc
    proc.wait()
    pytest.fail(f"the first run ended before writing: {proc.returncode}")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to find the file being written")
@pytest.mark.parametrize("first_ends", ["completes", "is-killed"])
def test_a_second_run_into_the_same_out_is_told_another_run_writes_it(
    project: Path, tmp_path: Path, first_ends: str
) -> None:
    out = tmp_path / "inventory"  # new: the first run makes it
    first = _held_inventory(project, out)
    try:
        assert first.stdin is not None
        second = inventory_cli(project, "good", "--out", str(out))
        assert second.returncode == 2, second.stdout + second.stderr
        assert (
            f"error: --out {out} is being written by another aicluster run (pid {first.pid}); wait for it or "
            "choose another --out" in " ".join(second.stderr.split())
        )
        assert "did not write" not in second.stderr
        if first_ends == "completes":
            first.stdin.write("go on\n")
            first.stdin.close()
            assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
        else:
            first.terminate()
            assert first.wait(timeout=120) == -signal.SIGTERM
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    # the lock file left behind is aicluster's: a later run writes the directory, after a complete run or a killed one
    third = inventory_cli(project, "good", "--out", str(out))
    assert third.returncode == 0, third.stdout + third.stderr
    assert (out / "hosts.yml").is_file()
    again = inventory_cli(project, "good", "--out", str(out))
    assert again.returncode == 0, again.stdout + again.stderr


def test_the_lock_is_the_one_a_run_takes(tmp_path: Path) -> None:
    """A run finds the directory busy while another process holds the lock through the same helper."""
    from aicluster.inventory import InventoryDirError, locked

    target = tmp_path / "inv"
    target.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from aicluster.inventory import locked\n"
            "with locked(Path(sys.argv[1]), shown=sys.argv[1]):\n"
            "    print('locked', flush=True); sys.stdin.readline()",
            str(target),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    try:
        assert holder.stdout is not None
        assert holder.stdin is not None
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(InventoryDirError, match=rf"^{target} is being written by another aicluster run "):
            write(target, {"hosts.yml": "all: {}\n"}, {}, shown=str(target))
        assert not (target / "hosts.yml").exists()
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with locked(target, shown=str(target)):  # free again, and taken once at a time within one process too
        pass
    write(target, {"hosts.yml": "all: {}\n"}, {}, shown=str(target))
    assert (target / "hosts.yml").read_text() == "all: {}\n"


def test_an_out_under_a_file_is_a_clear_error(tmp_path: Path) -> None:
    from aicluster.inventory import InventoryDirError

    (tmp_path / "file").write_text("x")
    target = tmp_path / "file" / "inventory"
    with pytest.raises(InventoryDirError, match=r": cannot create the directory \(.+\)$"):
        write(target, {"hosts.yml": "all: {}\n"}, {}, shown=str(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize(
    ("outputs", "given", "shown"),
    [
        pytest.param({"controller": {"private_ip": "-oProxyCommand=touch /tmp/x"}}, {}, "c-slurmctld", id="output"),
        pytest.param({}, {"h100-001": "-oProxyCommand=touch /tmp/x"}, "h100-001", id="discovered"),
        pytest.param({}, {"h100-001": "10.0.0.1 -p 2222"}, "h100-001", id="discovered-with-options"),
        pytest.param({"controller": {"private_ip": ["10.0.0.1"]}}, {}, "c-slurmctld", id="output-not-text"),
    ],
)
def test_an_address_from_discovery_or_outputs_gets_the_hosts_check(
    catalog: Catalog, outputs: dict[str, object], given: dict[str, str], shown: str
) -> None:
    """Issue 31 #8's follow-up: --discover's cloud answer and the stack's controller private_ip reach ssh as
    ansible_host too; they were written unchecked."""
    from aicluster.inventory import AddressError

    p = plan_of(catalog, {"name": "c", "pools": [pool()]})
    with pytest.raises(AddressError) as err:
        inventory(p, outputs, given, "pulumi stack output")
    assert str(err.value).startswith(f"{shown}: ansible_host ")
