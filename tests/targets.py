"""Real targets shared by the playbook and tune tests: one Debian root filesystem made with debootstrap and cached
as a tarball under .work/cache (the chroot tests apply roles to a copy; the SSH-host tests run sshd over overlays
of it), and the skip-or-fail rule for tests that need system packages.

On a developer machine without root, debootstrap or network these tests skip and say what to install; with
CI=true they fail instead."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import IN_CI, ROOT

CACHE = ROOT / ".work" / "cache"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# python3 and python3-apt as cloud images have them; openssh-server and procps for the SSH hosts.
PACKAGES = ("python3", "python3-apt", "openssh-server", "procps")
# The `ansible` package that matches ansible-core 2.19. Taken from it: community.general (chroot connection),
# ansible.posix, and the clouds' inventory plugins discovery configures (amazon.aws's aws_ec2 also runs against a
# local EC2; google.cloud's and azure.azcollection's are checked against their documented options).
ANSIBLE_PACKAGE = "ansible==12.3.0"
# Debian architecture -> its qemu-user-static binfmt_misc entry
QEMU_BINFMT = {"arm64": "qemu-aarch64"}
BINFMT = Path("/proc/sys/fs/binfmt_misc")
COLLECTIONS = ("community/general", "ansible/posix", "amazon/aws", "google/cloud", "azure/azcollection")


def unavailable(why: str, hint: str) -> None:
    """Skip on a developer machine, fail in CI (CI=true) where these tests must run."""
    message = f"{why}; {hint}"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def system_tool(name: str, package: str) -> str:
    """The path of a program a Debian package gives (promtool, amtool): skipped without it on a developer machine,
    failed in CI, whose .ci/run installs the package."""
    found = shutil.which(name)
    if found is None:
        unavailable(f"needs {name}", f"apt-get install --no-install-recommends {package}")
    assert found is not None
    return found


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock shared by pytest-xdist workers (they build one cache, not two)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{path.name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def foreign_arch(arch: str) -> None:
    """Make this machine run `arch` binaries in a chroot (Debian's qemu-user-static through binfmt_misc, registered
    with the fix-binary flag so that a chroot needs no emulator of its own), or say what is missing."""
    qemu = QEMU_BINFMT.get(arch)
    if qemu is None:
        unavailable(f"no emulator known for {arch}", f"add it to QEMU_BINFMT in {__name__}")
    assert qemu is not None
    entry = BINFMT / qemu
    if not (BINFMT / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], capture_output=True, check=False)
    if not entry.exists() and shutil.which("update-binfmts"):
        subprocess.run(["update-binfmts", "--enable", qemu], capture_output=True, check=False)
    if not entry.exists() or "F" not in entry.read_text().partition("flags:")[2].split("\n", 1)[0]:
        unavailable(
            f"this machine cannot run {arch} binaries in a chroot ({entry} missing or without the F flag)",
            "install Debian's emulators: apt-get install -y --no-install-recommends qemu-user-static binfmt-support "
            "(and mount binfmt_misc)",
        )


def debian_rootfs(suite: str = SUITE, packages: tuple[str, ...] = PACKAGES, arch: str | None = None) -> Path:
    """A minimal Debian `suite` (bookworm) with `packages` (PACKAGES) and fresh apt lists, where no service may
    start (built once, a minute or three, then cached). `arch`: a foreign architecture's root (arm64: Grace hosts),
    run under qemu-user (foreign_arch); several times slower to build, once."""
    if arch is not None:
        foreign_arch(arch)
    label = f"{suite}-{arch}" if arch else suite
    if (suite, packages) == (SUITE, PACKAGES):
        tarball = CACHE / f"rootfs-{label}-{'-'.join(p.replace('python3-', '') for p in PACKAGES[1:])}.tar"
    else:
        tarball = CACHE / f"rootfs-{label}-{'-'.join(packages)}.tar"
    with locked(tarball):
        if tarball.exists():
            return tarball
        work = CACHE / f"{tarball.stem}.build"
        shutil.rmtree(work, ignore_errors=True)
        proc = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                *([f"--arch={arch}"] if arch else []),
                f"--include={','.join(packages)}",
                suite,
                str(work),
                MIRROR,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            unavailable(
                f"debootstrap {suite} failed ({(proc.stdout + proc.stderr).strip()[-300:]})",
                f"it needs network access to {MIRROR}",
            )
        # Packages the roles install must never start daemons in the chroot (they would run on this host).
        policy = work / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        subprocess.run(["chroot", str(work), "apt-get", "update", "-qq"], check=True, capture_output=True)
        for cache in (work / "var/cache/apt").glob("*.bin"):  # apt rebuilds these; 100 MB less to copy
            cache.unlink()
        partial = tarball.parent / f"{tarball.name}.partial"
        subprocess.run(["tar", "-C", str(work), "-cf", str(partial), "."], check=True)
        partial.rename(tarball)
        shutil.rmtree(work, ignore_errors=True)
    return tarball


def unpacked(tarball: Path) -> Path:
    """`tarball` unpacked once beside it (a directory of the same name without .tar), for overlay() to use as its
    read-only lower layer: each test writes to a layer of its own instead of unpacking 300 MB again (4-6 s of disk
    writes each time). Unpacked again when the tarball changes (its size and mtime are recorded beside it)."""
    target = tarball.with_suffix("")
    stamp = tarball.parent / f"{target.name}.unpacked"
    key = f"{tarball.stat().st_size} {tarball.stat().st_mtime_ns}\n"
    with locked(target):
        if target.is_dir() and stamp.exists() and stamp.read_text() == key:
            return target
        stamp.unlink(missing_ok=True)
        partial = tarball.parent / f"{target.name}.partial"
        for stale in (target, partial):
            shutil.rmtree(stale, ignore_errors=True)
        partial.mkdir()
        subprocess.run(["tar", "-C", str(partial), "-xf", str(tarball)], check=True)
        partial.rename(target)
        stamp.write_text(key)
    return target


@contextlib.contextmanager
def overlay(lower: list[Path], where: Path, keep: Path | None = None) -> Iterator[Path]:
    """A writable root filesystem over read-only lower layers (first on top): an overlay mount at where/merged whose
    writes land in where/upper; unmounted and removed afterwards, but for the upper layer when `keep` names where to
    move it (a layer for a later overlay). The lower layers are never written."""
    upper, work, merged = where / "upper", where / "work", where / "merged"
    for d in (upper, work, merged):
        d.mkdir(parents=True)
    layers = ":".join(str(d) for d in lower)
    subprocess.run(
        ["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={layers},upperdir={upper},workdir={work}", str(merged)],
        check=True,
        capture_output=True,
    )
    try:
        yield merged
    finally:
        if subprocess.run(["umount", str(merged)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "--lazy", str(merged)], capture_output=True, check=False)
        if keep is not None:
            upper.rename(keep)
        shutil.rmtree(where, ignore_errors=True)


def ansible_collections() -> Path:
    """COLLECTIONS unpacked once from the `ansible` wheel into .work/cache (about 30 MB); the directory to give
    ANSIBLE_COLLECTIONS_PATH."""
    target = CACHE / f"collections-{ANSIBLE_PACKAGE.replace('==', '-')}"
    with locked(target):
        missing = [c for c in COLLECTIONS if not (target / "ansible_collections" / c / "MANIFEST.json").exists()]
        if not missing:
            return target
        wheels = CACHE / "wheels"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", ANSIBLE_PACKAGE, "-d", str(wheels)],
            capture_output=True,
            text=True,
            check=False,
        )
        wheel = next(iter(sorted(wheels.glob("ansible-*.whl"))), None) if wheels.exists() else None
        if proc.returncode != 0 or wheel is None:
            unavailable(
                f"could not download {ANSIBLE_PACKAGE} from PyPI ({proc.stderr.strip()[-200:]})",
                "these tests need network access to PyPI once (the collections are cached in .work/cache)",
            )
        assert wheel is not None
        partial = target.parent / f"{target.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        prefixes = tuple(f"ansible_collections/{c}/" for c in COLLECTIONS)
        with zipfile.ZipFile(wheel) as z:
            z.extractall(partial, [m for m in z.namelist() if m.startswith(prefixes)])
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        wheel.unlink()
    return target


# The Python of SUITE's python3 (bookworm: 3.11): wheels for the root filesystem are downloaded for it.
SUITE_PYTHON = "3.11"


def wheels_for(requirements: list[str]) -> Path:
    """Wheels of `requirements` and their dependencies for SUITE's Python on this machine's architecture, downloaded
    once into .work/cache (a role installs them with no package index: the root filesystem needs no PyPI access)."""
    import hashlib
    import platform

    machine = platform.machine()
    key = hashlib.sha256("\n".join([SUITE_PYTHON, machine, *sorted(requirements)]).encode()).hexdigest()[:12]
    target = CACHE / f"wheels-py{SUITE_PYTHON}-{key}"
    with locked(target):
        if target.is_dir():
            return target
        partial = target.parent / f"{target.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        platforms = [f"manylinux2014_{machine}", f"manylinux_2_28_{machine}", f"manylinux_2_34_{machine}"]
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--python-version",
             SUITE_PYTHON, "--implementation", "cp", *(f"--platform={p}" for p in platforms), "-d", str(partial),
             *requirements],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            unavailable(
                f"could not download {', '.join(requirements)} from PyPI ({proc.stderr.strip()[-300:]})",
                "these tests need network access to PyPI once (the wheels are cached in .work/cache)",
            )
        partial.rename(target)
    return target


# SckyzO/slurm_exporter, the Slurm exporter the slurm_exporter role installs: its source at the release the catalog
# records (tests/data/slurm_exporter, see tests/data/README.md), built with Debian bookworm's Go and Go libraries.
SLURM_EXPORTER_SOURCE = ROOT / "tests" / "data" / "slurm_exporter"
SLURM_EXPORTER_GO119 = ROOT / "tests" / "data" / "slurm_exporter-go119"
SLURM_EXPORTER_IMPORT = "github.com/sckyzo/slurm_exporter"
GOCODE = Path("/usr/share/gocode")
GO_PACKAGES = (
    "golang-go",
    "golang-github-prometheus-client-golang-dev",
    "golang-github-prometheus-common-dev",
    "golang-github-prometheus-exporter-toolkit-dev",
    "golang-gopkg-alecthomas-kingpin.v2-dev",
    "golang-golang-x-exp-dev",
)
# The exporter's go.mod asks for Go 1.26; bookworm has 1.19 and no module proxy is reachable, so it is built in GOPATH
# mode against Debian's golang-*-dev packages, with these edits to a copy (each must apply: a new upstream release
# that no longer needs one fails here, loudly). The collectors' parsing and commands are untouched.
GO119_EDITS = (
    ('"github.com/alecthomas/kingpin/v2"', '"gopkg.in/alecthomas/kingpin.v2"'),  # Debian packages kingpin v2.2
    ('\t"slices"\n', '\t"golang.org/x/exp/slices"\n'),  # slices is in the standard library from Go 1.21
    ("for line := range strings.SplitSeq(", "for _, line := range strings.Split("),  # iterators: Go 1.24
    # exporter-toolkit 0.8 logs with go-kit's interface, which the logger below also implements
    ("web.ListenAndServe(server, toolkitFlags, log.Logger)", "web.ListenAndServe(server, toolkitFlags, log)"),
)


def slurm_exporter_binary() -> Path:
    """The Slurm exporter built from tests/data/slurm_exporter (Go 1.19 port above; internal/logger replaced by
    tests/data/slurm_exporter-go119/logger.go, the same API over the standard library since log/slog is Go 1.21),
    once per source into .work/cache (about 10 s)."""
    import hashlib

    if shutil.which("go") is None or not all((GOCODE / "src" / p).is_dir() for p in _GO_IMPORTS):
        unavailable(
            "the Slurm exporter's build needs Debian's Go and Go libraries",
            f"apt-get install -y --no-install-recommends {' '.join(GO_PACKAGES)}",
        )
    sources = sorted(p for d in (SLURM_EXPORTER_SOURCE, SLURM_EXPORTER_GO119) for p in d.rglob("*") if p.is_file())
    digest = hashlib.sha256(repr(GO119_EDITS).encode())
    for p in sources:
        digest.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes())
    target = CACHE / f"slurm_exporter-{digest.hexdigest()[:12]}" / "slurm_exporter"
    with locked(target.parent):
        if target.exists():
            return target
        work = CACHE / f"{target.parent.name}.build"
        shutil.rmtree(work, ignore_errors=True)
        package = work / "src" / SLURM_EXPORTER_IMPORT
        shutil.copytree(SLURM_EXPORTER_SOURCE, package)
        (package / "go.mod").unlink()  # GOPATH mode
        shutil.copy(SLURM_EXPORTER_GO119 / "logger.go", package / "internal" / "logger" / "logger.go")
        applied = dict.fromkeys((old for old, _ in GO119_EDITS), 0)
        for path in package.rglob("*.go"):
            text = original = path.read_text()
            for old, new in GO119_EDITS:
                applied[old] += text.count(old)
                text = text.replace(old, new)
            if text != original:
                path.write_text(text)
        unused = [old for old, n in applied.items() if n == 0]
        assert not unused, f"Go 1.19 edits that no longer apply to the exporter's source: {unused}"
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(work),
            "GOPATH": f"{work}:{GOCODE}",
            "GO111MODULE": "off",
            "GOFLAGS": "",
            "GOPROXY": "off",
            "CGO_ENABLED": "0",
            "GOCACHE": str(CACHE / "go-build"),
        }
        version = (SLURM_EXPORTER_SOURCE / "VERSION").read_text().strip()
        ldflags = f"-X github.com/prometheus/common/version.Version={version}"
        proc = subprocess.run(
            ["go", "build", "-ldflags", ldflags, "-o", str(work / "slurm_exporter"), "./cmd/slurm_exporter"],
            cwd=package,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            pytest.fail(f"the Slurm exporter does not build with Debian's Go:\n{proc.stdout}{proc.stderr}")
        target.parent.mkdir(parents=True, exist_ok=True)
        (work / "slurm_exporter").rename(target)
        shutil.rmtree(work, ignore_errors=True)
    return target


# Go packages of GO_PACKAGES the build imports (under /usr/share/gocode/src)
_GO_IMPORTS = (
    "github.com/prometheus/client_golang",
    "github.com/prometheus/common",
    "github.com/prometheus/exporter-toolkit",
    "gopkg.in/alecthomas/kingpin.v2",
    "golang.org/x/exp/slices",
)
