"""aicluster-repair refuses a bad configuration before it touches Slurm or a BMC: one line per problem naming the
file, the field, the value and the fix, exit status 2, no traceback, and never a password."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aicluster.repair.cli import main

GOOD: dict[str, Any] = {"cluster": "llm-dev", "actions": {"XID79": "power_cycle"}}


def run(tmp_path: Path, data: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "aicluster-repair.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    code = main(["--config", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.replace(str(path), "CONFIG")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            {"max_share_in_repair": 1.5},
            "CONFIG: max_share_in_repair: got 1.5; Input should be less than or equal to 1",
            id="share-over-one",
        ),
        pytest.param(
            {"actions": {"XID79": "explode"}},
            "CONFIG: actions.XID79: got 'explode'; Input should be "
            "'reset_gpu', 'reboot', 'power_cycle', 'replace' or 'hold'",
            id="unknown-action",
        ),
        pytest.param(
            {"actions": {"xid79": "reboot"}},
            "CONFIG: actions.xid79 (the key): got 'xid79'; a drain reason code: "
            "capitals, digits and '_' (e.g. `XID79`, `GPU_COUNT`)",
            id="code-grammar",
        ),
        pytest.param(
            {"repeat_count": 0},
            "CONFIG: repeat_count: got 0; Input should be greater than or equal to 1",
            id="repeat-zero",
        ),
        pytest.param(
            {"state_dir": "relative/dir"},
            "CONFIG: state_dir: got 'relative/dir'; an absolute path with no "
            "control character (e.g. `/var/lib/aicluster-repair`)",
            id="relative-state-dir",
        ),
        pytest.param(
            {"bmcs": {"dgx-000": {"url": "http://10.0.0.5", "username": "admin", "password_file": "/p"}}},
            "CONFIG: bmcs.dgx-000.url: got 'http://10.0.0.5'; plain http only to this machine "
            "(127.0.0.1, ::1, localhost); a BMC is reached with https",
            id="plain-http-bmc",
        ),
        pytest.param(
            {"drain_everything": True},
            "CONFIG: drain_everything: not a field of the configuration (remove it)",
            id="unknown-field",
        ),
    ],
)
def test_a_bad_configuration_is_refused_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    code, err = run(tmp_path, {**GOOD, **change}, capsys)
    assert code == 2
    assert message in err
    assert not (tmp_path / "state").exists()


def test_a_password_in_a_bmc_url_is_never_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bmc = {"url": "https://admin:hunter2@10.0.0.5/redfish/v1/Systems/1?token=abc", "username": "admin",
           "password_file": "/etc/aicluster/bmc/bmcPassword"}  # fmt: skip
    code, err = run(tmp_path, {**GOOD, "bmcs": {"dgx-000": bmc}}, capsys)
    assert code == 2
    assert "CONFIG: bmcs.dgx-000.url: got 'https://***@10.0.0.5/redfish/v1/Systems/1'" in err
    assert "hunter2" not in err
    assert "abc" not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{", "CONFIG: not readable JSON", id="not-json"),
        pytest.param("[]", "CONFIG: (top level): got []; Input should be a valid dictionary", id="not-an-object"),
    ],
)
def test_an_unreadable_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    code, err = run(tmp_path, text, capsys)
    assert code == 2
    assert message in err


def test_a_missing_file_says_where_it_comes_from(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "nope.json")]) == 2
    assert "nope.json: not found (`aicluster inventory` renders it with the Slurm files; or pass --config)" in (
        capsys.readouterr().err
    )


def test_the_published_schema_is_current_and_accepts_the_rendered_configuration() -> None:
    import jsonschema

    from aicluster.catalog import load_catalog
    from aicluster.render.repair import repair_json
    from aicluster.repair.config import json_schema
    from tests.helpers import hybrid_site_cluster, plan_of

    root = Path(__file__).resolve().parents[2]
    published = json.loads((root / "schema" / "aicluster-repair.schema.json").read_text())
    assert published == json_schema(), "run `make schema` and commit the result"
    rendered = json.loads(repair_json(plan_of(load_catalog(), hybrid_site_cluster())))
    jsonschema.validate(rendered, published, cls=jsonschema.Draft202012Validator)
