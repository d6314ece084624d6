"""What the site rules share: judging each site on its own, and showing the counts the engine hands over."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..facts.engine import Res, num
from ..facts.model import Site
from ..facts.stack import Stack
from ..rule import Ctx, StackCheck

TOLERANCE = 1e-9  # figures are rounded to the watt and the 1/10,000th of a ratio: equal is within


def as_counted(value: Any) -> Any:
    """Counts as the engine hands them over (numbers are floats on the wire) shown as whole numbers."""
    n = num(value)
    return int(n) if n is not None and n.is_integer() else value


def per_site(check: Callable[[Site], Iterable[str]]) -> StackCheck:
    """A stack rule judging each site on its own. Stack rules, because the engine hands component resources (the
    site is one) only to stack policies, never to resource policies."""

    def run(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
        for site in stack.sites:
            for message in check(site):
                yield site.res, message

    return run
