"""A project of one's own: the pieces installed with the package that a project uses in place (the playbooks, the
policy pack, the example stack), and the files `aicluster init` writes, as `pulumi new` would.

The installed pieces lie beside the `aicluster` package: in site-packages when installed from the wheel, at the root
of this repository in a checkout (where they are the repository's own playbooks/ and policies/).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from aicluster import __version__

INSTALLED = Path(__file__).resolve().parent.parent
EXAMPLE_STACK = "p5-small"
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_POLICY_PACK_MAIN = '''"""aicluster's installed policy pack: `pulumi preview --policy-pack policy-pack`."""

import runpy

runpy.run_module("policies", run_name="__main__")
'''


def playbooks(project_root: Path) -> Path:
    """The playbooks directory: the project's own playbooks/ where it has a site.yml, else the installed ones."""
    own = project_root / "playbooks"
    return own if (own / "site.yml").is_file() else INSTALLED / "playbooks"


def policy_pack() -> Path:
    """The installed CrossGuard policy pack (PulumiPolicy.yaml and __main__.py)."""
    return INSTALLED / "policies"


def project_name(directory: Path) -> str:
    """A Pulumi project name (letters, digits, `-`, `_`, `.`) from the directory's name."""
    return _NOT_IN_A_NAME.sub("-", directory.resolve().name).strip("-.")[:100] or "aicluster"


def project_files(name: str) -> dict[str, str]:
    """The files of a new project, by path relative to its root, in the order they are written."""
    example = resources.files("aicluster").joinpath("templates", "project", "example-stack.yaml").read_text("utf-8")
    return {
        "Pulumi.yaml": f"""name: {name}
description: A GPU cluster described by aicluster stack files (stacks/Pulumi.<stack>.yaml).
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: .venv
stackConfigDir: stacks
""",
        "__main__.py": '''"""The Pulumi program: the installed aicluster's (stack -> spec -> plan -> AiCluster)."""

from aicluster.program import main

main()
''',
        f"stacks/Pulumi.{EXAMPLE_STACK}.yaml": example,
        "requirements.txt": f"aicluster=={__version__}\n",
        ".gitignore": ".venv/\n__pycache__/\n*.pyc\n.work/\nout/\n",
        # `pulumi preview --policy-pack policy-pack`: the installed pack, run in the project's virtualenv
        "policy-pack/PulumiPolicy.yaml": f"""\
description: "aicluster guardrails: cost, power, compliance and AI-fabric correctness for GPU clusters"
runtime:
  name: python
  options:
    virtualenv: ../.venv
version: {__version__}
""",
        "policy-pack/__main__.py": _POLICY_PACK_MAIN,
    }
