"""aicluster-gpu-quarantine: takes Kubernetes GPU nodes with a GPU fault out of scheduling, and gives them back.

Node Problem Detector sets permanent conditions on a GPU node (`GpuXidCritical` on an XID the catalog drains a Slurm
node on, `GpuCountMismatch` when the node shows fewer GPUs than its pool; aicluster/schedulers/kubernetes/health.py).
A condition acts on nothing by itself. This controller, one replica in the cluster, lists the GPU nodes (those whose
pool label names a GPU pool) every `interval_s` and:

- quarantines a node whose condition is True: the taint `<taint_key>=<reason>:NoSchedule` (taint_key is
  aicluster.io/gpu-unhealthy), a cordon (spec.unschedulable) and the annotation `aicluster.io/quarantine` (JSON:
  condition, reason, whether aicluster cordoned the node, when) that says aicluster did it; a Warning event;
- releases a node it quarantined once no condition is True (NPD's permanent conditions clear when the detector starts
  again, i.e. after a reboot or a replacement): it removes only its own taint and annotation, and uncordons only a
  node it cordoned itself (never someone else's cordon, the rule aicluster-health keeps for Slurm drains);
- circuit breaker: never more than `max_share` of the GPU nodes quarantined at once (breaker.py, the same limit
  aicluster-repair keeps; 0.5 by default, from the catalog). A node past the limit keeps its condition and gets a
  Warning event (`GpuQuarantineDeferred`), once; it is quarantined when a place frees.

NoSchedule, not NoExecute: a job on the node is not evicted by us; the managed service's repair (EKS node auto repair)
or a person drains it. A running multi-node job usually fails on the faulty GPU anyway, and its restart lands
elsewhere.

Every write is a JSON merge patch that carries the node's resourceVersion, so a node changed meanwhile (someone
else's taint or cordon) is a conflict, not an overwrite: the next pass reads it again.

Standard library only (and breaker.py): it runs from a stock Python image, the two files shipped in a ConfigMap, with
the pod's service-account token (RBAC: nodes list and patch, events create in `default`, where node events live).
Run: `python -m aicluster.repair.quarantine --config /etc/aicluster-quarantine/config.json [--once]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from aicluster.repair.breaker import breaker_limit

PROG = "aicluster-gpu-quarantine"
TAINT_EFFECT = "NoSchedule"
ANNOTATION = "aicluster.io/quarantine"
EVENT_NAMESPACE = "default"  # the API takes an event about a cluster-scoped object (a Node) only there
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
MERGE_PATCH = "application/merge-patch+json"
# a taint value is a label value: at most 63 characters, alphanumerics and -_. inside
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")

log = logging.getLogger("aicluster.repair.quarantine")


class ConfigError(Exception):
    """The configuration is missing or invalid; the message names the file, the field, the value and the fix."""


@dataclass(frozen=True)
class Config:
    pool_label: str  # the node label that names a node's pool (aicluster.io/pool)
    pools: tuple[str, ...]  # the GPU pools: the nodes watched, and the circuit breaker's whole
    conditions: tuple[str, ...]  # the node conditions that quarantine when True
    taint_key: str  # aicluster's taint (aicluster.io/gpu-unhealthy); the value is the condition's reason
    max_share: float  # circuit breaker: the most of the GPU nodes quarantined at once
    interval_s: float = 30.0


def load_config(path: str | Path) -> Config:
    """The configuration file (JSON, rendered from the plan); ConfigError naming the field and the fix."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}): pass --config with the rendered file") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}): render it again") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: got {type(raw).__name__}; the file must hold a JSON object")

    def strings(key: str) -> tuple[str, ...]:
        value = raw.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{path}: {key}: got {value!r}; a non-empty list of names")
        return tuple(value)

    label = raw.get("pool_label")
    if not isinstance(label, str) or not label:
        raise ConfigError(f"{path}: pool_label: got {label!r}; the node label naming the pool (e.g. aicluster.io/pool)")
    share = raw.get("max_share")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise ConfigError(f"{path}: max_share: got {share!r}; a share of the GPU nodes, above 0 and at most 1")
    interval = raw.get("interval_s", 30.0)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not 1 <= interval <= 3600:
        raise ConfigError(f"{path}: interval_s: got {interval!r}; seconds between passes, 1 to 3600")
    taint = raw.get("taint_key")
    if not isinstance(taint, str) or not re.fullmatch(r"[a-z0-9.-]+/[A-Za-z0-9][-A-Za-z0-9_.]{0,61}", taint):
        raise ConfigError(f"{path}: taint_key: got {taint!r}; a prefixed taint key (e.g. aicluster.io/gpu-unhealthy)")
    unknown = sorted(set(raw) - {"pool_label", "pools", "conditions", "taint_key", "max_share", "interval_s"})
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: got {raw[unknown[0]]!r}; not a setting, remove it")
    return Config(label, strings("pools"), strings("conditions"), taint, float(share), float(interval))


