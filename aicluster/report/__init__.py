"""Reports rendered from the preview JSON (docs/preview-json.md), as pure functions `doc -> str`:

- `render(doc, fmt)` for fmt in FORMATS: Markdown (PR comments, job summaries), one self-contained
  HTML file (compliance reviewers), SARIF 2.1.0 (code scanning), JUnit XML (CI test views) and a
  JSON report (the same facts as data, without resource inputs);
- `diff_markdown(base, head)`: the PR comment comparing two previews.

A document of the wrong shape raises ValueError naming the key path. SARIF and JUnit are about
policy results, so they need the document's `policy` section; the other formats say that the
checks were not run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._views import FindingGroup, group_findings, group_waived, in_groups, waived_in_groups

if TYPE_CHECKING:
    from ._doc import PolicyResults, PreviewDoc

__all__ = [
    "FORMATS",
    "DiffInputError",
    "FindingGroup",
    "diff_markdown",
    "group_findings",
    "group_waived",
    "in_groups",
    "preview_shape_problem",
    "render",
    "waived_in_groups",
]

FORMATS = ("md", "html", "sarif", "junit", "json")


def _needs_policy(render_with: Callable[[PreviewDoc, PolicyResults], str], fmt: str) -> Callable[[PreviewDoc], str]:
    def render_doc(doc: PreviewDoc) -> str:
        if doc.policy is None:
            raise ValueError(f"preview JSON: missing key 'policy' (a {fmt} report lists policy results)")
        return render_with(doc, doc.policy)

    return render_doc


def _renderers() -> dict[str, Callable[[PreviewDoc], str]]:
    """The renderers, imported when a report is rendered: `aicluster preview` needs only the finding views."""
    from . import _html, _markdown
    from ._jsonreport import render_json
    from ._junit import render_junit
    from ._sarif import render_sarif

    return {
        "md": _markdown.render_report,
        "html": _html.render_report,
        "sarif": _needs_policy(render_sarif, "SARIF"),
        "junit": _needs_policy(render_junit, "JUnit"),
        "json": render_json,
    }


def render(doc: Mapping[str, Any], fmt: str) -> str:
    """The report of one preview in `fmt` (one of FORMATS)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    from ._doc import parse

    return _renderers()[fmt](parse(doc))


def policy_counts(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The policy verdict of a preview JSON in counts: pack, passed, mandatory, advisory, waived, not_applicable.
    ValueError (naming the field) when it is not a preview JSON; a preview without a policy section counts zeros."""
    from ._doc import parse

    policy = parse(doc).policy
    if policy is None:
        return {"pack": "-", "passed": 0, "mandatory": 0, "advisory": 0, "waived": 0, "not_applicable": 0}
    mandatory = sum(1 for v in policy.violations if v.enforcement == "mandatory")
    return {
        "pack": f"{policy.pack.name}@{policy.pack.version}",
        "passed": len(policy.passed),
        "mandatory": mandatory,
        "advisory": len(policy.violations) - mandatory,
        "waived": len(policy.waived),
        "not_applicable": len(policy.not_applicable),
    }


class DiffInputError(ValueError):
    """One of the two previews is not a preview JSON; `side` says which ("base" or "head")."""

    def __init__(self, side: str, problem: str) -> None:
        super().__init__(f"{side}: {problem}")
        self.side = side
        self.problem = problem


def preview_shape_problem(doc: Any) -> str | None:
    """Why `doc` is not a preview JSON (the key path and what is wrong there), or None when it is one."""
    from ._doc import parse

    try:
        parse(doc)
    except ValueError as exc:
        return str(exc).removeprefix("preview JSON: ")
    return None


def diff_markdown(base: Mapping[str, Any], head: Mapping[str, Any], changes: Mapping[str, Any] | None = None) -> str:
    """Markdown for a PR comment: what changes from the base preview to the head preview. `changes` is the step
    classification (aicluster.changes, as JSON): its replaced, deleted and rolled-out resources lead the comment.
    DiffInputError names the side whose document has the wrong shape."""
    from ._doc import parse

    docs = []
    for side, doc in (("base", base), ("head", head)):
        try:
            docs.append(parse(doc))
        except ValueError as exc:
            raise DiffInputError(side, str(exc).removeprefix("preview JSON: ")) from None
    from ._diff import render_diff

    return render_diff(docs[0], docs[1], changes=changes)
