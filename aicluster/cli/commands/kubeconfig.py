"""`aicluster kubeconfig STACK`: the deployed Kubernetes stack's kubeconfig (a secret stack output), written to a
0600 file and never to the terminal."""

from __future__ import annotations

import argparse
from typing import Any

from .. import options, suggest
from ..console import escape, out
from ..exits import EXIT_OK, UsageError
from ..inputs import kubernetes_plan, read_json, work_dir
from ..stack_outputs import secret_outputs

NAME = "kubeconfig"
HELP = "write the deployed Kubernetes stack's kubeconfig (a secret stack output) to a 0600 file, never the terminal"
STACK = True

HEADER = "# aicluster kubeconfig for stack "  # first line of every kubeconfig `aicluster kubeconfig` writes


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_output(p, "where to write it (default: .work/<stack>/kubeconfig)")
    p.add_argument(
        "--outputs",
        metavar="FILE",
        help="read the stack outputs from FILE (pulumi stack output --json --show-secrets) instead of the Pulumi CLI",
    )
    options.add_force(p)


def _kubeconfig_text(value: Any, where: str) -> str:
    """The `kubeconfig` output as YAML text, checked to be a kubeconfig (never quoted back in an error)."""
    import yaml

    from aicluster.preview import COMPUTED, SECRET

    if value is None:
        raise UsageError(f"{where}: no `kubeconfig` output; has the stack been deployed (pulumi up)?")
    if value == SECRET:
        raise UsageError(
            f"{where}: the `kubeconfig` output is masked; read it with `pulumi stack output --json --show-secrets`"
        )
    if value == COMPUTED:
        raise UsageError(f"{where}: the `kubeconfig` output is not known before `pulumi up` (an offline preview)")
    if isinstance(value, dict):
        value = yaml.safe_dump(value, sort_keys=False)
    if not isinstance(value, str):
        raise UsageError(f"{where}: the `kubeconfig` output is not a kubeconfig (expected YAML text)")
    try:
        doc = yaml.safe_load(value)
    except yaml.YAMLError:
        doc = None
    if not isinstance(doc, dict) or not doc.get("clusters") or not doc.get("users"):
        raise UsageError(f"{where}: the `kubeconfig` output is not a kubeconfig (no clusters and users)")
    return value if value.endswith("\n") else value + "\n"


def run(args: argparse.Namespace) -> int:
    """Write the deployed stack's kubeconfig (a secret stack output) to a 0600 file; never to the terminal."""
    from aicluster.files import check_secret_target, write_atomic

    project, stack, plan = kubernetes_plan(
        args, "kubeconfig", "reach the cluster through its login node (the Slurm controller)"
    )
    if args.output in ("-", ""):
        raise UsageError("-o -: the kubeconfig is a secret and is only written to a file; give a file name")
    target = check_secret_target(
        args.output or (work_dir(project, stack.stack) / "kubeconfig"),
        f"{HEADER}{stack.stack}",
        f"aicluster kubeconfig {stack.stack}",
        "the kubeconfig (a secret)",
        force=args.force,
        parents=args.parents or not args.output,  # the default path's work directory is created; a typed one not
    )
    if args.outputs:
        outputs = read_json(args.outputs, "--outputs")
        if not isinstance(outputs, dict):
            raise UsageError(f"--outputs {args.outputs}: expected the JSON object of `pulumi stack output --json`")
        where = f"--outputs {args.outputs}"
    else:
        outputs = secret_outputs(project, stack.stack)
        where = f"stack {stack.stack}"
    deployed = outputs.get("cluster")
    if deployed is not None and deployed != plan.name:
        raise UsageError(
            f"{where}: these are the outputs of cluster {str(deployed)!r}, not of {plan.name} (stack "
            f"{stack.stack}): give the outputs of this stack"
        )
    text = _kubeconfig_text(outputs.get("kubeconfig"), where)
    header = f"{HEADER}{stack.stack}\n# rewritten by `aicluster kubeconfig`; keep your edits elsewhere\n"
    write_atomic(target, header + text, mode=0o600, flag="-o", secret=True, parents=args.parents or not args.output)
    shown = escape(str(target))
    use = suggest.line("kubectl", "get", "nodes", env={"KUBECONFIG": str(target)})
    out.print(f"wrote {shown} (mode 0600); use it with: {escape(use)}")
    return EXIT_OK
