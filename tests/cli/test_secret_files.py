"""Where `aicluster kubeconfig` and `aicluster acceptance` write a secret (issue 31 #10): the kubeconfig's token, the
acceptance manifest's OpenSSH private key. One rule for both (aicluster.files.check_secret_target): a new file or a
plain file the same command wrote for the same stack; another plain file only with --force; never a symbolic link
(even to its own file), a terminal, /dev/null, a pipe, a socket or a directory. Refused: exit 2, the path and the
reason named, the target untouched, and no secret in any output or message."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aicluster.cli import main
from tests.conftest import ROOT
from tests.helpers import run_in_process

TOKEN = "k8s-aws-v1.c2VjcmV0LXRva2VuLWZvci10ZXN0cw"
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: eks-p5
  cluster: {{server: https://EXAMPLE.gr7.us-east-1.eks.amazonaws.com}}
users:
- name: eks-p5
  user: {{token: {TOKEN}}}
"""
# Every OpenSSH private key: the PEM armour, and the base64 of "openssh-key-v1\0" its body starts with.
PRIVATE_KEY_MARKS = ("PRIVATE KEY", "b3BlbnNzaC1rZXktdjE")


@dataclass(frozen=True)
class Command:
    name: str
    secrets: tuple[str, ...]  # text that must never be shown

    def argv(self, stack: str, target: str, outputs: Path) -> list[str]:
        extra = ["--outputs", str(outputs)] if self.name == "kubeconfig" else []
        return [self.name, stack, *extra, "-o", target]

    def leaked(self, text: str) -> list[str]:
        return [s for s in self.secrets if s in text]


COMMANDS = [Command("kubeconfig", (TOKEN,)), Command("acceptance", PRIVATE_KEY_MARKS)]
OTHER = {"kubeconfig": "acceptance", "acceptance": "kubeconfig"}


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"kubernetes": {"service": "eks"}, "kubeconfig": KUBECONFIG}), encoding="utf-8")
    return path


def _written(command: Command, stack: str, target: Path, outputs: Path) -> Path:
    code, err = run_in_process(["-q", *command.argv(stack, str(target), outputs)])
    assert code == 0, err
    return target


# Each builds a hostile -o target under tmp_path and returns what to pass as -o.
Build = Callable[[Command, Path, Path], str]


def _foreign_file(command: Command, tmp: Path, outputs: Path) -> str:
    (tmp / "mine.yaml").write_text("apiVersion: v1\nkind: Config\n# the user's own\n", encoding="utf-8")
    return str(tmp / "mine.yaml")


def _empty_file(command: Command, tmp: Path, outputs: Path) -> str:
    (tmp / "empty.yaml").write_text("", encoding="utf-8")
    return str(tmp / "empty.yaml")


def _another_stacks_file(command: Command, tmp: Path, outputs: Path) -> str:
    return str(_written(command, "gke-a3mega", tmp / "gke.yaml", outputs))


def _the_other_commands_file(command: Command, tmp: Path, outputs: Path) -> str:
    return str(_written(Command(OTHER[command.name], ()), "eks-p5", tmp / "other.yaml", outputs))


def _link_to_its_own_file(command: Command, tmp: Path, outputs: Path) -> str:
    own = _written(command, "eks-p5", tmp / "own.yaml", outputs)
    (tmp / "link").symlink_to(own)
    return str(tmp / "link")


def _link_to_a_foreign_file(command: Command, tmp: Path, outputs: Path) -> str:
    (tmp / "link").symlink_to(_foreign_file(command, tmp, outputs))
    return str(tmp / "link")


def _dangling_link(command: Command, tmp: Path, outputs: Path) -> str:
    (tmp / "link").symlink_to(tmp / "elsewhere" / "nothing-yet.yaml")
    (tmp / "elsewhere").mkdir()
    return str(tmp / "link")


