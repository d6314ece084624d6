"""write_atomic never replaces what is not a regular file, and follows links to their targets."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from aicluster.files import WriteError, write_atomic
from tests.conftest import ROOT


def test_a_link_is_followed_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink()
    assert target.read_text() == "new"


def test_a_device_is_written_into_not_replaced() -> None:
    write_atomic(Path("/dev/null"), "x" * 10_000)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_device_is_a_clear_error_and_stays_a_device() -> None:
    with pytest.raises(WriteError, match=r"^--json /dev/full: cannot write: no space left on the device$"):
        write_atomic(Path("/dev/full"), "x", flag="--json")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_named_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_atomic(fifo, '{"ok": true}')
    reader.join(timeout=10)
    assert got == ['{"ok": true}']
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_regular_file_is_replaced_with_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b.json"
    write_atomic(out, "one", mode=0o600)
    assert out.read_text() == "one"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


# --- a write stopped by a signal leaves no temporary file (issue 31 #14) ---------------------------------------

# `python -m aicluster.cli ARGS`, whose os.fsync of a file in DIR (the temporary file beside the --json target) says
# "writing" on stderr and then waits: the real write, held at the moment its temporary file is complete on disk.
_HELD_WRITE = """
import os, runpy, sys, time
folder, sys.argv = sys.argv[1], ["aicluster", *sys.argv[2:]]
fsync = os.fsync
def held(fd):
    fsync(fd)
    if os.path.dirname(os.readlink(f"/proc/self/fd/{fd}")) == folder:
        sys.stderr.write("writing\\n")
        sys.stderr.flush()
        time.sleep(600)
os.fsync = held
runpy.run_module("aicluster.cli", run_name="__main__", alter_sys=True)
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to find the file being written")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("before", [None, '{"old": "complete"}\n'], ids=["new-target", "old-target"])
def test_a_preview_stopped_while_writing_json_leaves_no_temporary_file(
    tmp_path: Path, signum: signal.Signals, before: str | None
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "preview.json"
    if before is not None:
        target.write_text(before)
    proc = subprocess.Popen(
        [sys.executable, "-c", _HELD_WRITE, str(folder), "preview", "p5-small", "--json", str(target)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # until the write is held (warnings may come first)
            if line == "writing\n":
                break
        else:
            pytest.fail(f"the preview ended before writing (exit {proc.wait()})")
        temporary = [p.name for p in folder.iterdir() if p.name.startswith(".preview.json.")]
        assert temporary, "the write is held while its temporary file exists"
        proc.send_signal(signum)
        rest = proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == -signum, rest[-2000:]  # the signal still ends the process, as it would have
    assert sorted(p.name for p in folder.iterdir()) == ([] if before is None else ["preview.json"])
    if before is not None:
        assert target.read_text() == before


def test_a_signal_the_process_survives_stops_the_write_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    fsync = os.fsync

    def stopped(fd: int) -> None:
        fsync(fd)
        os.kill(os.getpid(), signal.SIGTERM)  # while the temporary file is complete and not yet in place

    try:
        monkeypatch.setattr(os, "fsync", stopped)
        with pytest.raises(WriteError, match=r"^--json .*out\.json: not written: stopped by SIGTERM$"):
            write_atomic(target, "new", flag="--json")
        monkeypatch.setattr(os, "fsync", fsync)
        assert seen == [signal.SIGTERM]  # delivered to the handler that was there before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
        assert target.read_text() == "old"
        write_atomic(target, "new")
        assert target.read_text() == "new"
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # the previous handler is back
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM, signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_name_too_long_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match=r": cannot write: file name too long$"):
        write_atomic(tmp_path / ("x" * 300), "x", flag="-o")
    assert not any(tmp_path.iterdir())