# ------------------------------------------------------------------------------------------------ the decision


@dataclass(frozen=True)
class Node:
    """What the decision reads of a Node object."""

    name: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    unschedulable: bool
    taints: tuple[dict[str, Any], ...]
    conditions: dict[str, tuple[str, str, str]]  # type -> (status, reason, message)

    @classmethod
    def from_api(cls, obj: dict[str, Any]) -> Node:
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        return cls(
            name=meta.get("name", ""),
            uid=meta.get("uid", ""),
            resource_version=meta.get("resourceVersion", ""),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            unschedulable=bool(spec.get("unschedulable", False)),
            taints=tuple(spec.get("taints") or ()),
            conditions={
                c["type"]: (c.get("status", "Unknown"), c.get("reason", ""), c.get("message", ""))
                for c in status.get("conditions") or ()
                if "type" in c
            },
        )

    def fault(self, conditions: Sequence[str]) -> tuple[str, str, str] | None:
        """The first of `conditions` that is True on the node: (type, reason, message); None: healthy."""
        for ctype in conditions:
            status, reason, message = self.conditions.get(ctype, ("Unknown", "", ""))
            if status == "True":
                return ctype, reason, message
        return None

    def quarantine(self) -> dict[str, Any] | None:
        """aicluster's quarantine record on the node (its annotation); None: not quarantined by aicluster."""
        raw = self.annotations.get(ANNOTATION)
        if raw is None:
            return None
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:
            record = None
        # an unreadable record is still ours: release it, but never uncordon on its word
        return record if isinstance(record, dict) else {"cordoned": False}


@dataclass(frozen=True)
class Action:
    kind: Literal["quarantine", "release", "defer"]
    node: Node
    condition: str = ""
    reason: str = ""
    message: str = ""
    cordon: bool = False  # quarantine: aicluster cordons the node (it was schedulable); release: it uncordons it


def decide(nodes: Iterable[Node], cfg: Config) -> list[Action]:
    """What to do with the GPU nodes (those of cfg.pools), releases first so that they free the breaker's places,
    then quarantines in name order while the quarantined stay within breaker_limit(max_share, GPU nodes); the
    other faulty nodes are deferred."""
    gpu = sorted((n for n in nodes if n.labels.get(cfg.pool_label) in cfg.pools), key=lambda n: n.name)
    limit = breaker_limit(cfg.max_share, len(gpu))
    actions: list[Action] = []
    held = 0
    for node in gpu:
        record = node.quarantine()
        if record is None:
            continue
        if node.fault(cfg.conditions) is None:
            cordoned = record.get("cordoned") is True and node.unschedulable
            actions.append(Action("release", node, cordon=cordoned))
        else:
            held += 1
    for node in gpu:
        found = node.fault(cfg.conditions)
        if node.quarantine() is not None or found is None:
            continue
        ctype, reason, message = found
        if held < limit:
            held += 1
            actions.append(Action("quarantine", node, ctype, reason, message, cordon=not node.unschedulable))
        else:
            actions.append(Action("defer", node, ctype, reason, message))
    return actions