def _link_to_dev_null(command: Command, tmp: Path, outputs: Path) -> str:
    (tmp / "link").symlink_to("/dev/null")
    return str(tmp / "link")


def _dev_null(command: Command, tmp: Path, outputs: Path) -> str:
    return "/dev/null"


def _fifo(command: Command, tmp: Path, outputs: Path) -> str:
    os.mkfifo(tmp / "pipe")
    return str(tmp / "pipe")


def _directory(command: Command, tmp: Path, outputs: Path) -> str:
    (tmp / "dir").mkdir()
    return str(tmp / "dir")


def _directory_slash(command: Command, tmp: Path, outputs: Path) -> str:
    return str(tmp) + "/"


def _under_a_file(command: Command, tmp: Path, outputs: Path) -> str:
    return _foreign_file(command, tmp, outputs) + "/x.yaml"


def _socket(command: Command, tmp: Path, outputs: Path) -> str:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp / "sock"))
    SOCKETS.append(server)
    return str(tmp / "sock")


def _dash(command: Command, tmp: Path, outputs: Path) -> str:
    return "-"


def _nothing(command: Command, tmp: Path, outputs: Path) -> str:
    return ""


SOCKETS: list[socket.socket] = []
FOREIGN: list[Build] = [_foreign_file, _empty_file, _another_stacks_file, _the_other_commands_file]  # --force: fine
NEVER: list[Build] = [
    _link_to_its_own_file,
    _link_to_a_foreign_file,
    _dangling_link,
    _link_to_dev_null,
    _dev_null,
    _fifo,
    _directory,
    _directory_slash,
    _under_a_file,
    _socket,
    _dash,
    _nothing,
]


