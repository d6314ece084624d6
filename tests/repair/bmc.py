"""A Redfish BMC for the tests: sushy-tools' emulator with its fake driver (in-memory systems: no libvirt), HTTP
Basic authentication from an htpasswd file (bcrypt), on this machine's loopback. With CI=true a missing sushy-tools
fails the tests instead of skipping them."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.targets import unavailable

USER = "admin"
START_S = 30.0


@dataclass
class Emulator:
    url: str  # http://127.0.0.1:PORT
    systems: dict[str, str]  # name -> uuid (the system's id in /redfish/v1/Systems/<uuid>)
    password: str
    password_file: Path
    log: Path

    def get(self, path: str) -> dict[str, object]:
        req = urllib.request.Request(self.url + path)
        req.add_header("Authorization", "Basic " + _b64(f"{USER}:{self.password}"))
        with urllib.request.urlopen(req, timeout=10) as resp:
            out: dict[str, object] = json.loads(resp.read())
        return out

    def power(self, name: str) -> str:
        return str(self.get(f"/redfish/v1/Systems/{self.systems[name]}")["PowerState"])

    def resets(self) -> int:
        """How many reset actions the emulator was sent (its access log; the fake driver does not log the type)."""
        return sum(
            "/Actions/ComputerSystem.Reset" in line and "POST" in line for line in self.log.read_text().splitlines()
        )

    def wait_power(self, name: str, state: str, seconds: float = 60.0) -> None:
        """Wait for the system to report `state` (the fake driver applies a change 1-11 s after the request)."""
        deadline = time.monotonic() + seconds
        while self.power(name) != state:
            assert time.monotonic() < deadline, f"{name} not {state} after {seconds:g} s"
            time.sleep(0.5)


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def emulator(base: Path, names: list[str], power: str = "On") -> Iterator[Emulator]:
    try:
        import bcrypt
        import sushy_tools  # noqa: F401
    except ImportError:
        unavailable("sushy-tools is not installed", "install the dev extras: pip install -e '.[dev]'")
        raise
    base.mkdir(parents=True, exist_ok=True)
    password = f"pw-{uuid.uuid4().hex}"
    (base / "htpasswd").write_text(f"{USER}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()}\n")
    pw_file = base / "bmc-password"
    pw_file.write_text(password + "\n")
    pw_file.chmod(0o600)
    systems = {n: str(uuid.uuid4()) for n in names}
    fake = [{"uuid": u, "name": n, "power_state": power, "nics": []} for n, u in systems.items()]
    config = base / "sushy.conf"
    config.write_text(
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {fake!r}\n"
        f"SUSHY_EMULATOR_AUTH_FILE = {str(base / 'htpasswd')!r}\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(base / 'state')!r}\n"
    )
    port = _free_port()
    log = base / "sushy.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sushy_tools.emulator.main", "--fake", "--config", str(config),
             "--interface", "127.0.0.1", "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        emu = Emulator(f"http://127.0.0.1:{port}", systems, password, pw_file, log)
        try:
            deadline = time.monotonic() + START_S
            while True:
                try:
                    urllib.request.urlopen(emu.url + "/redfish/v1", timeout=2).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"sushy-emulator did not start:\n{log.read_text()[-2000:]}")
                    time.sleep(0.1)
            yield emu
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
