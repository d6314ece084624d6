"""write_atomic never replaces what is not a regular file, and follows links to their targets."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from aicluster.files import WriteError, write_atomic


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
