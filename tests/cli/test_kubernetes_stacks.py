"""The CLI on Kubernetes stacks: plan output, kubeconfig (a secret, written 0600 and never shown), tune (no Ansible),
the acceptance JobSet, and inventory/discover refusing with the reason."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster import discover, tune
from aicluster.cli import main
from aicluster.cli.console import out as cli_out
from aicluster.preview import plan_stack
from aicluster.schedulers.kubernetes import describe, render
from aicluster.stackfile import find_project, read_stack
from tests.conftest import KUBERNETES_STACKS, ROOT

TOKEN = "k8s-aws-v1.c2VjcmV0LXRva2VuLWZvci10ZXN0cw"  # what must never reach the terminal
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: eks-p5
  cluster:
    server: https://EXAMPLE.gr7.us-east-1.eks.amazonaws.com
    certificate-authority-data: LS0tLS1CRUdJTg==
contexts:
- name: eks-p5
  context: {{cluster: eks-p5, user: eks-p5}}
current-context: eks-p5
users:
- name: eks-p5
  user: {{token: {TOKEN}}}
"""


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test worker has no terminal: rich would wrap the tables at 80 columns and split the rows checked here."""
    monkeypatch.setattr(cli_out, "width", 250)


def _plan(stack: str) -> Any:
    return plan_stack(read_stack(find_project(ROOT), stack))


def _outputs(tmp_path: Path, kubeconfig: object = KUBECONFIG) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"kubernetes": {"service": "eks"}, "kubeconfig": kubeconfig}), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------
# plan
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_plan_shows_control_plane_node_groups_addons_and_kueue(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    k = _plan(stack).kubernetes
    assert main(["-q", "plan", stack]) == 0
    text = capsys.readouterr().out
    assert f"Kubernetes control plane ({k.cluster_name})" in text
    for value in (k.service_name, k.version, k.support, k.endpoint, k.region, k.system_instance_type):
        assert value in text
    assert f"${k.control_plane_usd_per_month:,.2f}" in text
    groups = text.split("Node groups", 1)[1].split("Add-ons", 1)[0].splitlines()
    for g in k.node_groups:
        row = next(line for line in groups if f" {g.name} " in line and f" {g.pool} " in line)
        assert f"{g.nodes:,}" in row
        for t in g.taints:
            assert f"{t.key}={t.value}:{t.effect}" in row
        for name, amount in g.resources.items():
            assert f"{name}: {amount}" in row
    addons = text.split("Add-ons", 1)[1].splitlines()
    for a in k.addons:
        row = next(line for line in addons if f" {a.name} " in line)
        assert a.version in row
        assert a.chart in row
    assert f"ClusterQueue {k.cluster_queue}, LocalQueue {k.namespace}/{k.local_queue}" in text
    for t in k.topologies:
        assert f"kueue topology {t.name}: {' > '.join(t.levels)}" in text
    # node groups boot the service's image: the Slurm path's image-pinning advice does not apply
    assert f"node groups boot {k.node_image}" in text
    assert "is not pinned" not in text
    assert "is an image family" not in text


def test_plan_pools_table_has_the_control_plane_row_that_the_total_counts(capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan("eks-p5")
    assert main(["-q", "plan", "eks-p5"]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("│ kubernetes "))
    assert "eks control plane + 2 x m7i.2xlarge" in row
    assert f"${plan.kubernetes.cost_usd_per_month:,.2f}" in row


def test_slurm_plan_has_no_kubernetes_section_and_keeps_its_image_note(capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan("p5-small")
    assert plan.kubernetes is None
    assert main(["-q", "plan", "p5-small"]) == 0
    text = capsys.readouterr().out
    assert "Kubernetes control plane" not in text
    assert "kueue" not in text
    unpinned = [p.name for p in plan.pools if p.aws is not None and not p.aws.image_pinned]
    for name in unpinned:
        assert f"{name}: image " in text
        assert "is not pinned" in text


# ------------------------------------------------------------------------------------------------
# kubeconfig
# ------------------------------------------------------------------------------------------------


def test_kubeconfig_is_written_0600_and_never_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "kube" / "config"
    assert main(["kubeconfig", "eks-p5", "--outputs", str(_outputs(tmp_path)), "-o", str(target), "--parents"]) == 0
    shown = capsys.readouterr()
    assert TOKEN not in shown.out + shown.err
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    doc = yaml.safe_load(target.read_text(encoding="utf-8"))
    assert doc["users"][0]["user"]["token"] == TOKEN
    assert doc["current-context"] == "eks-p5"
    # its own file is replaced on the next run
    assert main(["kubeconfig", "eks-p5", "--outputs", str(_outputs(tmp_path)), "-o", str(target)]) == 0
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_kubeconfig_refuses_a_file_it_did_not_write_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "config"
    mine.write_text("apiVersion: v1\nkind: Config\n# the user's own\n", encoding="utf-8")
    argv = ["kubeconfig", "eks-p5", "--outputs", str(_outputs(tmp_path)), "-o", str(mine)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "was not written by `aicluster kubeconfig eks-p5`" in err
    assert "--force" in err
    assert "the user's own" in mine.read_text(encoding="utf-8")
    assert main([*argv, "--force"]) == 0
    assert TOKEN in mine.read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(mine).st_mode) == 0o600


def test_kubeconfig_refuses_another_stacks_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "config"
    outputs = str(_outputs(tmp_path))
    assert main(["kubeconfig", "eks-p5", "--outputs", outputs, "-o", str(target)]) == 0
    assert main(["kubeconfig", "gke-a3mega", "--outputs", outputs, "-o", str(target)]) == 2
    assert "was not written by `aicluster kubeconfig gke-a3mega`" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "says"),
    [
        pytest.param("[secret]", "masked", id="masked"),
        pytest.param("<computed>", "not known before `pulumi up`", id="computed"),
        pytest.param(None, "no `kubeconfig` output", id="absent"),
        pytest.param(f"token: {TOKEN}\n", "not a kubeconfig", id="not-a-kubeconfig"),
    ],
)
def test_kubeconfig_bad_output_is_refused_without_quoting_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object, says: str
) -> None:
    target = tmp_path / "config"
    assert main(["kubeconfig", "eks-p5", "--outputs", str(_outputs(tmp_path, value)), "-o", str(target)]) == 2
    shown = capsys.readouterr()
    assert says in shown.err
    assert TOKEN not in shown.out + shown.err
    assert not target.exists()


def test_kubeconfig_refuses_stdout_and_non_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = str(_outputs(tmp_path))
    assert main(["kubeconfig", "eks-p5", "--outputs", outputs, "-o", "-"]) == 2
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["kubeconfig", "eks-p5", "--outputs", outputs, "-o", str(fifo), "--force"]) == 2
    shown = capsys.readouterr()
    assert "only written to a file" in shown.err
    assert TOKEN not in shown.out + shown.err


def test_kubeconfig_of_a_slurm_stack_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "config"
    assert main(["kubeconfig", "p5-small", "--outputs", str(_outputs(tmp_path)), "-o", str(target)]) == 2
    assert "a Slurm stack (scheduler.kind: slurm) has no Kubernetes control plane" in capsys.readouterr().err
    assert not target.exists()


def _fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stdout: str, rc: int = 0) -> Path:
    """A `pulumi` on PATH that records its argv and prints `stdout` (the deployed stack's outputs)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    argv_file = tmp_path / "argv.json"
    (tmp_path / "stdout.txt").write_text(stdout, encoding="utf-8")
    script = bindir / "pulumi"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"json.dump(sys.argv[1:], open({str(argv_file)!r}, 'w'))\n"
        f"sys.stdout.write(open({str(tmp_path / 'stdout.txt')!r}).read())\n"
        f"sys.stderr.write('error: no stack named eks-p5\\n' if {rc} else '')\n"
        f"sys.exit({rc})\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return argv_file


def test_kubeconfig_reads_the_secret_output_through_the_pulumi_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv_file = _fake_pulumi(tmp_path, monkeypatch, json.dumps({"kubeconfig": KUBECONFIG}))
    target = tmp_path / "config"
    assert main(["kubeconfig", "eks-p5", "-o", str(target)]) == 0
    assert json.loads(argv_file.read_text()) == ["stack", "output", "--json", "--show-secrets", "--stack", "eks-p5"]
    shown = capsys.readouterr()
    assert TOKEN not in shown.out + shown.err
    assert TOKEN in target.read_text(encoding="utf-8")


def test_kubeconfig_says_why_when_the_pulumi_cli_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_pulumi(tmp_path, monkeypatch, "", rc=255)
    target = tmp_path / "config"
    assert main(["kubeconfig", "eks-p5", "-o", str(target)]) == 1
    assert "pulumi stack output failed: error: no stack named eks-p5" in capsys.readouterr().err
    assert not target.exists()


# ------------------------------------------------------------------------------------------------
# tune, acceptance
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_tune_on_kubernetes_runs_no_ansible_and_points_to_the_acceptance_jobset(
    stack: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_ansible(*args: object, **kwargs: object) -> None:
        raise AssertionError("tune ran Ansible on a Kubernetes stack")

    monkeypatch.setattr(tune, "run", no_ansible)
    monkeypatch.setattr(tune, "targets", no_ansible)
    work = ROOT / ".work" / stack / "inventory"
    existed = work.exists()
    k = _plan(stack).kubernetes
    assert main(["-q", "tune", stack]) == 0
    text = capsys.readouterr().out
    assert "tune runs no Ansible here" in text
    assert f"aicluster acceptance {stack}" in text
    assert f"aicluster kubeconfig {stack}" in text
    owners = [a for a in k.addons if a.id in describe.NODE_ADDONS]
    for a in owners:
        assert f"{a.name} {a.version}" in text
    if k.service == "gke":
        assert "GKE installs the accelerator drivers" in text
    else:
        assert owners, "EKS and AKS nodes get their drivers from the GPU Operator"
    assert work.exists() == existed  # no inventory written


def test_acceptance_of_a_slurm_stack_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["acceptance", "p5-small"]) == 2
    assert "aicluster tune p5-small" in capsys.readouterr().err


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_acceptance_writes_the_secret_and_the_jobset_to_a_0600_file(
    stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key, load_ssh_public_key

    plan = _plan(stack)
    target = tmp_path / "nccl.yaml"
    assert main(["-q", "acceptance", stack, "-o", str(target)]) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    text = target.read_text(encoding="utf-8")
    assert "&id" not in text
    assert "*id" not in text
    secret, *domains, jobset = yaml.safe_load_all(text)
    assert jobset == render.acceptance_jobset(plan)
    assert domains == render.acceptance_compute_domains(plan)  # rack-scale stacks: one per NVLink domain tested
    assert jobset["metadata"]["namespace"] == secret["metadata"]["namespace"] == plan.kubernetes.namespace
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == plan.kubernetes.local_queue
    # the Secret the pods mount is the one written, and its keys are a working ed25519 pair
    volumes = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "ssh", "secret": {"secretName": secret["metadata"]["name"], "defaultMode": 0o600}} in volumes
    keys = secret["stringData"]
    private = load_ssh_private_key(keys["id_ed25519"].encode(), password=None)
    public = load_ssh_public_key(keys["id_ed25519.pub"].encode())
    assert isinstance(private, Ed25519PrivateKey)
    assert isinstance(public, Ed25519PublicKey)
    assert private.public_key() == public
    assert keys["authorized_keys"] == keys["id_ed25519.pub"]
    shown = capsys.readouterr()
    for line in keys["id_ed25519"].splitlines()[1:-1]:  # no line of the private key reaches the terminal
        assert line not in shown.out + shown.err
    assert "kubectl apply -f" in shown.out or shown.out == ""


def test_acceptance_makes_a_fresh_key_pair_each_run(tmp_path: Path) -> None:
    keys = []
    for i in range(2):
        target = tmp_path / f"nccl-{i}.yaml"
        assert main(["-q", "acceptance", "eks-p5", "-o", str(target)]) == 0
        secret, _ = yaml.safe_load_all(target.read_text(encoding="utf-8"))
        keys.append(secret["stringData"]["id_ed25519"])
    assert keys[0] != keys[1]


@pytest.mark.parametrize("output", ["-", ""])
def test_acceptance_refuses_stdout(output: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["acceptance", "eks-p5", "-o", output]) == 2
    captured = capsys.readouterr()
    assert "only written to a file" in captured.err
    assert "PRIVATE KEY" not in captured.out + captured.err


def test_acceptance_keys_stay_out_of_the_plan_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "nccl.yaml"
    assert main(["-q", "acceptance", "eks-p5", "-o", str(target)]) == 0
    secret, _ = yaml.safe_load_all(target.read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["plan", "eks-p5", "--json", "-"]) == 0
    out = capsys.readouterr().out
    assert secret["stringData"]["id_ed25519.pub"].split()[1] not in out
    assert "PRIVATE KEY" not in out


# ------------------------------------------------------------------------------------------------
# inventory, discover
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_inventory_of_a_kubernetes_stack_is_refused(
    stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "inventory"
    assert main(["inventory", stack, "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert "scheduler.kind: kubernetes" in err
    assert "no Ansible inventory" in err
    assert "kubectl get nodes" in err
    assert not target.exists()


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_discover_refuses_a_kubernetes_stack(stack: str) -> None:
    with pytest.raises(discover.DiscoveryError, match="Kubernetes nodes"):
        discover.plugin_configs(_plan(stack), {})


def test_the_inventory_function_refuses_a_kubernetes_plan() -> None:
    from aicluster import inventory

    with pytest.raises(inventory.NoInventoryError, match="no Ansible inventory"):
        inventory.inventory(_plan("eks-p5"), {}, {}, "test")


def test_kubeconfig_refuses_the_outputs_of_another_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A new user's trial: the eks-p5 outputs given for aks-nd-h100 were written under the aks header."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"cluster": "eks-p5", "kubeconfig": KUBECONFIG}), encoding="utf-8")
    target = tmp_path / "config"
    assert main(["kubeconfig", "aks-nd-h100", "--outputs", str(path), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert "the outputs of cluster 'eks-p5', not of aks-nd" in err
    assert TOKEN not in err
    assert not target.exists()


def test_tune_says_which_ansible_options_it_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    """A new user's trial: `tune gke-a3mega --check --tags acceptance` exited 0 without a word about the options."""
    assert main(["tune", "gke-a3mega", "--check", "--tags", "acceptance"]) == 0
    err = capsys.readouterr().err
    assert "--tags, --check apply to the Ansible run" in err
    assert "ignored" in err