def _state(root: Path) -> dict[str, object]:
    """Every entry under `root` as lstat shows it: links by target, files by content, others by kind."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path)] = ("link", os.readlink(path))
        elif path.is_file():
            found[str(path)] = ("file", path.read_bytes(), path.stat().st_mode)
        else:
            found[str(path)] = ("other", path.lstat().st_mode)
    return found


@contextlib.contextmanager
def _reader(target: str) -> Iterator[list[bytes]]:
    """A reader on a named pipe (so a writer would not block): what reached it, after the block."""
    got: list[bytes] = []
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK) if Path(target).is_fifo() else None
    try:
        yield got
    finally:
        if fd is not None:
            with contextlib.suppress(BlockingIOError):
                got.append(os.read(fd, 1 << 20))
            os.close(fd)


def _refused(command: Command, build: Build, tmp_path: Path, outputs: Path, force: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = build(command, work, outputs)
    before = _state(work)
    null_before = os.stat("/dev/null")
    argv = command.argv("eks-p5", target, outputs) + (["--force"] if force else [])
    try:
        with _reader(target) as piped:
            code, err = run_in_process(argv)
    finally:
        while SOCKETS:
            SOCKETS.pop().close()
    assert code == 2, (target, err)
    assert err.startswith("error: -o "), err
    assert "Traceback" not in err
    assert not command.leaked(err), err
    assert not any(command.leaked(chunk.decode("utf-8", "replace")) for chunk in piped)
    assert b"".join(piped) == b""  # nothing reached the pipe
    assert _state(work) == before  # untouched: no file replaced, none made through a link
    assert os.stat("/dev/null").st_rdev == null_before.st_rdev


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
@pytest.mark.parametrize("build", FOREIGN + NEVER, ids=lambda b: b.__name__.strip("_").replace("_", "-"))
def test_a_secret_is_never_written_over_what_it_must_not_replace(
    command: Command, build: Build, tmp_path: Path, outputs: Path
) -> None:
    _refused(command, build, tmp_path, outputs, force=False)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
@pytest.mark.parametrize("build", NEVER, ids=lambda b: b.__name__.strip("_").replace("_", "-"))
def test_force_never_writes_a_secret_through_a_link_or_into_a_device(
    command: Command, build: Build, tmp_path: Path, outputs: Path
) -> None:
    _refused(command, build, tmp_path, outputs, force=True)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_its_own_file_is_replaced_and_a_foreign_one_only_with_force(
    command: Command, tmp_path: Path, outputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = _written(command, "eks-p5", tmp_path / "own.yaml", outputs)
    first = own.read_text(encoding="utf-8")
    assert main(["-q", *command.argv("eks-p5", str(own), outputs)]) == 0  # its own file: replaced
    assert own.stat().st_mode & 0o777 == 0o600
    if command.name == "acceptance":
        assert own.read_text(encoding="utf-8") != first  # a fresh key pair
    foreign = Path(_foreign_file(command, tmp_path, outputs))
    assert main(["-q", *command.argv("eks-p5", str(foreign), outputs), "--force"]) == 0
    assert "the user's own" not in foreign.read_text(encoding="utf-8")
    assert foreign.stat().st_mode & 0o777 == 0o600
    shown = capsys.readouterr()
    assert not command.leaked(shown.out + shown.err)


def test_the_message_says_what_is_wrong_and_what_to_do(tmp_path: Path, outputs: Path) -> None:
    acceptance = COMMANDS[1]
    work = tmp_path / "w"
    work.mkdir()
    cases = {
        _foreign_file: "exists and was not written by `aicluster acceptance eks-p5`; give another file, or --force",
        _link_to_its_own_file: "is a symbolic link",
        _fifo: "is a named pipe, not a plain file",
        _dev_null: "is a character device (a terminal, /dev/null), not a plain file",
        _socket: "is a socket, not a plain file",
    }
    for build, says in cases.items():
        sub = work / build.__name__.strip("_")
        sub.mkdir()
        target = build(acceptance, sub, outputs)
        code, err = run_in_process(acceptance.argv("eks-p5", target, outputs))
        while SOCKETS:
            SOCKETS.pop().close()
        assert code == 2
        assert err.startswith(f"error: -o {target}: "), err
        assert says in " ".join(err.split()), err


# ------------------------------------------------------------------------------------------------
# A terminal: the command runs in its own session with a pseudo-terminal as its controlling terminal and as its
# stdin, stdout and stderr, so /dev/stdout, /dev/stderr, /dev/tty and /proc/self/fd/1 all name that terminal
# ------------------------------------------------------------------------------------------------


def _on_a_terminal(argv: list[str], target: Callable[[str], str]) -> tuple[int, str]:
    """`aicluster ARGV -o target(tty)` on a terminal of its own: the exit code and everything the terminal showed."""
    master, slave = pty.openpty()
    try:
        tty = os.ttyname(slave)
        proc = subprocess.Popen(
            [sys.executable, "-m", "aicluster.cli", *argv, "-o", target(tty)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=ROOT,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # noqa: PLW1509 (the child's own session)
            env={**os.environ, "COLUMNS": "200"},
        )
    finally:
        os.close(slave)
    shown = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: the terminal's last writer closed it
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown.decode("utf-8", "replace"))  # the terminal's colours
    return proc.wait(timeout=120), text


TERMINALS: list[Callable[[str], str]] = [
    lambda tty: "/dev/stdout",
    lambda tty: "/dev/stderr",
    lambda tty: "/dev/tty",
    lambda tty: "/proc/self/fd/1",
    lambda tty: tty,
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
@pytest.mark.parametrize("target", TERMINALS, ids=["dev-stdout", "dev-stderr", "dev-tty", "proc-fd-1", "pts"])
def test_a_secret_never_reaches_a_terminal(
    command: Command, target: Callable[[str], str], tmp_path: Path, outputs: Path
) -> None:
    argv = command.argv("eks-p5", "unused", outputs)[:-2]  # -o comes from the terminal's name
    code, shown = _on_a_terminal(argv, target)
    assert code == 2, shown
    assert "error: -o " in shown, shown
    assert not command.leaked(shown), shown
    assert "Traceback" not in shown
