"""Writing files the CLI produces: atomically (temp file in the same directory + rename).

A symbolic link is followed: its target is replaced and the link stays. What is not a regular file (a
device such as /dev/null, a named pipe, a socket) is written into as it is, never replaced by a file.
A failed write names the path the user gave and the cause in words, never the temporary file, and
leaves nothing behind: no temporary file and no directory it created for the write. That holds for a write
stopped by SIGTERM, SIGINT or SIGHUP too (a CI job cancelled, Ctrl-C, a closed terminal): while the temporary
file exists, those signals raise inside the write, which cleans up; then the signal is delivered again to the
handler that was there before (by default it ends the process, as it would have).

A secret (a kubeconfig, a manifest holding a private key) goes only to a plain file: `check_secret_target` refuses
anything else before the secret is made, and `write_atomic(..., secret=True)` never follows a link nor writes into
a device. `unsafe_permissions` says when a file aicluster trusts could have been changed by someone else.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any


class WriteError(Exception):
    """A file could not be written: the message names the user's path and the cause in words."""


class DirectoryBusy(Exception):
    """Another process holds the lock of a directory (`lock_directory`); `pid` is its process id when known."""

    def __init__(self, directory: Path, pid: int | None) -> None:
        super().__init__(f"{directory} is locked by process {pid}" if pid else f"{directory} is locked")
        self.directory = directory
        self.pid = pid


