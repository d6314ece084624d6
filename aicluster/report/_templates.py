"""jinja2 environments for the reports: StrictUndefined, and every `{{ value }}` escaped by default.

Every string in a preview comes from a stack file or a resource and is untrusted. The HTML
environment autoescapes; the Markdown one escapes through `finalize`, so no template can forget to:
Markdown syntax belongs in the templates, never in the values."""

from __future__ import annotations

import functools
import re
from typing import Any

import jinja2
import markupsafe

_MD_PUNCTUATION = frozenset("\\`*_[]<>|~")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def printable(value: object) -> str:
    """The value as text without control characters (ANSI colour codes in a message)."""
    return _CONTROL.sub("", str(value))


def _html_printable(value: object) -> object:
    """`printable` for HTML; Markup (what a filter such as `join` already escaped) stays as it is."""
    return value if isinstance(value, markupsafe.Markup) else printable(value)


class Code(str):
    """A command for a fenced code block, shown as written: made only of characters that cannot end the fence or
    the line (see `code`)."""

    __slots__ = ()


_CODE_SAFE = re.compile(r"[A-Za-z0-9 _.,:;=/+%@'\"()\[\]{}-]*")


def code(text: str) -> Code | None:
    """`text` for a code block, or None when it holds what could end the block or forge a line (a backtick, a
    newline, a control character): such a value comes from a hostile document, never from aicluster."""
    return Code(text) if _CODE_SAFE.fullmatch(text) else None


def md_escape(value: object) -> str:
    """Text that GitHub/GitLab Markdown shows as written, also inside a table cell: punctuation
    backslash-escaped, `&` as an entity, line breaks as `<br>`. A `Code` is shown as written (in a fence)."""
    if isinstance(value, Code):
        return str(value)
    text = printable(value).replace("\r\n", "\n").replace("\r", "\n")
    escaped = "".join("&amp;" if c == "&" else f"\\{c}" if c in _MD_PUNCTUATION else c for c in text)
    return escaped.replace("\n", "<br>")


def _environment(**options: Any) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("aicluster", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        **options,
    )


@functools.cache
def _markdown() -> jinja2.Environment:
    return _environment(autoescape=False, finalize=md_escape)


@functools.cache
def _html() -> jinja2.Environment:
    return _environment(autoescape=True, finalize=_html_printable)


def render_markdown(template: str, **context: Any) -> str:
    """The template's text with at most one blank line in a row and one trailing newline, so the
    templates can space their blocks for readability."""
    text = _markdown().get_template(f"report/{template}").render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def render_html(template: str, **context: Any) -> str:
    return _html().get_template(f"report/{template}").render(**context)
