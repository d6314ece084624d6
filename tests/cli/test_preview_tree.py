"""`aicluster preview STACK --tree`: the resources by name and type, nested under their parents."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from aicluster.cli.views.policy import resource_tree
from tests.conftest import run_cli


def test_preview_tree_nests_resources_under_their_components(project: Path) -> None:
    proc = run_cli("-C", str(project), "preview", "good", "--tree")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index("pulumi:pulumi:Stack good")
    assert lines[start - 1].startswith("Resources (")
    assert lines[start - 1].endswith(") in preview of good:")
    tree = lines[start + 1 : lines.index("Pools", start)]
    assert tree[0] == "├── aicluster:index:AiCluster llm-dev (component)"
    pool = tree.index("│   ├── aicluster:aws:GpuPool llm-dev-h100 (component)")
    assert tree[pool + 1 : pool + 4] == [
        "│   │   ├── aws:autoscaling/group:Group llm-dev-h100-asg",
        "│   │   ├── aws:ec2/launchTemplate:LaunchTemplate llm-dev-h100-lt",
        "│   │   └── aws:ec2/placementGroup:PlacementGroup llm-dev-h100-pg",
    ]
    assert tree[-1].startswith("└── pulumi:providers:aws ")
    assert "aws:ec2/vpc:Vpc llm-dev-us-east-1-vpc" in proc.stdout


def resource(urn: str, parent: str | None, custom: bool = True) -> SimpleNamespace:
    return SimpleNamespace(urn=urn, type=f"t:{urn}", name=urn, parent=parent, custom=custom)


def test_tree_keeps_order_escapes_markup_and_hangs_orphans_from_the_root() -> None:
    resources = [
        resource("a", None, custom=False),
        resource("[red]b[/]", "a"),
        resource("c", "gone"),  # its parent (the stack) is not a registered resource
        resource("d", "a"),
    ]
    console = Console(width=100, record=True, color_system=None)
    console.print(resource_tree("s", resources))
    assert console.export_text().splitlines() == [
        "pulumi:pulumi:Stack s",
        "├── t:a a (component)",
        "│   ├── t:[red]b[/] [red]b[/]",
        "│   └── t:d d",
        "└── t:c c",
    ]