@contextlib.contextmanager
def lock_directory(directory: Path, name: str, *, label: str | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `directory` (which must exist) while the block writes into it: fcntl.flock on
    the file `name` in it, made 0600 and never followed if it is a link, holding the holder's pid. Never waits:
    raises DirectoryBusy (with the holder's pid) when another process holds it, WriteError (naming `label`,
    else the directory) when the lock file cannot be opened. The file stays (empty) after: removing it would let
    a run that opened it just before lock a file no later run looks at."""
    path = directory / name
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        shown = label or str(directory)
        why = "is a symbolic link" if exc.errno == errno.ELOOP else _cause(exc, path)
        raise WriteError(f"{shown}: cannot take the lock {name}: {why}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DirectoryBusy(directory, _holder(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # no stale pid for the next run to name
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> int | None:
    """The pid a lock file names (None while its holder has not written it yet)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _cause(exc: OSError, path: Path) -> str:
    """The cause of a failed write in words, about `path` (never the temporary file)."""
    parent = path.parent
    code = exc.errno
    if code == errno.ENAMETOOLONG:
        return "file name too long"
    if code == errno.EISDIR or path.is_dir():
        return "is a directory; give a file name"
    if code == errno.ENOTDIR:
        blocker = next((p for p in [parent, *parent.parents] if p.exists() and not p.is_dir()), parent)
        return f"{blocker} is a file, not a directory"
    if code == errno.ENOENT:
        if parent.is_dir():
            return f"the directory {parent} does not take new files"
        return f"the directory {parent} does not exist"
    if code in (errno.EACCES, errno.EPERM):
        return f"permission denied (cannot write in {parent})"
    if code == errno.EROFS:
        return f"read-only file system ({parent})"
    if code == errno.ENOSPC:
        return "no space left on the device"
    if code == errno.EDQUOT:
        return "disk quota exceeded"
    return (exc.strerror or type(exc).__name__).lower()


# The signals that end a command from outside; each stops a write cleanly (see the module doc).
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


class _Stopped(BaseException):
    """A stop signal arrived while a temporary file existed (BaseException: no `except Exception` swallows it)."""


class _SignalGuard:
    """Stop signals during a write: recorded always, raised as _Stopped only while `armed` (once a temporary
    file exists and is known, never while it is being created or removed, so that no signal can leave it behind)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.armed = False

    def handler(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        if self.armed:
            self.armed = False
            raise _Stopped

    def arm(self) -> None:
        """Raise from now on, and at once for a signal that came while disarmed."""
        self.armed = True
        if self.signum is not None:
            self.armed = False
            raise _Stopped


@contextlib.contextmanager
def _signals_stop_the_write() -> Iterator[_SignalGuard]:
    """Install the guard's handler for the stop signals the process does not ignore, and restore the previous
    handlers after; then deliver a signal that came meanwhile to them. Only the main thread receives signals in
    Python, so elsewhere the guard is never called."""
    guard = _SignalGuard()
    previous: dict[int, Callable[[int, FrameType | None], Any] | int] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _STOP_SIGNALS:
            handler = signal.getsignal(signum)
            if handler is None or handler == signal.SIG_IGN:  # set outside Python, or ignored: left alone
                continue
            previous[signum] = handler
            signal.signal(signum, guard.handler)
    try:
        yield guard
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if guard.signum is not None:
        signal.raise_signal(guard.signum)  # the previous handler: by default the process ends here


def _label(path: Path, flag: str | None) -> str:
    return f"{flag} {path}" if flag else str(path)


def check_target(path: str | Path, flag: str | None = None, *, parents: bool = True) -> Path:
    """Refuse an output path that cannot be a file before any work is done: an existing directory, or a
    path under a file; with `parents` False (a path the user typed, without --parents), a directory that does not
    exist (a mistyped path is an error, not a new directory tree). Writing may still fail later (permissions):
    write_atomic says why then."""
    target = Path(path)
    label = _label(target, flag)
    if target.is_dir() or str(path).endswith(os.sep):
        directory = str(path).rstrip(os.sep) or os.sep
        raise WriteError(f"{label}: is a directory; give a file name (e.g. {os.path.join(directory, '<name>')})")
    for ancestor in target.parents:
        if ancestor.exists() or ancestor.is_symlink():
            if not ancestor.is_dir():
                raise WriteError(f"{label}: cannot write: {ancestor} is a file, not a directory")
            break
    if not parents and not target.parent.is_dir():
        raise WriteError(
            f"{label}: the directory {target.parent} does not exist; create it first, or give --parents to have "
            "aicluster create it"
        )
    return target


def write_atomic(
    path: Path, text: str, mode: int = 0o644, *, flag: str | None = None, secret: bool = False, parents: bool = True
) -> None:
    """Write `text` to `path` atomically, creating missing parent directories (with `parents` False: refusing to,
    check_target says how to fix it). Raises WriteError (naming
    `path`, after `flag` where given, e.g. "--json out.json") and removes what it created on failure.
    `secret`: `path` itself is replaced by the rename (a link there is replaced, never followed) and anything there
    that is not a plain file is refused (check_secret_target said why before the secret was made)."""
    label = _label(Path(path), flag)
    if not parents:
        check_target(path, flag, parents=False)
    if secret:
        _refuse_non_file(Path(path), label, "a secret")
    else:
        path = Path(os.path.realpath(path))  # a link: write its target, keep the link
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.stat(path).st_mode) and not path.is_dir():
                _write_in_place(path, text, label)
                return
    with _signals_stop_the_write() as guard:
        written = _write_file(path, text, mode, flag, label, guard)
    if not written:  # stopped by a signal whose previous handler let the process go on
        name = signal.Signals(guard.signum).name if guard.signum is not None else "a signal"
        raise WriteError(f"{label}: not written: stopped by {name}")


def _write_file(path: Path, text: str, mode: int, flag: str | None, label: str, guard: _SignalGuard) -> bool:
    """write_atomic's temporary file and rename; False when a stop signal stopped it (it raises inside only
    while `guard` is armed: once the temporary file is known, until it is complete)."""
    created: list[Path] = []
    tmp: str | None = None
    done = False
    try:
        check_target(path, flag)
        missing = [p for p in [path.parent, *path.parent.parents] if not p.exists()]
        for directory in reversed(missing):
            try:
                directory.mkdir()
            except OSError as exc:
                reason = (exc.strerror or type(exc).__name__).lower()
                raise WriteError(f"{label}: cannot create the directory {directory} ({reason})") from None
            created.append(directory)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            guard.arm()
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        guard.armed = False  # complete: a signal from here on is delivered once the file is in place
        os.replace(tmp, path)
        done = True
    except _Stopped:
        pass  # the file is removed below; write_atomic delivers the signal once the handlers are restored
    except OSError as exc:
        raise WriteError(f"{label}: cannot write: {_cause(exc, path)}") from None
    finally:
        guard.armed = False
        if not done:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            for directory in reversed(created):
                _rmdir_quietly(directory)
    return done


def _write_in_place(path: Path, text: str, label: str) -> None:
    """A device, pipe or socket is written into (a rename would replace it with a plain file)."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise WriteError(f"{label}: cannot write: {_cause(exc, path)}") from None


