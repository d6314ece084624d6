"""A fake Kubernetes API server for the quarantine controller's end-to-end tests, on this machine's loopback.

No real kube-apiserver can be had here (none on PyPI, npm or Debian bookworm, which ships only kubectl and etcd), so
this serves the few endpoints the controller calls with the API server's semantics that matter to it:

- GET /api/v1/nodes?labelSelector=KEY in (a,b): set-based selection on a label;
- PATCH /api/v1/nodes/NAME with application/merge-patch+json: RFC 7386 (a list is replaced, null deletes), a
  metadata.resourceVersion in the patch is a precondition (409 Conflict when stale), each write bumps it;
- POST /api/v1/namespaces/NS/events: an event about a Node only in `default` (or ""), as the API validates;
- authorisation: a bearer token, and each request checked against the RBAC rules given (the rendered ClusterRole
  and Role), 403 otherwise, as the RBAC authoriser would answer the controller's ServiceAccount.
"""

from __future__ import annotations

import contextlib
import copy
import ipaddress
import json
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TOKEN = "test-token"


def certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate it signs for 127.0.0.1 (the API server's serving certificate, as a cluster's
    CA signs it): (ca.crt, server.crt, server.key)."""
    now = datetime.now(UTC)

    def cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: str, signer: ec.EllipticCurvePrivateKey,
             ca: bool) -> x509.Certificate:  # fmt: skip
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
        else:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = cert("test-cluster-ca", ca_key, "test-cluster-ca", ca_key, True)
    server = cert("kube-apiserver", key, "test-cluster-ca", ca_key, False)
    paths = folder / "ca.crt", folder / "server.crt", folder / "server.key"
    paths[0].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


@dataclass
class Rule:
    namespace: str | None  # None: cluster-wide (a ClusterRole's rule)
    resources: tuple[str, ...]
    verbs: tuple[str, ...]


@dataclass
class FakeApi:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    requests: list[tuple[str, str, int]] = field(default_factory=list)  # (method, path, status)
    _rv: int = 100
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_node(self, name: str, pool: str, *, label: str = "aicluster.io/pool", **conditions: str) -> None:
        self._rv += 1
        self.nodes[name] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": str(self._rv), "labels": {label: pool}},
            "spec": {},
            "status": {"conditions": [{"type": t, "status": s, "reason": f"R{t}"} for t, s in conditions.items()]},
        }

    def set_condition(self, name: str, ctype: str, status: str, reason: str = "") -> None:
        """What Node Problem Detector (or a kubelet) does: a status write, which bumps the resourceVersion."""
        with self.lock:
            node = self.nodes[name]
            conds = [c for c in node["status"]["conditions"] if c["type"] != ctype]
            conds.append({"type": ctype, "status": status, "reason": reason or f"R{ctype}"})
            node["status"]["conditions"] = conds
            self._bump(node)

    def edit(self, name: str, patch: dict[str, Any]) -> None:
        """Someone else's change (kubectl cordon, another taint)."""
        with self.lock:
            self.nodes[name] = merge_patch(self.nodes[name], patch)
            self._bump(self.nodes[name])

    def _bump(self, node: dict[str, Any]) -> None:
        self._rv += 1
        node["metadata"]["resourceVersion"] = str(self._rv)

    def allowed(self, verb: str, resource: str, namespace: str | None) -> bool:
        return any(
            resource in r.resources and verb in r.verbs and (r.namespace is None or r.namespace == namespace)
            for r in self.rules
        )


def _select(node: dict[str, Any], selector: str) -> bool:
    if not selector:
        return True
    key, _, rest = selector.partition(" in ")
    values = {v.strip() for v in rest.strip().strip("()").split(",")}
    return node["metadata"].get("labels", {}).get(key.strip()) in values


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            api.requests.append((self.command, self.path, status))  # before the client can see the answer
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _status(self, code: int, reason: str, message: str) -> None:
            self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                              "message": message, "code": code})  # fmt: skip

        def _authorised(self, verb: str, resource: str, namespace: str | None) -> bool:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._status(401, "Unauthorized", "Unauthorized")
                return False
            if not api.allowed(verb, resource, namespace):
                where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
                self._status(403, "Forbidden", f'cannot {verb} resource "{resource}"{where}')
                return False
            return True

        def _body(self) -> Any:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            if url.path != "/api/v1/nodes":
                return self._status(404, "NotFound", url.path)
            if not self._authorised("list", "nodes", None):
                return None
            selector = urllib.parse.parse_qs(url.query).get("labelSelector", [""])[0]
            with api.lock:
                items = [copy.deepcopy(n) for n in api.nodes.values() if _select(n, selector)]
            return self._send(200, {"kind": "NodeList", "apiVersion": "v1", "items": items})

        def do_PATCH(self) -> None:
            prefix = "/api/v1/nodes/"
            if not self.path.startswith(prefix):
                return self._status(404, "NotFound", self.path)
            if self.headers.get("Content-Type") != "application/merge-patch+json":
                return self._status(415, "UnsupportedMediaType", str(self.headers.get("Content-Type")))
            if not self._authorised("patch", "nodes", None):
                return None
            name = urllib.parse.unquote(self.path[len(prefix) :])
            patch = self._body()
            with api.lock:
                node = api.nodes.get(name)
                if node is None:
                    return self._status(404, "NotFound", f'nodes "{name}" not found')
                want = (patch.get("metadata") or {}).get("resourceVersion")
                if want is not None and want != node["metadata"]["resourceVersion"]:
                    return self._status(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on nodes "{name}": the object has been modified; please '
                        "apply your changes to the latest version and try again",
                    )
                new = merge_patch(node, patch)
                for key in ("name", "uid"):
                    new["metadata"][key] = node["metadata"][key]
                api.nodes[name] = new
                api._bump(new)
                out = copy.deepcopy(new)
            return self._send(200, out)

        def do_POST(self) -> None:
            parts = self.path.strip("/").split("/")  # api v1 namespaces NS events
            if len(parts) != 5 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "events":
                return self._status(404, "NotFound", self.path)
            ns = parts[3]
            if not self._authorised("create", "events", ns):
                return None
            ev = self._body()
            if ev.get("involvedObject", {}).get("kind") == "Node" and ns not in ("", "default"):
                return self._status(422, "Invalid", "involvedObject.namespace: not allowed for node")
            with api.lock:
                api.events.append(ev)
            return self._send(201, ev)

    return Handler


@contextlib.contextmanager
def serve(api: FakeApi, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Run `api` on the loopback (over TLS with `tls`, a server context); yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
