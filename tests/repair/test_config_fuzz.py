"""Hypothesis fuzz of aicluster-repair's JSON configuration: whatever the file holds (bad types, unknown keys, huge
or non-finite numbers, deep nesting, odd keys), it is either a configuration or refused with one line per problem
naming the file, and the program exits 2 with no traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicluster.burst.config import ConfigError
from aicluster.repair.cli import main
from aicluster.repair.config import RepairConfig, load

GOOD: dict[str, Any] = {"cluster": "llm-dev", "actions": {"XID79": "power_cycle"}}
FIELDS = sorted(RepairConfig.model_fields)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.integers().map(lambda n: n * 10**400),  # past any float: Python's json reads it as an int
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["XID79", "reboot", "power_cycle", "/var/lib/x", "https://u:p@10.0.0.5?t=1", "dgx-[000-003]"]),
)
junk = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=12), children, max_size=3)
    ),
    max_leaves=10,
)
# a good configuration with some fields replaced by junk and some unknown keys added
configs = st.builds(
    lambda changed, extra: {**GOOD, **changed, **extra},
    st.dictionaries(st.sampled_from(FIELDS), junk, max_size=4),
    st.dictionaries(st.text(max_size=12).filter(lambda k: k not in FIELDS), junk, max_size=2),
)


def _write(data: Any) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="repair-fuzz-"))
    path = folder / "aicluster-repair.json"
    path.write_text(json.dumps(data, allow_nan=True) if not isinstance(data, str) else data)
    return path


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(configs, junk))
def test_any_json_is_a_configuration_or_one_clear_message_per_problem(data: Any) -> None:
    path = _write(data)
    message = ""
    try:
        load(path)
    except ConfigError as exc:
        message = str(exc)
    else:
        return  # a configuration the program may run with
    lines = message.splitlines()
    assert lines
    for line in lines:
        assert line.startswith(f"{path}: "), line
        assert len(line) < 600, line  # a huge value is shown cut short
    assert "u:p@10.0.0.5" not in message  # a password in a URL is never echoed, wherever the URL is


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=configs.filter(lambda d: any(k not in FIELDS for k in d)))
def test_an_unknown_key_stops_the_program_with_status_2_and_no_traceback(data: dict[str, Any]) -> None:
    path = _write(data)
    with pytest.raises(ConfigError):
        load(path)
    # the program itself: exit 2, the problem on stderr, nothing else (capsys is function-scoped: capture by hand)
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["--config", str(path)])
    assert code == 2
    assert "Traceback" not in err.getvalue()
    assert "not a field of the configuration (remove it)" in err.getvalue()
