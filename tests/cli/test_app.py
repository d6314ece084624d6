"""The console entry: a successful command leaves without interpreter teardown only after every output is
complete; errors exit as usual; `--timings` says where the time went."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden" / "previews" / "p5-small.json"


def _aicluster(
    *argv: str, cwd: Path = ROOT, timeout: int = 180, module: str = "aicluster"
) -> subprocess.CompletedProcess[bytes]:
    """`python -m aicluster` runs what the console script runs (aicluster.__main__:main)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", module, *argv],
        cwd=cwd,
        capture_output=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_a_preview_writes_its_whole_file_and_table_then_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "preview.json"
    proc = _aicluster("-C", str(ROOT), "-q", "--timings", "preview", "p5-small", "--json", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    assert out.read_bytes() == GOLDEN.read_bytes()  # the file is whole, as an in-process run writes it
    stdout = proc.stdout.decode()
    assert "policy pack aicluster@" in stdout  # the last lines reached the pipe before the exit
    assert stdout.rstrip().endswith(f"wrote {out}")
    timings = [line for line in proc.stderr.decode().splitlines() if line.startswith("timings: ")]
    assert len(timings) == 1
    for phase in ("startup and imports", "catalog", "plan", "program", "policies", "output", "main"):
        assert f"{phase} " in timings[0]


def test_a_preview_to_stdout_is_whole_json() -> None:
    proc = _aicluster("-C", str(ROOT), "-q", "preview", "p5-small", "--json", "-", module="aicluster.cli")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == GOLDEN.read_bytes()


def test_an_error_exits_2_the_usual_way(tmp_path: Path) -> None:
    proc = _aicluster("-C", str(ROOT), "preview", "no-such-stack", "--json", str(tmp_path / "x.json"))
    assert proc.returncode == 2
    assert b"error:" in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_atexit_handlers_run_before_the_fast_exit(tmp_path: Path) -> None:
    marker = tmp_path / "atexit-ran"
    script = textwrap.dedent(
        f"""
        import atexit, pathlib, sys
        import aicluster.cli
        atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text("yes"))
        sys.argv = ["aicluster", "-C", {str(ROOT)!r}, "stacks"]
        aicluster.cli.entry()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"p5-small" in proc.stdout
    assert marker.read_text() == "yes"


def test_timings_of_validate_name_its_phases() -> None:
    proc = _aicluster("-C", str(ROOT), "--timings", "validate", "p5-small")
    assert proc.returncode == 0, proc.stderr.decode()
    line = next(x for x in proc.stderr.decode().splitlines() if x.startswith("timings: "))
    names = [part.rsplit(" ", 2)[0] for part in line.removeprefix("timings: ").split(", ")]
    assert names[0] == "startup and imports"
    assert names[-1] == "main"
    assert {"catalog", "plan"} <= set(names)
    assert all(float(part.rsplit(" ", 2)[1]) >= 0 for part in line.removeprefix("timings: ").split(", "))


def test_the_console_entry_turns_the_cyclic_collector_off_and_importing_the_cli_does_not(tmp_path: Path) -> None:
    import gc

    import aicluster.cli  # noqa: F401  # as the tests and other programs import it

    assert gc.isenabled()
    script = textwrap.dedent(
        f"""
        import atexit, gc, sys
        import aicluster.__main__
        atexit.register(lambda: print("collector on:", gc.isenabled()))
        sys.argv = ["aicluster", "-C", {str(ROOT)!r}, "stacks"]
        aicluster.__main__.main()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"collector on: False" in proc.stdout


def test_tune_turns_the_cyclic_collector_back_on() -> None:
    """tune handles an Ansible event per task and host, each leaving reference cycles: it needs the collector
    that the console entry turns off."""
    import gc

    from aicluster.cli import main

    gc.disable()
    try:
        assert main(["-C", str(ROOT), "tune", "no-such-stack"]) == 2
        assert gc.isenabled()
        gc.disable()
        assert main(["-C", str(ROOT), "validate", "no-such-stack"]) == 2
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_preview_leaves_without_the_teardown_once_its_output_is_complete(tmp_path: Path) -> None:
    """The engine's kept thread for the mock monitor's calls must not keep a successful preview from the fast exit
    (a normal exit tears the SDKs' classes down: 0.25 s more for an Azure preview)."""
    out = tmp_path / "preview.json"
    script = textwrap.dedent(
        f"""
        import os, sys, threading
        import aicluster.cli

        class TornDown:
            def __del__(self, write=os.write):
                write(2, b"torn down")

        marker = TornDown()
        sys.argv = ["aicluster", "-C", {str(ROOT)!r}, "-q", "preview", "p5-small", "--json", {str(out)!r}]
        aicluster.cli.entry()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert out.read_bytes() == GOLDEN.read_bytes()
    assert b"torn down" not in proc.stderr
    # ...and an error still exits the usual way, with the teardown
    proc = subprocess.run(
        [sys.executable, "-c", script.replace('"p5-small"', '"no-such-stack"')],
        capture_output=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 2
    assert b"torn down" in proc.stderr
