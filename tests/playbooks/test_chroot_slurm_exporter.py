"""The slurm_exporter role applied for real to a Debian bookworm root filesystem (the chroot harness of
test_chroot.py), with the exporter itself: SckyzO/slurm_exporter built from its source (tests/targets.py). `url`
downloads a release archive named as the project names them from a local server standing in for the project's
release page, checks it against the checksums file beside it, unpacks the binary and writes the unit that runs it
with the inventory's arguments; a second run changes nothing, and an archive whose digest is not the one given is
refused. `binary` refuses a missing binary with the way out, and runs one an image put there; `none` installs
nothing; `container` runs the image given."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.catalog import load_catalog
from aicluster.inventory import inventory, read_yaml, write
from aicluster.monitoring.rules import monitoring_data
from tests.helpers import plan_of
from tests.monitoring.test_inventory import stack_cluster
from tests.playbooks.conftest import fresh_rootfs, run_playbook
from tests.playbooks.test_chroot import extra_vars
from tests.targets import slurm_exporter_binary

pytestmark = pytest.mark.slow

UNIT = "etc/systemd/system/slurm_exporter.service"
NO_SERVICE = ("slurm_exporter_manage_services=false",)


def controller_inventory(source: str, rootfs: Path, tmp: Path) -> tuple[Path, str, dict[str, Any]]:
    """`aicluster inventory` of p5-small with monitoring.slurm_exporter=`source`, its controller in the chroot."""
    plan = plan_of(load_catalog(), stack_cluster("p5-small") | {"monitoring": {"slurm_exporter": source}})
    files = inventory(plan, {}, {}, "pulumi stack output")
    inv = write(tmp / f"inventory-{source}", files, {}, shown="inventory").target
    host = plan.controller_host()
    hostvars = {"ansible_connection": "community.general.chroot", "ansible_host": str(rootfs),
                "ansible_python_interpreter": "/usr/bin/python3"}  # fmt: skip
    (inv / "zz-chroot.yml").write_text(yaml.safe_dump({"all": {"hosts": {host: hostvars}}}))
    return inv, host, read_yaml(files["group_vars/slurm_controller.yml"])


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def release_page(root: Path) -> Iterator[str]:
    """An HTTP server on this machine serving `root` (the chroot shares this machine's network): its base URL."""
    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def mirrored_release(exporter: Path, where: Path, catalog_archives: dict[str, str]) -> dict[str, str]:
    """The catalog's archives rebuilt under `where` (same file names, the binary at the root as .goreleaser.yaml
    packs it, README.md and LICENSE beside it) with the exporter built here, and their checksums file: file name ->
    architecture."""
    where.mkdir(parents=True)
    lines = []
    for url in catalog_archives.values():
        name = url.rsplit("/", 1)[1]
        with tarfile.open(where / name, "w:gz") as tar:
            tar.add(exporter, arcname="slurm_exporter")
            for extra in ("README.md", "LICENSE"):
                (where / extra).write_text(f"{extra}\n")
                tar.add(where / extra, arcname=extra)
        lines.append(f"{hashlib.sha256((where / name).read_bytes()).hexdigest()}  {name}")
    (where / "slurm_exporter_checksums.txt").write_text("\n".join(lines) + "\n")
    return {url.rsplit("/", 1)[1]: arch for arch, url in catalog_archives.items()}


def in_root(rootfs: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chroot", str(rootfs), *argv], capture_output=True, text=True, check=False, timeout=60)


def exec_start(unit: str) -> str:
    return next(line for line in unit.splitlines() if line.startswith("ExecStart="))


def test_url_installs_the_checked_release_and_a_second_run_changes_nothing(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    exporter = slurm_exporter_binary()
    release = monitoring_data(load_catalog()).slurm_exporter
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, host, controller = controller_inventory("url", rootfs, tmp_path)
        # the inventory hands the role the catalog's release and the exporter's arguments
        assert controller["slurm_exporter_source"] == "url"
        assert controller["slurm_exporter_version"] == release.version
        assert controller["slurm_exporter_archives"] == release.archives
        assert controller["slurm_exporter_checksums"] == release.checksums
        port = controller["slurm_exporter_port"]
        assert controller["slurm_exporter_args"] == [
            f"--web.listen-address=:{port}",
            "--no-collector.fairshare",
            "--no-collector.sacct_efficiency",
        ]
        names = mirrored_release(exporter, tmp_path / "release", release.archives)
        with release_page(tmp_path / "release") as base:
            mirror = {
                "slurm_exporter_archives": {a: f"{base}/{name}" for name, a in names.items()},
                "slurm_exporter_checksums": f"{base}/slurm_exporter_checksums.txt",
            }
            args = [
                "--limit",
                host,
                "--tags",
                "validate,slurm_exporter",
                *extra_vars(*NO_SERVICE),
                "-e",
                json.dumps(mirror),
            ]
            # `aicluster tune --check` on a fresh controller: what would change, nothing written
            check = run_playbook(inv, *args, "--check", collections=collections_path)
            assert check.rc == 0, check.output[-4000:]
            assert check.recap(host)["changed"] > 0
            assert not (rootfs / UNIT).exists()
            assert not (rootfs / "opt/slurm_exporter").exists()

            first = run_playbook(inv, *args, collections=collections_path)
            assert first.rc == 0, first.output[-4000:]
            assert first.recap(host)["changed"] > 0

            binary = f"/opt/slurm_exporter/{release.version}/slurm_exporter"
            archive = rootfs / binary.lstrip("/").rsplit("/", 1)[0] / next(iter(names))
            assert archive.exists()
            assert not (archive.parent / "README.md").exists()  # only the binary is unpacked
            unit = (rootfs / UNIT).read_text()
            assert exec_start(unit) == f"ExecStart={binary} {' '.join(controller['slurm_exporter_args'])}"
            assert "User=slurm-exporter" in unit
            assert "TimeoutStopSec=5" in unit
            assert in_root(rootfs, "id", "-u", "slurm-exporter").returncode == 0
            # the unpacked exporter runs on the root filesystem and is the catalog's release
            version = in_root(rootfs, binary, "--version")
            assert version.returncode == 0, version.stderr
            assert f"version {release.version} " in version.stdout + version.stderr

            second = run_playbook(inv, *args, collections=collections_path)
            assert second.rc == 0, second.output[-4000:]
            assert second.recap(host)["changed"] == 0, second.output[-4000:]
            print(f"\nslurm_exporter chroot apply: first run {first.seconds:.1f} s, second {second.seconds:.1f} s")

            # a pinned digest that is not the archive's: refused, and the archive and binary are left as they were
            pinned = run_playbook(inv, *args, "-e", f"slurm_exporter_checksum=sha256:{'0' * 64}",
                                  collections=collections_path)  # fmt: skip
            assert pinned.rc != 0
            assert "checksum" in pinned.output.lower()
            assert in_root(rootfs, binary, "--version").returncode == 0


def test_binary_none_and_container(rootfs_tarball: Path, collections_path: Path, tmp_path: Path) -> None:
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, host, controller = controller_inventory("none", rootfs, tmp_path)
        assert "slurm_exporter_args" not in controller
        args = ["--limit", host, "--tags", "validate,slurm_exporter", *extra_vars(*NO_SERVICE)]
        nothing = run_playbook(inv, *args, collections=collections_path)
        assert nothing.rc == 0, nothing.output[-4000:]
        assert nothing.recap(host)["changed"] == 0
        assert not (rootfs / UNIT).exists()

        inv, host, controller = controller_inventory("binary", rootfs, tmp_path)
        refused = run_playbook(inv, *args, collections=collections_path)
        assert refused.rc != 0
        assert "no executable Slurm exporter at /usr/local/bin/slurm_exporter" in refused.output
        assert not (rootfs / UNIT).exists()

        binary = rootfs / "usr/local/bin/slurm_exporter"  # what an image built with `make build` would carry
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_bytes(slurm_exporter_binary().read_bytes())
        binary.chmod(0o755)
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        unit = (rootfs / UNIT).read_text()
        assert (
            exec_start(unit) == f"ExecStart=/usr/local/bin/slurm_exporter {' '.join(controller['slurm_exporter_args'])}"
        )
        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap(host)["changed"] == 0, second.output[-4000:]

        inv, host, controller = controller_inventory("container", rootfs, tmp_path)
        no_image = run_playbook(inv, *args, collections=collections_path)
        assert no_image.rc != 0
        assert "slurm_exporter_image" in no_image.output
        image = "mirror.example/slurm_exporter:1.8.4-minimal"
        contained = run_playbook(inv, *args, "-e", f"slurm_exporter_image={image}", collections=collections_path)
        assert contained.rc == 0, contained.output[-4000:]
        line = exec_start((rootfs / UNIT).read_text())
        assert line.startswith("ExecStart=/usr/bin/docker run --rm --name slurm_exporter --network host ")
        assert "-v /etc/slurm:/etc/slurm:ro -v /run/munge:/run/munge:ro" in line
        assert line.endswith(f" {image} {' '.join(controller['slurm_exporter_args'])}")
