from __future__ import annotations

import pytest

from aicluster.health.reasons import PREFIX, Reason, clean, format_reason, is_ours, parse_reason


def test_a_reason_round_trips() -> None:
    text = format_reason("XID79", "GPU 0000:3a:00 GPU has fallen off the bus (RESTART_BM)")
    assert text == "aicluster-health:XID79 GPU 0000:3a:00 GPU has fallen off the bus (RESTART_BM)"
    assert parse_reason(text) == Reason("XID79", "GPU 0000:3a:00 GPU has fallen off the bus (RESTART_BM)")
    assert parse_reason(text).xid == 79  # type: ignore[union-attr]


def test_the_suffix_scontrol_appends_is_ignored() -> None:
    assert parse_reason("aicluster-health:IB_RATE mlx5_ib3 port 1 at 200 Gb/s [root@2026-11-28T06:00:00]") == Reason(
        "IB_RATE", "mlx5_ib3 port 1 at 200 Gb/s"
    )


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param(None, id="none"),
        pytest.param("", id="empty"),
        pytest.param("admin: bad fan", id="someone-else"),
        pytest.param("NHC: check_hw_ib failed", id="nhc"),
        pytest.param("Prolog error", id="slurm"),
        pytest.param("aicluster-health:lowercase detail", id="bad-code"),
        pytest.param("xaicluster-health:XID79", id="prefix-not-first"),
    ],
)
def test_reasons_that_are_not_ours_parse_to_none(reason: str | None) -> None:
    assert parse_reason(reason) is None


def test_a_code_alone_is_a_reason() -> None:
    assert format_reason("GPU_COUNT") == "aicluster-health:GPU_COUNT"
    assert parse_reason("aicluster-health:GPU_COUNT") == Reason("GPU_COUNT", "")
    assert is_ours("aicluster-health:GPU_COUNT")
    assert not is_ours("GPU_COUNT")


def test_details_become_one_printable_line_without_equals() -> None:
    text = format_reason("XID48", "pid=4321, name=python\nsecond line \x00\u00e9 " + "x" * 500)
    assert text.startswith(PREFIX)
    assert text.isprintable()
    assert text.isascii()
    assert "=" not in text
    assert "\n" not in text
    assert len(text) <= len(PREFIX) + len("XID48 ") + 200
    assert clean("a==b") == "a::b"


@pytest.mark.parametrize("code", ["xid79", "", "XID 79", "A" * 33, "9XID"])
def test_codes_outside_the_grammar_are_refused(code: str) -> None:
    with pytest.raises(ValueError, match="grammar"):
        format_reason(code, "x")
