"""What the CLI's consoles print: warnings grouped and hidden by --quiet, and no control character from a user's
value ever reaching the terminal (aicluster/cli/console.py, aicluster/term.py)."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.markup import escape
from rich.table import Table

from aicluster.cli.console import group_warnings
from aicluster.term import SafeConsole, strip_control
from tests.cli.test_commands import BAD
from tests.conftest import run_cli, write_stack

# --- warnings: grouped, and --quiet ---------------------------------------------------------------------------


def test_warnings_are_grouped_under_one_header() -> None:
    proc = run_cli("validate", "azure-nd-h100-250")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "warning: 3 warnings (--quiet hides them)"
    assert sum("warning" in line for line in lines) == 1
    assert sum("storage[0] (datasets)" in line for line in lines) == 1  # two warnings, one subject line
    assert "  - pools[0] (h100): 250 VMs exceed one InfiniBand domain" in proc.stderr


def test_items_with_the_same_warning_share_a_line() -> None:
    warnings = [
        "pools[0] (a) has no zone; placed in us-east-1a",
        "no hyperdisk-balanced price for us-central1 in the catalog",
        "pools[1] (b) has no zone; placed in us-east-1a",
        "storage[0] (s): 1 TiB is small",
        "storage[0] (s): not priced",
    ]
    assert group_warnings(warnings) == [
        ("pools[0] (a), pools[1] (b)", ["has no zone; placed in us-east-1a"]),
        ("", ["no hyperdisk-balanced price for us-central1 in the catalog"]),
        ("storage[0] (s)", ["1 TiB is small", "not priced"]),
    ]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--quiet", "validate", "azure-nd-h100-250"), id="global-before-the-command"),
        pytest.param(("validate", "azure-nd-h100-250", "-q"), id="after-the-command"),
        pytest.param(("-q", "plan", "azure-nd-h100-250"), id="plan"),
        pytest.param(("preview", "azure-nd-h100-250", "--quiet"), id="preview"),
    ],
)
def test_quiet_hides_warnings(args: tuple[str, ...]) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    assert "InfiniBand" not in proc.stderr


def test_quiet_keeps_errors(project: Path) -> None:
    write_stack(project, "bad", BAD)
    proc = run_cli("-C", str(project), "--quiet", "validate", "bad")
    assert proc.returncode == 2
    assert 'pools[0].market: got "spott"' in proc.stderr


# --- control characters never reach the terminal --------------------------------------------------------------

ESCAPES = "\x1b]0;pwned\x07", "\x1b[2J"


def test_control_characters_in_a_waiver_reason_never_reach_the_terminal(project: Path) -> None:
    text = (project / "stacks" / "Pulumi.good.yaml").read_text()
    over = text.replace("monthly_usd: 250000", "monthly_usd: 1000")
    waived = over.replace(
        "      allowed_regions: [us-east-1]",
        "      allowed_regions: [us-east-1]\n      waivers:\n"
        "        - {policy: aicluster-cluster-enforce-monthly-budget, resource: llm-dev,\n"
        '           reason: "title \\e]0;pwned\\a clear \\e[2J end", expires: "2099-12-31"}',
    )
    assert waived != over
    write_stack(project, "esc", waived)
    proc = run_cli("-C", str(project), "preview", "esc")
    assert "Traceback" not in proc.stderr
    shown = proc.stdout + proc.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", shown), repr(shown[-400:])
    if proc.returncode == 0:  # the waiver is shown, its text kept apart from the control characters
        assert "title ]0;pwned clear [2J end" in " ".join(proc.stdout.split())


def test_safe_console_strips_user_control_characters_and_keeps_its_own_styles() -> None:
    console = SafeConsole(file=io.StringIO(), force_terminal=True, color_system="standard", width=120, highlight=False)
    table = Table(title="findings")
    table.add_column("reason")
    table.add_row(f"reason {ESCAPES[0]} and {ESCAPES[1]} \x9b31m C1 \r\x00 done")
    console.print(table)
    console.print(f"[red]error:[/] {escape(ESCAPES[1])}bad\ttab")
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[31m" in text  # rich's own colour for [red]
    for bad in ("\x1b]0;", "\x07", "\x1b[2J", "\x9b", "\r", "\x00"):
        assert bad not in text
    assert "reason ]0;pwned and [2J 31m C1  done" in text
    assert "[2Jbad" in text
    assert strip_control("a\x1b[2Jb\nc\td\x7f") == "a[2Jb\nc\td"


def test_markdown_to_stdout_carries_no_control_characters(tmp_path: Path) -> None:
    doc = json.loads(run_cli("preview", "p5-small", "--json", "-").stdout)
    doc["warnings"] = [f"pool h100: {ESCAPES[0]}{ESCAPES[1]}"]
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(json.dumps(doc))
    head.write_text(json.dumps(doc))
    proc = run_cli("diff", str(base), str(head))
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", proc.stdout)


# --- emoji codes and markup in user text are printed as written (issue 31 #13) --------------------------------

# A waiver reason that rich would otherwise turn into an emoji, bold text, a MarkupError and (in HTML) a script.
RICH_TEXT = ":fire: [bold]x[/] <script>alert(1)</script> namespace:key: value"


def _waived_stack(project: Path, reason: str) -> str:
    text = (project / "stacks" / "Pulumi.good.yaml").read_text()
    over = text.replace("monthly_usd: 250000", "monthly_usd: 1000")
    waived = over.replace(
        "      allowed_regions: [us-east-1]",
        "      allowed_regions: [us-east-1]\n      waivers:\n"
        "        - {policy: aicluster-cluster-enforce-monthly-budget, resource: llm-dev,\n"
        f'           reason: {json.dumps(reason)}, expires: "2099-12-31"}}',
    )
    assert waived != over
    write_stack(project, "waived", waived)
    return "waived"


def _no_emoji(text: str) -> None:
    assert "\N{FIRE}" not in text, text[-600:]
    assert "\N{KEY}" not in text, text[-600:]


def test_the_consoles_print_emoji_codes_and_markup_in_user_text_as_written() -> None:
    from aicluster.cli.console import err, out

    for console in (out, err, SafeConsole(file=io.StringIO(), width=200)):
        with console.capture() as captured:
            console.print(f"[red]error:[/] {escape(RICH_TEXT)}")
            table = Table()
            table.add_column("reason")
            table.add_row(escape(RICH_TEXT))
            console.print(table)
        shown = captured.get()
        _no_emoji(shown)
        assert f"error: {RICH_TEXT}" in shown
        assert f"│ {RICH_TEXT} │" in shown


def test_a_waiver_reason_with_emoji_codes_and_markup_is_shown_as_written(project: Path) -> None:
    stack = _waived_stack(project, RICH_TEXT)
    proc = run_cli("-C", str(project), "preview", stack)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    _no_emoji(proc.stdout + proc.stderr)
    assert f"[waived until 2099-12-31: {RICH_TEXT}]" in " ".join(proc.stdout.split())


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_reports_show_emoji_codes_and_markup_of_a_waiver_reason_as_text(project: Path, fmt: str) -> None:
    stack = _waived_stack(project, RICH_TEXT)
    report = project / f"report.{fmt}"
    proc = run_cli("-C", str(project), "report", stack, "--format", fmt, "-o", str(report))
    assert proc.returncode == 0, proc.stderr
    text = report.read_text(encoding="utf-8")
    _no_emoji(text)
    assert "<script>" not in text
    if fmt == "html":
        assert ":fire: [bold]x[/] &lt;script&gt;alert(1)&lt;/script&gt; namespace:key: value" in text
    else:  # every Markdown metacharacter escaped: a renderer shows the reason as written
        from markdown_it import MarkdownIt

        html = MarkdownIt("commonmark").enable("table").render(text)
        assert ":fire: [bold]x[/] &lt;script&gt;alert(1)&lt;/script&gt; namespace:key: value" in html


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("[bold]x[/]:fire:", id="markup-and-emoji"),
        pytest.param("x[/]y", id="a-closing-tag"),
        pytest.param("a[b]c", id="a-style-name"),
    ],
)
def test_user_paths_with_markup_or_emoji_codes_are_printed_as_written(project: Path, where: str) -> None:
    odd = project / where
    odd.mkdir(parents=True)  # a "/" in it is a directory too: the path keeps the markup
    shutil.copy(project / "stacks" / "Pulumi.good.yaml", odd / "Pulumi.good.yaml")
    proc = run_cli("-C", str(project), "validate", str(odd / "Pulumi.good.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert f"ok {where}/Pulumi.good.yaml: cluster llm-dev" in proc.stdout  # shown relative to the project
    inventory = odd / "inventory"
    proc = run_cli("-C", str(project), "inventory", "good", "--out", str(inventory))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"wrote {inventory}/hosts.yml and " in proc.stdout
    _no_emoji(proc.stdout + proc.stderr)


def test_stack_names_are_listed_as_written(project: Path) -> None:
    write_stack(project, "a[b]:fire:", "config: {}\n")
    proc = run_cli("-C", str(project), "stacks")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["a[b]:fire:", "good"]
