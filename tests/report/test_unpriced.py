"""Unpriced is never zero in a report or a diff: a cost that leaves items out says so, and names them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from aicluster.report import diff_markdown, render

UNPRICED = ["storage scratch (fsx-lustre)", "network aws-us-east-2: 1 x NAT gateway"]


@pytest.fixture
def partial(passing_doc: dict[str, Any]) -> dict[str, Any]:
    """The passing preview with a file system, a NAT gateway and the pool's root volumes unpriced."""
    doc = copy.deepcopy(passing_doc)
    doc["summary"]["unpriced"] = [*UNPRICED, "pool h100: root volumes"]
    doc["pools"][0]["unpriced"] = ["root volumes"]
    return doc


def test_markdown_marks_partial_costs_and_names_what_is_left_out(partial: dict[str, Any]) -> None:
    text = render(partial, "md")
    assert "| Cost, $/month | $171,295.64 + unpriced items |" in text
    assert "| Not in the cost (no price) | storage scratch (fsx-lustre); network aws-us-east-2: 1 x NAT gateway" in text
    assert "| $160,877.40 + unpriced items |" in text  # the pool row
    assert "$0.00" not in text


def test_html_marks_partial_costs(partial: dict[str, Any]) -> None:
    text = render(partial, "html")
    assert "not counted, no price: storage scratch (fsx-lustre)" in text
    assert "160,877.40 + unpriced items" in text
    # the headline card and the pool's bar say the figure is partial too (a new user saw them bare)
    assert '<div class="value">$171,295.64 + unpriced items</div>' in text
    assert "$160,877.40 + unpriced</text>" in text


def test_json_report_lists_the_unpriced_items(partial: dict[str, Any]) -> None:
    report = json.loads(render(partial, "json"))
    assert report["summary"]["unpriced"] == [*UNPRICED, "pool h100: root volumes"]
    assert report["pools"][0]["unpriced"] == ["root volumes"]


def test_diff_marks_partial_costs(passing_doc: dict[str, Any], partial: dict[str, Any]) -> None:
    text = diff_markdown(passing_doc, partial)
    total = next(line for line in text.splitlines() if line.startswith("| **Total**"))
    assert total.startswith(
        "| **Total** | $171,295.64 | $171,295.64 + unpriced items | $0.00 (priced parts only) (0.0%) |"
    )
    assert "no changes" not in text.splitlines()[0]  # an item that lost its price is a change


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_a_pool_with_no_price_at_all_is_unpriced_not_zero(passing_doc: dict[str, Any], fmt: str) -> None:
    doc = copy.deepcopy(passing_doc)
    doc["pools"][0].update(cost_usd_per_hour=None, cost_usd_per_month=None, unpriced=["instances", "root volumes"])
    doc["summary"]["unpriced"] = ["pool h100: 4 x p5.48xlarge on-demand", "pool h100: root volumes"]
    text = render(doc, fmt)
    if fmt == "json":
        assert json.loads(text)["pools"][0]["cost_usd_per_month"] is None
    else:
        assert "unpriced" in text
        assert "$0.00" not in text
        assert ">0.00<" not in text
    base = diff_markdown(passing_doc, doc)
    row = next(line for line in base.splitlines() if line.startswith("| h100 |"))
    assert row.startswith("| h100 | $160,877.40 | unpriced |")
