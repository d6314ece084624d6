"""The offline engine's props as a policy reads them: the lazily wired `wired_props(inputs)` behaves as the SDK's
`unknown_checking_proxy(_wire(inputs))` (what the engine path gave before), read for read; and a run of the pack
leaves the interpreter as it found it (cycle collection on, no stack facts kept)."""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from aicluster.preview.engine import SECRET_VALUE, Capture
from aicluster.preview.policy import _wire, evaluate, wired_props
from policies import rule

INPUTS: dict[str, Any] = {
    "name": "lt",
    "password": SECRET_VALUE,
    "id": UNKNOWN_STRING_VALUE,
    "count": 3,
    "flag": None,
    "tags": {"team": "ml", "owner": UNKNOWN_STRING_VALUE, "key": SECRET_VALUE},
    "networkInterfaces": [
        {"deviceIndex": 0, "interfaceType": "efa", "securityGroups": [UNKNOWN_STRING_VALUE, "sg-1"]},
        {"deviceIndex": 1, "interfaceType": UNKNOWN_STRING_VALUE},
        UNKNOWN_NUMBER_VALUE,
        SECRET_VALUE,
        [1, [2, UNKNOWN_STRING_VALUE]],
    ],
    "empty": {},
    "tuple": (1, 2),
}


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        value = read()
    except UnknownValueError as e:
        return ("unknown", (e.unknown_type_sentinel, e.props, e.message))
    except (KeyError, IndexError, TypeError) as e:
        return ("error", type(e).__name__)
    return ("value", _shape(value))


def _shape(value: Any) -> Any:
    """A read value as plain data, every nested read going through the proxy under test."""
    if isinstance(value, Mapping):
        return ("map", {k: _outcome(lambda k=k: value[k]) for k in value})
    if isinstance(value, Sequence) and not isinstance(value, str | tuple):
        return ("list", [_outcome(lambda i=i: value[i]) for i in range(len(value))])
    return value


def _both() -> tuple[Any, Any]:
    return unknown_checking_proxy(_wire(INPUTS)), wired_props(INPUTS)


def test_every_read_matches_the_sdk_proxy() -> None:
    sdk, lazy = _both()
    assert _shape(lazy) == _shape(sdk)
    assert list(lazy) == list(sdk)
    assert len(lazy) == len(sdk)


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda p: p["missing"], id="missing-key"),
        pytest.param(lambda p: p["id"], id="unknown-top"),
        pytest.param(lambda p: p["password"], id="secret"),
        pytest.param(lambda p: p["tags"]["owner"], id="unknown-nested"),
        pytest.param(lambda p: p["tags"]["key"], id="secret-nested"),
        pytest.param(lambda p: "id" in p, id="contains-unknown"),
        pytest.param(lambda p: "missing" in p, id="contains-missing"),
        pytest.param(lambda p: "owner" in p["tags"], id="contains-unknown-nested"),
        pytest.param(lambda p: p.get("id", "d"), id="get-unknown"),
        pytest.param(lambda p: p.get("missing", "d"), id="get-missing"),
        pytest.param(lambda p: p["networkInterfaces"][2], id="unknown-item"),
        pytest.param(lambda p: p["networkInterfaces"][-3], id="unknown-item-negative"),
        pytest.param(lambda p: p["networkInterfaces"][3], id="secret-item"),
        pytest.param(lambda p: p["networkInterfaces"][9], id="index-out-of-range"),
        pytest.param(lambda p: p["networkInterfaces"]["x"], id="index-by-string"),
        pytest.param(lambda p: p["networkInterfaces"][-1][1][1], id="unknown-deep"),
        pytest.param(lambda p: p["networkInterfaces"][0]["securityGroups"][0], id="unknown-in-list-in-map"),
        pytest.param(lambda p: [_shape(x) for x in p["networkInterfaces"][1:3]], id="slice-unchecked"),
        pytest.param(lambda p: list(p["networkInterfaces"]), id="iterate-stops-at-unknown"),
        pytest.param(lambda p: UNKNOWN_NUMBER_VALUE in p["networkInterfaces"], id="sequence-contains"),
        pytest.param(lambda p: dict(p["tags"].items()), id="items-stop-at-unknown"),
        pytest.param(lambda p: p["empty"] == {}, id="mapping-equality"),
        pytest.param(lambda p: p["tuple"], id="tuple-as-is"),
        pytest.param(lambda p: p["flag"], id="null"),
    ],
)
def test_a_read_matches_the_sdk_proxy(read: Any) -> None:
    sdk, lazy = _both()
    assert _outcome(lambda: read(lazy)) == _outcome(lambda: read(sdk))


def test_a_container_read_twice_is_the_same_object() -> None:
    props = wired_props(INPUTS)
    assert props["tags"] is props["tags"]
    assert props["networkInterfaces"][0] is props["networkInterfaces"][-5]


def test_writes_stay_in_the_view_not_the_capture() -> None:
    inputs = {"a": {"b": 1}}
    props: Any = wired_props(inputs)
    props["c"] = 2
    props["a"] = "x"
    assert (props["c"], props["a"], list(props)) == (2, "x", ["a", "c"])
    assert inputs == {"a": {"b": 1}}


def test_a_run_leaves_collection_on_and_keeps_no_stack(p5_small: Capture) -> None:
    assert gc.isenabled()
    evaluate(p5_small)
    assert gc.isenabled()
    assert rule._LAST_STACK == []
    gc.disable()
    try:
        evaluate(p5_small)
        assert not gc.isenabled()  # a caller's choice is left as it was
    finally:
        gc.enable()
