"""The commands the CLI suggests running next are what the user typed: the stack as given (a path stays the path),
-C, and the flags that still apply, quoted for a shell; pasted from another directory, they run (issue 30, #7)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster import tune
from aicluster.cli import main
from aicluster.cli.console import out as cli_out
from aicluster.preview import plan_stack
from aicluster.schedulers.kubernetes import render
from aicluster.stackfile import find_project, read_stack
from tests.conftest import ROOT

EKS = ROOT / "stacks" / "Pulumi.eks-p5.yaml"


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_out, "width", 400)


def _suggested(text: str, command: str) -> list[str]:
    """The words of each `aicluster ... COMMAND ...` the text suggests (between backticks, or after `: `)."""
    found = re.findall(r"`(aicluster [^`]*)`|: (aicluster .*)$", text, flags=re.M)
    lines = [a or b for a, b in found]
    return [shlex.split(x) for x in lines if command in shlex.split(x)]


def _project_copy(tmp_path: Path, name: str) -> Path:
    """A copy of the example project under a directory whose name a shell would split."""
    project = tmp_path / name
    (project / "stacks").mkdir(parents=True)
    for file in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / file, project / file)
    for stack in ("eks-p5", "p5-small"):
        shutil.copy(ROOT / "stacks" / f"Pulumi.{stack}.yaml", project / "stacks" / f"Pulumi.{stack}.yaml")
    return project


@pytest.mark.parametrize("given", ["path", "name-with-C"])
def test_tune_on_eks_suggests_an_acceptance_command_that_runs_from_here(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project_copy(tmp_path, "my project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    stack_file = str(project / "stacks" / "Pulumi.eks-p5.yaml")
    argv = ["tune", stack_file] if given == "path" else ["-C", str(project), "tune", "eks-p5"]
    assert main(["-q", *argv, "--check", "--hosts", "hosts.yml"]) == 0
    text = capsys.readouterr().out
    (acceptance,) = _suggested(text, "acceptance")
    (kubeconfig,) = _suggested(text, "kubeconfig")
    if given == "path":
        assert acceptance[:3] == ["aicluster", "acceptance", stack_file]
        assert kubeconfig[:3] == ["aicluster", "kubeconfig", stack_file]
    else:
        assert acceptance[:5] == ["aicluster", "-C", str(project), "acceptance", "eks-p5"]
        assert kubeconfig[:5] == ["aicluster", "-C", str(project), "kubeconfig", "eks-p5"]
    assert "--check" not in acceptance + kubeconfig
    assert "--hosts" not in acceptance + kubeconfig
    # pasted here, the suggestion runs, and writes the file that the kubectl step it names applies
    assert main(["-q", *acceptance[1:]]) == 0
    applied = re.search(r"kubectl apply -f (\S+)`", text)
    assert applied is not None
    assert (elsewhere / shlex.split(applied.group(1))[0]).is_file()


def test_kubectl_after_kubeconfig_uses_the_kubeconfig_it_wrote(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-q", "tune", "eks-p5"]) == 0
    text = capsys.readouterr().out
    (kubeconfig,) = _suggested(text, "kubeconfig")
    written = kubeconfig[kubeconfig.index("-o") + 1]
    assert f"KUBECONFIG={shlex.quote(written)} kubectl apply" in text


def test_acceptance_of_a_slurm_stack_suggests_tune_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project_copy(tmp_path, "my project")
    monkeypatch.chdir(tmp_path)
    stack_file = str(project / "stacks" / "Pulumi.p5-small.yaml")
    assert main(["acceptance", stack_file, "-o", "x.yaml"]) == 2
    assert f"`aicluster tune {shlex.quote(stack_file)}`" in capsys.readouterr().err


def test_inventory_of_eks_suggests_kubeconfig_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["-C", str(ROOT), "inventory", "eks-p5", "--hosts", "h.yml"]) == 2
    err = capsys.readouterr().err
    assert f"`aicluster -C {shlex.quote(str(ROOT))} kubeconfig eks-p5 -o kubeconfig`" in " ".join(err.split())


# ------------------------------------------------------------------------------------------------ retry, apply


class _Target:
    def __init__(self, hosts: list[str]) -> None:
        self.hosts = hosts
        self.tags = ["base"]


def _fake_ansible(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failed: list[str]) -> None:
    hosts = ["h100-000", "h100-001"]

    def targets(*args: Any, **kwargs: Any) -> _Target:
        return _Target(hosts)

    def run(*args: Any, **kwargs: Any) -> tune.TuneResult:
        scores = {h: tune.HostScore(ok=1, reached=1, failed=int(h in failed)) for h in hosts}
        status = "failed" if failed else "successful"
        return tune.TuneResult(status, int(bool(failed)), scores, tmp_path / "artifacts", 1, 0.1, failed)

    monkeypatch.setattr(tune, "targets", targets)
    monkeypatch.setattr(tune, "run", run)
    monkeypatch.setenv("ANSIBLE_TRANSPORT", "local")


def _slurm_args(tmp_path: Path) -> tuple[str, list[str]]:
    project = _project_copy(tmp_path, "my project")
    hosts = tmp_path / "node addresses.yml"
    hosts.write_text(yaml.safe_dump({"h100-000": "10.0.0.10", "h100-001": "10.0.0.11"}), encoding="utf-8")
    stack_file = str(project / "stacks" / "Pulumi.p5-small.yaml")
    # in the order tune declares them, which is the order a suggestion writes them in
    flags = ["--tags", "base", "--hosts", str(hosts), "--out", str(tmp_path / "inv"), "--extra-vars", "a=1"]
    return stack_file, flags


def test_the_retry_keeps_the_flags_given_and_replaces_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_ansible(monkeypatch, tmp_path, failed=["h100-001"])
    stack_file, flags = _slurm_args(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["-q", "tune", stack_file, *flags, "--limit", "slurm_compute", "--check"]) == 1
    text = capsys.readouterr().out
    (retry,) = _suggested(text, "tune")
    assert retry[:3] == ["aicluster", "tune", stack_file]
    assert retry[retry.index("--limit") + 1] == "h100-001"
    assert retry.count("--limit") == 1
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        assert retry[retry.index(flag) + 1] == value
    assert "--check" in retry  # a retry of a check run checks too


def test_a_clean_check_run_suggests_the_real_run_with_its_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_ansible(monkeypatch, tmp_path, failed=[])
    stack_file, flags = _slurm_args(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["-q", "tune", stack_file, *flags, "--check"]) == 0
    text = capsys.readouterr().out
    (real,) = _suggested(text, "tune")
    assert real == ["aicluster", "tune", stack_file, *flags]


# ------------------------------------------------------------------------------------------------ GPU Operator


@pytest.mark.parametrize("stack", ["eks-p5", "aks-nd-h100"])
def test_what_tune_says_the_gpu_operator_installs_is_what_its_values_enable(
    stack: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_stack(read_stack(find_project(ROOT), stack))
    assert plan.kubernetes is not None
    (addon,) = [a for a in plan.kubernetes.addons if a.id == "gpu-operator"]
    values = render.helm_values(plan, addon)
    assert main(["-q", "tune", stack]) == 0
    (said,) = [ln for ln in capsys.readouterr().out.splitlines() if "GPU Operator" in ln]
    installs = said.split("installs", 1)[1].split(";")[0] if "installs" in said else ""
    for key, words in (("driver", "driver"), ("toolkit", "container toolkit")):
        enabled = values.get(key, {}).get("enabled", True)  # the chart's default: on
        assert (words in installs) == enabled, (key, values.get(key), said)


def test_the_discovery_refusal_writes_the_command_with_what_the_user_gave() -> None:
    """The clouds' plugins find no VMs of a Kubernetes stack: the refusal's kubeconfig command is built by the same
    suggest as every other, not with a STACK placeholder, where the CLI has the arguments."""
    from aicluster import discover

    plan = plan_stack(read_stack(find_project(ROOT), "eks-p5"))

    def given(command: str, *words: str) -> str:
        return shlex.join(["aicluster", command, "stacks/Pulumi.eks-p5.yaml", *words])

    with pytest.raises(discover.DiscoveryError) as err:
        discover.plugin_configs(plan, {}, given)
    assert "`aicluster kubeconfig stacks/Pulumi.eks-p5.yaml -o kubeconfig`" in str(err.value)
    with pytest.raises(discover.DiscoveryError) as err:
        discover.plugin_configs(plan, {})  # no arguments at hand: the placeholder
    assert "`aicluster kubeconfig STACK -o kubeconfig`" in str(err.value)
