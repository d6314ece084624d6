"""`aicluster estimate collective`: the fixed interface of issue 16 (one JSON object on stdout), every GPU type of
the catalog on one node and on sixteen, `--json FILE`, and bad input (exit 2, one line, no traceback)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aicluster.catalog import Catalog
from aicluster.cli import main
from aicluster.cli.commands.estimate import parse_bytes
from aicluster.cli.console import out as cli_out
from aicluster.sizing.collective import gpu_instance_types
from tests.conftest import ROOT

KEYS = {"op", "instance_type", "nodes", "gpus", "bytes", "algorithm", "algbw_gb_s", "busbw_gb_s", "time_s"}
_RANGE = "give a whole number of bytes from 1 to 1 PiB (2^50) as a number and a unit, e.g. 8GiB"
BASE = ["estimate", "collective", "--instance-type", "p5.48xlarge", "--nodes", "16", "--op", "all_reduce"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = Path(sys.executable).with_name("aicluster")  # the console script, as users run it
    return subprocess.run([script, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False)


def test_the_fixed_interface_prints_one_json_object() -> None:
    done = run_cli(*BASE, "--bytes", "8GiB", "--json", "-")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # the whole of stdout is one object
    assert set(data) >= KEYS
    assert data["op"] == "all_reduce"
    assert data["instance_type"] == "p5.48xlarge"
    assert data["provider"] == "aws"
    assert (data["nodes"], data["gpus"], data["bytes"]) == (16, 128, 8 * 2**30)
    assert data["algorithm"] == "ring"
    assert data["algbw_gb_s"] == pytest.approx(data["bytes"] / data["time_s"] / 1e9)
    assert data["busbw_gb_s"] == pytest.approx(data["algbw_gb_s"] * 2 * 127 / 128)
    assert 250 < data["busbw_gb_s"] < 400  # 32 x 100 Gb/s EFA = 400 GB/s line rate


def test_an_unknown_type_exits_2_with_one_line_and_no_traceback() -> None:
    done = run_cli(*BASE[:3], "p5.48xlarg", *BASE[4:], "--bytes", "8GiB", "--json", "-")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "did you mean p5.48xlarge (aws)" in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("nodes", ["1", "16"])
def test_every_gpu_type_of_every_provider_works(
    catalog: Catalog, capsys: pytest.CaptureFixture[str], nodes: str
) -> None:
    covered = gpu_instance_types(catalog)
    assert {p for p, _ in covered} == {"aws", "azure", "gcp", "onprem"}
    for provider, name in covered:
        argv = ["estimate", "collective", "--instance-type", name, "--nodes", nodes, "--op", "all_reduce"]
        assert main([*argv, "--bytes", "1GiB", "--provider", provider, "--json", "-"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert (data["provider"], data["instance_type"], data["nodes"]) == (provider, name, int(nodes))
        assert data["busbw_gb_s"] > 0
        assert data["bottleneck"] == ("nvlink" if nodes == "1" else data["bottleneck"])


def test_json_file_is_written_and_a_table_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_out, "width", 200)
    target = tmp_path / "sub" / "estimate.json"
    assert main([*BASE, "--bytes", "512MiB", "--json", str(target)]) == 2  # a missing directory, without --parents
    assert not target.parent.exists()
    capsys.readouterr()
    assert main([*BASE, "--bytes", "512MiB", "--json", str(target), "--parents"]) == 0
    printed = capsys.readouterr().out
    assert "busbw" in printed
    assert f"wrote {target}" in printed
    data = json.loads(target.read_text())
    assert data["bytes"] == 512 * 2**20
    assert not list(target.parent.glob(".*"))  # no temporary file left behind


def test_without_json_a_table_is_printed(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_out, "width", 200)
    assert main([*BASE[:5], "2", "--op", "all_gather", "--bytes", "16GiB", "--instance-type", "a4-highgpu-8g"]) == 0
    printed = capsys.readouterr().out
    assert "a4-highgpu-8g" in printed
    assert "ring" in printed
    assert "GB/s" in printed


def test_a_directory_as_json_target_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, "--bytes", "1GiB", "--json", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "is a directory" in captured.err
    assert captured.out == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # one rule and one message form for every bad size: the value, the range, an example
        pytest.param(
            ["--bytes", "8XB"],
            f"argument --bytes: '8XB': {_RANGE}",
            id="bytes-unit",
        ),
        pytest.param(
            ["--bytes", "0"],
            f"argument --bytes: '0': {_RANGE}",
            id="bytes-zero",
        ),
        pytest.param(
            ["--bytes", "-1"],
            f"argument --bytes: '-1': {_RANGE}",
            id="bytes-negative",
        ),
        pytest.param(
            ["--bytes", "2PiB"],
            f"argument --bytes: '2PiB': {_RANGE}",
            id="bytes-2pib",
        ),
        pytest.param(
            ["--bytes", "1.5B"],
            f"argument --bytes: '1.5B': {_RANGE}",
            id="bytes-fraction",
        ),
        pytest.param(
            ["--bytes", "2000TiB"],
            f"argument --bytes: '2000TiB': {_RANGE}",
            id="bytes-too-large",
        ),
        pytest.param(
            ["--bytes", "8 GiB"],
            f"argument --bytes: '8 GiB': {_RANGE}",
            id="bytes-space",
        ),
        pytest.param(
            ["--bytes", "8gib"],
            f"argument --bytes: '8gib': {_RANGE}",
            id="bytes-case",
        ),
        pytest.param(
            ["--bytes", "1GiB", "--nodes", "many"],
            "'many': give a whole number of nodes from 1 to 100,000",
            id="nodes-text",
        ),
        pytest.param(
            ["--bytes", "1GiB", "--nodes", "0"], "'0': give a whole number of nodes from 1 to 100,000", id="nodes"
        ),
        pytest.param(["--bytes", "1GiB", "--op", "allreduce"], "argument --op: invalid choice", id="op"),
    ],
)
def test_bad_values_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as info:
        main([*BASE, *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1
    assert message in errors[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--instance-type", "trn2.48xlarge"], "(NeuronLink) are not modelled", id="trainium"),
        # the type's real range, both ends
        pytest.param(["--ranks-per-node", "9"], "has 8 GPUs per node: give 1 to 8", id="ranks-per-node"),
        pytest.param(["--ranks-per-node", "0"], "has 8 GPUs per node: give 1 to 8", id="ranks-per-node-0"),
        pytest.param(["--provider", "gcp"], "not a gcp type of the catalog", id="provider"),
        pytest.param(["--provider", "azure"], "not an azure type of the catalog (it is an aws type)", id="article"),
        pytest.param(
            ["--instance-type", "Standard_ND96isr_H100_v5", "--nodes", "1000"],
            "nodes 1000: one Standard_ND96isr_H100_v5 InfiniBand domain is one scale set of at most 100 VMs",
            id="azure-ib-domain",
        ),
    ],
)
def test_model_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main([*BASE, "--bytes", "1GiB", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert message in lines[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1048576", 2**20),
        ("8GiB", 8 * 2**30),
        ("1e9", 10**9),
        ("70e9", 70 * 10**9),
        ("1.5e3KiB", 1500 * 1024),
        ("512MiB", 512 * 2**20),
        ("4KiB", 4096),
        ("1TiB", 2**40),
        ("1.5GB", 1_500_000_000),
        ("2MB", 2_000_000),
        ("16B", 16),
    ],
)
def test_byte_sizes(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


def test_a_bad_byte_size_is_an_argparse_type_error() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"'-1': give a whole number of bytes from 1 to 1 PiB"):
        parse_bytes("-1")


def test_the_table_fits_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    """Sources go one per line: the widest estimate (SHARP on 1,000 on-prem nodes, nine sources) fits 100 columns."""
    argv = ["estimate", "collective", "--instance-type", "dgx-h100", "--nodes", "1000", "--op", "all_reduce"]
    assert main([*argv, "--bytes", "8GiB"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("note:")]
    assert any("coll-hpcx-sharp-plugin" in line for line in table)
    assert max(len(line) for line in table) <= 100
