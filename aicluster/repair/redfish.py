"""Power-cycling an owned node through its BMC's Redfish service (the standard library's HTTP client only).

The system: the URL's `/redfish/v1/Systems/ID`, else the service's only member of `/redfish/v1/Systems`. The reset
types the BMC takes: `ResetType@Redfish.AllowableValues` of its `#ComputerSystem.Reset` action, else the
`Parameters[ResetType].AllowableValues` of the action's `@Redfish.ActionInfo` resource. A BMC that lists neither is
not guessed at: the repair fails and says so. Of what is allowed, the first of PLANS is used:

1. PowerCycle (power removed and restored in one action);
2. ForceOff, then On (or ForceOn) once the system reports PowerState Off: the same, in two steps;
3. ForceRestart: a restart without removing power (the PCIe devices reset, but a GPU that needs power removed,
   XID 79, may stay off the bus; logged as such).

Requests use HTTP Basic authentication (Redfish's simplest; no session to leak), each with a timeout; the password
is read from a root-only file at the moment it is needed and never logged.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aicluster.repair.config import Bmc

ACTION = "#ComputerSystem.Reset"
PLANS: tuple[tuple[str, ...], ...] = (("PowerCycle",), ("ForceOff", "On"), ("ForceOff", "ForceOn"), ("ForceRestart",))
MAX_BODY = 4 << 20


class RedfishError(Exception):
    """The BMC refused, did not answer, or answered something that is not Redfish."""


def choose(allowed: list[str]) -> tuple[str, ...] | None:
    """The first of PLANS whose every reset type the BMC allows; None when none is."""
    return next((plan for plan in PLANS if all(t in allowed for t in plan)), None)


def read_password(path: str) -> str:
    """The password in a file only its owner may read (0600/0400); RedfishError otherwise (never the content)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise RedfishError(f"password_file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            raise RedfishError(
                f"password_file {path}: mode {mode:04o} lets others read it; make it root's alone (chmod 600)"
            )
        text = f.read(4097).decode("utf-8", "replace").rstrip("\r\n")
    if not text or len(text) > 4096:
        raise RedfishError(f"password_file {path}: empty or over 4 KiB")
    return text


@dataclass
class Redfish:
    root: str  # scheme://host[:port]
    system_path: str | None  # /redfish/v1/Systems/ID, or None: the service's only system
    authorization: str = field(repr=False)
    context: ssl.SSLContext | None = field(repr=False)
    timeout_s: float = 10.0
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def connect(cls, bmc: Bmc, timeout_s: float) -> Redfish:
        parts = urlsplit(bmc.url)
        path = parts.path.rstrip("/") or None
        token = base64.b64encode(f"{bmc.username}:{read_password(bmc.password_file)}".encode()).decode()
        context = None
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=bmc.ca_file)
            if not bmc.verify_tls:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        return cls(f"{parts.scheme}://{parts.netloc}", path, f"Basic {token}", context, timeout_s)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.root + path, data=data, method=method)
        req.add_header("Authorization", self.authorization)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s, context=self.context) as resp:
                raw = resp.read(MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            raise RedfishError(f"{method} {path}: HTTP {exc.code} {_message(exc)}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RedfishError(f"{method} {path}: {getattr(exc, 'reason', None) or exc}") from None
        if not raw.strip():
            return {}
        try:
            out = json.loads(raw[:MAX_BODY])
        except ValueError:
            raise RedfishError(f"{method} {path}: the answer is not JSON") from None
        if not isinstance(out, dict):
            raise RedfishError(f"{method} {path}: the answer is not a JSON object")
        return out

    def system(self) -> tuple[str, dict[str, Any]]:
        path = self.system_path
        if path is None:
            members = self.request("GET", "/redfish/v1/Systems").get("Members") or []
            ids = [m.get("@odata.id") for m in members if isinstance(m, dict)]
            if len(ids) != 1 or not isinstance(ids[0], str):
                raise RedfishError(
                    f"/redfish/v1/Systems lists {len(ids)} systems; name the node's in the BMC URL "
                    "(e.g. https://HOST/redfish/v1/Systems/1)"
                )
            path = ids[0]
        return path, self.request("GET", path)

    def reset_action(self, system: dict[str, Any]) -> tuple[str, list[str]]:
        """The reset action's target and the reset types the BMC allows."""
        action = (system.get("Actions") or {}).get(ACTION)
        if not isinstance(action, dict) or not isinstance(action.get("target"), str):
            raise RedfishError(f"the system has no {ACTION} action")
        allowed = action.get("ResetType@Redfish.AllowableValues")
        if allowed is None and isinstance(action.get("@Redfish.ActionInfo"), str):
            info = self.request("GET", action["@Redfish.ActionInfo"])
            for p in info.get("Parameters") or []:
                if isinstance(p, dict) and p.get("Name") == "ResetType":
                    allowed = p.get("AllowableValues")
        if not isinstance(allowed, list) or not allowed:
            raise RedfishError(f"the BMC lists no ResetType values for {ACTION}; not guessing one")
        return action["target"], [str(v) for v in allowed]

    def power_cycle(self, power_off_wait_s: float) -> str:
        """Power-cycle the system the best way the BMC allows; returns what was done (for the log)."""
        path, system = self.system()
        target, allowed = self.reset_action(system)
        plan = choose(allowed)
        if plan is None:
            raise RedfishError(f"the BMC allows none of PowerCycle, ForceOff+On, ForceRestart (it allows {allowed})")
        if len(plan) == 1:
            self.request("POST", target, {"ResetType": plan[0]})
            return f"{path}: {plan[0]}"
        off, on = plan
        if str(system.get("PowerState")) != "Off":
            self.request("POST", target, {"ResetType": off})
            deadline = time.monotonic() + power_off_wait_s
            while str(self.request("GET", path).get("PowerState")) != "Off":
                if time.monotonic() > deadline:
                    raise RedfishError(f"{path}: {off} sent, still not Off after {power_off_wait_s:g} s")
                self.sleep(1.0)
        self.request("POST", target, {"ResetType": on})
        return f"{path}: {off}, then {on}"


def _message(exc: urllib.error.HTTPError) -> str:
    """A Redfish error's first message (its @Message.ExtendedInfo), else the HTTP reason."""
    try:
        body = json.loads(exc.read(MAX_BODY))
        info = body["error"].get("@Message.ExtendedInfo") or [{}]
        return str(info[0].get("Message") or body["error"].get("message") or exc.reason)[:300]
    except Exception:
        return str(exc.reason)[:300]