def taint_value(condition: str, reason: str) -> str:
    """The taint's value: the condition's reason (e.g. `Xid79`), or its type where the reason is no label value."""
    return reason if reason and _LABEL_VALUE.match(reason) else condition


def patch(action: Action, cfg: Config, now: datetime) -> dict[str, Any]:
    """The JSON merge patch for a quarantine or a release. It carries the node's resourceVersion (a node changed
    since it was read is a 409, not an overwrite) and the whole taint list (a merge patch replaces lists), in which
    only aicluster's taint changes."""
    node = action.node
    others = [t for t in node.taints if t.get("key") != cfg.taint_key]
    meta: dict[str, Any] = {"resourceVersion": node.resource_version}
    spec: dict[str, Any] = {}
    if action.kind == "quarantine":
        own = {"key": cfg.taint_key, "value": taint_value(action.condition, action.reason), "effect": TAINT_EFFECT}
        spec["taints"] = [*others, own]
        if action.cordon:
            spec["unschedulable"] = True
        record = {
            "by": PROG,
            "condition": action.condition,
            "reason": action.reason,
            "cordoned": action.cordon,
            "since": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        meta["annotations"] = {ANNOTATION: json.dumps(record, sort_keys=True)}
    elif action.kind == "release":
        spec["taints"] = others or None
        if action.cordon:
            spec["unschedulable"] = None  # the field's default, false
        meta["annotations"] = {ANNOTATION: None}
    else:
        raise ValueError(f"a {action.kind} changes no node")
    return {"metadata": meta, "spec": spec}


def event(action: Action, cfg: Config, limit: int, gpu_nodes: int, now: datetime) -> dict[str, Any]:
    """The core/v1 Event on the node that says what was done (or, past the circuit breaker, not done)."""
    node = action.node
    if action.kind == "quarantine":
        reason, kind = "GpuQuarantined", "Warning"
        cordon = " and cordoned" if action.cordon else " (already cordoned by someone else)"
        what = f"{action.condition} ({action.reason or 'no reason'})"
        text = f"{what}: tainted {cfg.taint_key}:{TAINT_EFFECT}{cordon} by aicluster"
    elif action.kind == "release":
        reason, kind = "GpuQuarantineReleased", "Normal"
        uncordon = " and node uncordoned" if action.cordon else ""
        text = f"no GPU fault condition left: aicluster's taint removed{uncordon}"
    else:
        reason, kind = "GpuQuarantineDeferred", "Warning"
        text = (f"{action.condition} ({action.reason or 'no reason'}) but not quarantined: circuit breaker, at "
                f"most {limit} of the {gpu_nodes} GPU nodes quarantined at once and that many are; the node keeps "
                "its condition and is quarantined when one is released")  # fmt: skip
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{node.name}.", "namespace": EVENT_NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.uid},
        "reason": reason,
        "message": text[:1024],
        "type": kind,
        "source": {"component": PROG},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


# ------------------------------------------------------------------------------------------------ the API


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Api(Protocol):
    def list_nodes(self, selector: str) -> list[dict[str, Any]]: ...
    def patch_node(self, name: str, body: dict[str, Any]) -> None: ...
    def create_event(self, body: dict[str, Any]) -> None: ...


class KubeApi:
    """The few Kubernetes API calls the controller makes, over HTTPS with the service account's token (read on
    each request: bound tokens are rotated), or over the URL and token file given (tests)."""

    def __init__(self, base: str, token_file: str | None, ca_file: str | None, timeout_s: float = 30.0) -> None:
        self.base, self.token_file, self.timeout_s = base.rstrip("/"), token_file, timeout_s
        self.context = ssl.create_default_context(cafile=ca_file) if base.startswith("https:") else None

    @classmethod
    def in_cluster(cls) -> KubeApi:
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise ConfigError("KUBERNETES_SERVICE_HOST is not set: run in a pod, or pass --api URL")
        host = f"[{host}]" if ":" in host else host
        return cls(f"https://{host}:{port}", f"{SA_DIR}/token", f"{SA_DIR}/ca.crt")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, ctype: str = "") -> Any:
        headers = {"Accept": "application/json"}
        if self.token_file:
            headers["Authorization"] = "Bearer " + Path(self.token_file).read_text(encoding="utf-8").strip()
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype or "application/json"
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s, context=self.context) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            with contextlib.suppress(json.JSONDecodeError, AttributeError):
                text = json.loads(text).get("message", text)
            raise ApiError(exc.code, text[:300]) from None
        return json.loads(payload) if payload else None

    def list_nodes(self, selector: str) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({"labelSelector": selector})
        items = self._call("GET", f"/api/v1/nodes?{query}").get("items") or []
        return list(items)

    def patch_node(self, name: str, body: dict[str, Any]) -> None:
        self._call("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}", body, MERGE_PATCH)

    def create_event(self, body: dict[str, Any]) -> None:
        self._call("POST", f"/api/v1/namespaces/{EVENT_NAMESPACE}/events", body)