def _rmdir_quietly(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty any more (another writer): leave it
        directory.rmdir()


# ------------------------------------------------------------------------------------------------
# Secrets: only ever a plain file
# ------------------------------------------------------------------------------------------------

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device (a terminal, /dev/null)"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_non_file(path: Path, label: str, what: str) -> os.stat_result | None:
    """lstat of `path` (None: nothing there); WriteError when it is there and not a plain file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WriteError(f"{label}: cannot write: {_cause(exc, path)}") from None
    if stat.S_ISLNK(st.st_mode):
        to = ""
        with contextlib.suppress(OSError):
            to = f" (to {os.readlink(path)})"
        raise WriteError(
            f"{label}: is a symbolic link{to}; aicluster never writes {what} through a link: give the file"
        )
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a file")
        raise WriteError(f"{label}: is {kind}, not a plain file; aicluster writes {what} only to a plain file")
    return st


def check_secret_target(
    path: str | Path, first_line: str, writer: str, what: str, *, force: bool = False, parents: bool = True
) -> Path:
    """Where `writer` (e.g. "aicluster kubeconfig eks-p5") may write a secret, checked before the secret is made:
    nothing there yet, or a plain file `writer` wrote (its first line is `first_line`); another plain file only with
    `force`. Never a symbolic link (even to its own file), a terminal, /dev/null, a pipe, a socket or a directory:
    the secret would be shown, lost or written somewhere else than the file named. `-o` names the path in messages;
    `what` names the secret ("the kubeconfig (a secret)"). Raises WriteError; returns the path."""
    if str(path) in ("-", ""):
        raise WriteError(f"-o {path}: aicluster writes {what} only to a file; give a file name")
    if not Path(path).is_symlink():
        check_target(path, "-o", parents=parents)  # a directory, a path under a file, a missing directory
    st = _refuse_non_file(Path(path), _label(Path(path), "-o"), what)
    target = Path(path)
    label = _label(target, "-o")
    if st is None or force:
        return target
    try:  # no link, no blocking open: what is there now is what was checked above
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise WriteError(f"{label}: cannot read it to see who wrote it: {_cause(exc, target)}") from None
    with os.fdopen(fd, "rb") as fh:
        first = fh.readline(len(first_line.encode()) + 2).decode("utf-8", "replace").rstrip("\n")
    if first != first_line:
        raise WriteError(
            f"{label}: exists and was not written by `{writer}`; give another file, or --force to replace it"
        )
    return target


def unsafe_permissions(path: Path) -> str | None:
    """Why someone else could have changed `path`, as OpenSSH judges a key or an authorized_keys file: owned by
    another user than the one running (root excepted), or writable by its group or by everyone (a sticky directory
    too: files in it can still be added). The reason says how to fix it; None when only its owner can change it."""
    st = os.lstat(path)
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return f"owned by {_user(st.st_uid)}, not by you ({_user(me)}); fix: chown {_user(me)} {path}, or remove it"
    writable = [who for bit, who in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "everyone")) if st.st_mode & bit]
    if writable:
        mode = stat.S_IMODE(st.st_mode)
        return f"writable by {' and '.join(writable)} (mode {mode:04o}); fix: chmod go-w {path}"
    return None


def _user(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
