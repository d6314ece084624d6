"""Terminal output that user-derived text cannot take over.

Stack values, waiver reasons, host names and messages from Ansible or the clouds are printed in tables and
messages. A control character among them (an ANSI escape sequence, a bell, a carriage return) would act on the
terminal: retitle the window, clear the screen, hide or rewrite lines. Every console of the CLI is a
SafeConsole, which removes control characters from all text it renders, while keeping rich's own styling
(colours are added after rendering) and its control segments (cursor moves of a live display).

Nor does a SafeConsole expand emoji codes: rich would show a waiver reason ":fire:" as an emoji and a message
"namespace:key: value" as "namespace🔑 value". Markup stays on (the CLI's own styles use it), so user text is
passed through `rich.markup.escape` wherever it is printed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions
from rich.segment import Segment

# C0 controls except tab and newline, DEL, and the C1 controls (0x80-0x9f: CSI, OSC... in 8-bit form).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_control(text: str) -> str:
    """`text` without control characters, except newline and tab."""
    return _CONTROL.sub("", text)


class SafeConsole(Console):
    """A rich Console that strips control characters from everything it renders and never expands emoji codes
    (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def render(self, renderable: Any, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(strip_control(segment.text), segment.style, segment.control)