# ------------------------------------------------------------------------------------------------ the loop


@dataclass
class Controller:
    api: Api
    cfg: Config
    deferred: set[str] = field(default_factory=set)  # nodes whose deferral has had its event (one per episode)

    def selector(self) -> str:
        return f"{self.cfg.pool_label} in ({','.join(sorted(self.cfg.pools))})"

    def run_once(self, now: datetime | None = None) -> list[Action]:
        """One pass: list, decide, act. A node the API refuses (a conflict: it changed meanwhile) is left for the
        next pass; the others go on. Returns the actions taken (deferrals included)."""
        now = now or datetime.now(UTC)
        nodes = [Node.from_api(o) for o in self.api.list_nodes(self.selector())]
        gpu_nodes = sum(1 for n in nodes if n.labels.get(self.cfg.pool_label) in self.cfg.pools)
        limit = breaker_limit(self.cfg.max_share, gpu_nodes)
        done: list[Action] = []
        still_deferred: set[str] = set()
        for action in decide(nodes, self.cfg):
            name = action.node.name
            if action.kind == "defer":
                still_deferred.add(name)
                if name not in self.deferred:
                    log.warning("node %s: %s (%s) not quarantined, circuit breaker: at most %d of %d GPU nodes",
                                name, action.condition, action.reason, limit, gpu_nodes)  # fmt: skip
                    self._event(action, limit, gpu_nodes, now)
                done.append(action)
                continue
            try:
                self.api.patch_node(name, patch(action, self.cfg, now))
            except (ApiError, OSError) as exc:
                log.error("node %s: %s failed, next pass tries again: %s", name, action.kind, exc)
                continue
            log.info("node %s: %s (%s %s)", name, action.kind, action.condition, action.reason)
            self._event(action, limit, gpu_nodes, now)
            done.append(action)
        self.deferred = still_deferred
        return done

    def _event(self, action: Action, limit: int, gpu_nodes: int, now: datetime) -> None:
        try:
            self.api.create_event(event(action, self.cfg, limit, gpu_nodes, now))
        except (ApiError, OSError) as exc:  # an event is a courtesy: the node's state is what counts
            log.warning("node %s: event not recorded: %s", action.node.name, exc)

    def run(self, passes: int | None = None) -> None:
        """Pass every interval_s, for ever (or `passes` times); a pass that fails (the API unreachable) is logged
        and the next one tries again."""
        n = 0
        while passes is None or n < passes:
            try:
                self.run_once()
            except (ApiError, OSError, ValueError) as exc:
                log.error("pass failed, next in %gs: %s", self.cfg.interval_s, exc)
            n += 1
            if passes is None or n < passes:
                time.sleep(self.cfg.interval_s)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--config", required=True, help="the rendered configuration (JSON)")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    parser.add_argument("--api", help="the API server's URL (default: in-cluster, with the service account)")
    parser.add_argument("--token-file", help="with --api: a bearer token file")
    parser.add_argument("--ca-file", help="with --api over https: the CA bundle")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    try:
        cfg = load_config(args.config)
        api = KubeApi(args.api, args.token_file, args.ca_file) if args.api else KubeApi.in_cluster()
    except ConfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    Controller(api, cfg).run(1 if args.once else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
