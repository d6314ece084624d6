"""The drain reason grammar: the interface between the health checks, operators and a repair loop.

    reason  = PREFIX code [" " detail]
    PREFIX  = "aicluster-health:"
    code    = [A-Z][A-Z0-9_]{0,31}          (e.g. XID79, GPU_COUNT, ROW_REMAP_PENDING, IB_RATE, CHECK_FAILED)
    detail  = printable ASCII without "=", at most MAX_DETAIL characters

Two codes belong to aicluster-repair (aicluster/repair): `REPAIR <action> <CODE> <detail>` while it repairs the
node (the boot layer's first check after the reboot or power cycle clears it; after a Slurm reboot, nextstate=RESUME
clears it at the registration), and `HELD <why>; <CODE> <detail>` for a node it holds for a person, which no check
ever clears.

`format_reason` makes one (cleaning the detail so that it is one printable line scontrol takes as one argument);
`parse_reason` reads one back, ignoring the ` [user@time]` suffix `scontrol show node` appends. A reason that
does not start with PREFIX is someone else's and is never touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "aicluster-health:"
MAX_DETAIL = 200
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,31}")
_REASON = re.compile(r"aicluster-health:(?P<code>[A-Z][A-Z0-9_]{0,31})(?: (?P<detail>[^=]*))?")
_SUFFIX = re.compile(r" \[[^\[\]@ ]+@[^\[\] ]+\]$")  # scontrol show node: "Reason=... [root@2026-11-28T06:00:00]"


@dataclass(frozen=True)
class Reason:
    code: str
    detail: str

    @property
    def xid(self) -> int | None:
        """The XID of an `XIDnn` code, else None."""
        return int(self.code[3:]) if re.fullmatch(r"XID\d{1,4}", self.code) else None

    def __str__(self) -> str:
        return format_reason(self.code, self.detail)


def clean(text: str, limit: int = MAX_DETAIL) -> str:
    """One printable ASCII line without "=" (scontrol would read `a=b` as another key), at most `limit` chars."""
    out = "".join(c if " " <= c <= "~" and c != "=" else (":" if c == "=" else " ") for c in text)
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 3] + "..."


def format_reason(code: str, detail: str = "") -> str:
    if not _CODE.fullmatch(code):
        raise ValueError(f"drain reason code {code!r} is not of the grammar [A-Z][A-Z0-9_]{{0,31}}")
    text = clean(detail)
    return f"{PREFIX}{code} {text}" if text else f"{PREFIX}{code}"


def is_ours(reason: str | None) -> bool:
    return bool(reason) and reason is not None and reason.startswith(PREFIX)


def parse_reason(reason: str | None) -> Reason | None:
    """The code and detail of one of aicluster's reasons; None for anyone else's (or none)."""
    if not reason:
        return None
    text = _SUFFIX.sub("", reason.strip())
    m = _REASON.fullmatch(text)
    if m is None:
        return None
    return Reason(m.group("code"), m.group("detail") or "")
