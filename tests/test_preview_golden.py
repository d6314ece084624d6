"""The preview JSON of every example stack, byte for byte against tests/golden/previews/<stack>.json.

Issue 17's rule: work on speed must not change what a preview says. Each example stack is previewed
in-process (`aicluster preview STACK --json FILE`, the command CI runs) and the file it writes must equal
the golden one byte for byte.

One input is the clock: a GKE cluster's maintenance exclusion starts "now" (components/kubernetes/gke.py), so the
previews here run with that clock frozen at FROZEN_NOW; everything else is the stack, the catalog and the code.

When a change is MEANT to change a preview (a new field, a new resource, a corrected figure), regenerate
the goldens and review their diff in the same commit:

    AICLUSTER_UPDATE_GOLDENS=1 .venv/bin/pytest tests/test_preview_golden.py -q
    # or
    .venv/bin/python -m tests.test_preview_golden [STACK ...]
"""

from __future__ import annotations

import contextlib
import datetime
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from tests import terminal
from tests.conftest import ROOT, STACKS

GOLDEN = ROOT / "tests" / "golden" / "previews"
UPDATE = os.environ.get("AICLUSTER_UPDATE_GOLDENS") == "1"
FROZEN_NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


class _FrozenDateTime(datetime.datetime):
    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> _FrozenDateTime:
        t = FROZEN_NOW.astimezone(tz) if tz is not None else FROZEN_NOW.replace(tzinfo=None)
        return cls.fromisoformat(t.isoformat())


@contextlib.contextmanager
def frozen_clock() -> Iterator[None]:
    """The GKE component's clock at FROZEN_NOW (the only wall-clock read in what a preview builds)."""
    from components.kubernetes import gke

    clock = types.SimpleNamespace(datetime=_FrozenDateTime, UTC=datetime.UTC)
    with mock.patch.object(gke, "datetime", clock):
        yield


def preview_json(stack: str, out: Path) -> tuple[bytes, str]:
    """The bytes `aicluster preview STACK --json OUT` writes, run in this process from the project root, and the
    text it prints (tests/terminal.py: the terminal golden of the same run)."""
    with frozen_clock():
        code, text = terminal.run(
            ["-C", str(ROOT), "preview", stack, "--json", str(out)], masks=[(str(out), "<preview.json>")]
        )
    assert code == 0, f"aicluster preview {stack} exited {code}"
    return out.read_bytes(), text


def regenerate(stacks: list[str], scratch: Path) -> list[Path]:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    written = []
    for stack in stacks:
        golden = GOLDEN / f"{stack}.json"
        data, text = preview_json(stack, scratch / f"{stack}.json")
        golden.write_bytes(data)
        written += [golden, terminal.write("preview", stack, text)]
    return written


def test_every_example_stack_has_a_golden() -> None:
    if UPDATE:
        pytest.skip("regenerating the goldens")
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == STACKS, (
        "tests/golden/previews/ must hold one golden per example stack and no other; "
        "run `python -m tests.test_preview_golden` to regenerate"
    )
    assert sorted(p.stem for p in (terminal.TERMINAL / "preview").glob("*.txt")) == STACKS, (
        "tests/golden/terminal/preview/ must hold the printed preview of each example stack and no other"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_preview_json_is_byte_identical_to_the_golden(stack: str, tmp_path: Path) -> None:
    golden = GOLDEN / f"{stack}.json"
    if UPDATE:
        regenerate([stack], tmp_path)
        return
    got, text = preview_json(stack, tmp_path / f"{stack}.json")
    assert golden.exists(), f"no golden for {stack}; run `python -m tests.test_preview_golden {stack}`"
    want = golden.read_bytes()
    if got != want:
        # the first differing line, not a 100 kB diff
        got_lines, want_lines = got.decode().splitlines(), want.decode().splitlines()
        line = next(
            (i for i, (a, b) in enumerate(zip(got_lines, want_lines, strict=False)) if a != b),
            min(len(got_lines), len(want_lines)),
        )
        pytest.fail(
            f"preview of {stack} differs from {golden.relative_to(ROOT)} at line {line + 1}:\n"
            f"  golden:  {want_lines[line] if line < len(want_lines) else '<end of file>'}\n"
            f"  preview: {got_lines[line] if line < len(got_lines) else '<end of file>'}\n"
            "if the change is intended, regenerate with `python -m tests.test_preview_golden` and review the diff"
        )
    terminal.check("preview", stack, text)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for path in regenerate(sys.argv[1:] or STACKS, Path(tmp)):
            print(f"wrote {path.relative_to(ROOT)}")


# Run in fresh interpreters: the first previews every example stack with the SDK modules loaded as usual and then
# fills the SDK cache; the second previews them again from the filled cache (postponed annotations, lazy packages),
# as a developer's second preview runs, and compares each file with its golden.
_FROM_CACHE = """
import os
import sys
from pathlib import Path
from aicluster.cli import main
from aicluster.preview import sdkload
from tests.test_preview_golden import GOLDEN, ROOT, STACKS, frozen_clock

os.environ["AICLUSTER_CACHE_DIR"] = sys.argv[3]  # tests.conftest gave this process a cache of its own
out = Path(sys.argv[2])
for stack in STACKS:
    with frozen_clock():
        assert main(["-C", str(ROOT), "-q", "preview", stack, "--json", str(out / f"{stack}.json")]) == 0, stack
if sys.argv[1] == "fill":
    sdkload.fill(budget_s=3600)
else:
    print("@@ missed", len(sdkload._FINDER.missed))
    for stack in STACKS:
        print("@@", stack, (out / f"{stack}.json").read_bytes() == (GOLDEN / f"{stack}.json").read_bytes())
"""


@pytest.mark.slow
def test_previews_from_the_filled_sdk_cache_are_byte_identical(tmp_path: Path) -> None:
    if UPDATE:
        pytest.skip("regenerating the goldens")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "AICLUSTER_NO_CACHE")}
    env["PYTHONPATH"] = str(ROOT)
    runs = []
    for how in ("fill", "from-cache"):
        (tmp_path / how).mkdir()
        runs.append(
            subprocess.run(
                [sys.executable, "-c", _FROM_CACHE, how, str(tmp_path / how), str(tmp_path / "cache")],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
                check=False,
                cwd=ROOT,
            )
        )
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-3000:] or runs[0].stderr[-3000:]
    lines = [line for line in runs[1].stdout.splitlines() if line.startswith("@@ ")]  # not the previews' tables
    assert lines == ["@@ missed 0", *(f"@@ {stack} True" for stack in STACKS)]
