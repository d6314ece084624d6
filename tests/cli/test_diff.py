"""`aicluster diff` on inputs that are not previews: the file, the side and the field are named; exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.report.previews import PASSING


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        pytest.param({}, "missing key 'stack'", id="empty-object"),
        pytest.param([], "the document must be an object, got an array", id="a-list"),
        pytest.param(
            {**PASSING, "summary": {**PASSING["summary"], "gpus": "many"}},
            "'summary.gpus' must be a whole number, got \"many\"",
            id="a-string-count",
        ),
    ],
)
@pytest.mark.parametrize("side", ["base", "head"])
def test_a_document_that_is_not_a_preview_is_named(tmp_path: Path, side: str, bad: object, problem: str) -> None:
    """`diff` on `{}` did not say which of the two files was bad (issue 13, #10)."""
    good, wrong = tmp_path / "good.json", tmp_path / "wrong.json"
    good.write_text(json.dumps(PASSING))
    wrong.write_text(json.dumps(bad))
    files = [wrong, good] if side == "base" else [good, wrong]
    proc = run_cli("diff", *map(str, files), "-o", str(tmp_path / "comment.md"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {side} {wrong}: not a preview JSON ({problem}); write one with ")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "comment.md").exists()
