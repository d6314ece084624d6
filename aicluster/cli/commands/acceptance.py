"""`aicluster acceptance STACK`: the NCCL acceptance test of a Kubernetes stack, the JobSet and the SSH key Secret
(a fresh key pair) in one 0600 file. The Secret makes the file a secret: it goes only to a plain file, never to a
terminal, a pipe or through a link, and replaces only a file this command wrote for the stack (the kubeconfig's
rule, aicluster.files.check_secret_target)."""

from __future__ import annotations

import argparse
from typing import Any

from .. import options, suggest
from ..console import escape, out, print_warnings
from ..exits import EXIT_OK, UsageError
from ..inputs import kubernetes_plan, work_dir

NAME = "acceptance"
HELP = (
    "write the topology-aware NCCL acceptance JobSet of a Kubernetes stack and its SSH key Secret (kubectl apply -f it)"
)
STACK = True

HEADER = "# aicluster acceptance manifest for stack "  # first line of every file `aicluster acceptance` writes


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_output(
        p,
        "write it to FILE, mode 0600 (default: .work/STACK/nccl-acceptance.yaml); it holds a private key: never "
        "stdout, a terminal, a pipe or a link",
    )
    options.add_force(p)


def _ssh_key_pair() -> tuple[str, str]:
    """A fresh ed25519 key pair (OpenSSH private key, public key line), made in memory; never written elsewhere."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode("ascii") + " aicluster-acceptance\n"


def run(args: argparse.Namespace) -> int:
    import yaml

    from aicluster.files import check_secret_target, write_atomic
    from aicluster.schedulers.kubernetes.render import (
        ACCEPTANCE_SSH_SECRET,
        acceptance_compute_domains,
        acceptance_jobset,
        acceptance_ssh_secret,
    )

    project, stack, plan = kubernetes_plan(
        args, "acceptance", f"`{suggest.command(args, 'tune')}` runs the NCCL acceptance test on Slurm nodes"
    )
    if args.output in ("-", ""):
        raise UsageError(
            f"-o -: the manifest holds the Secret {ACCEPTANCE_SSH_SECRET} (an SSH private key) and is only written to "
            "a file; give a file name"
        )
    # checked before the key pair is made: a refusal has no key to show
    target = check_secret_target(
        args.output or (work_dir(project, stack.stack) / "nccl-acceptance.yaml"),
        f"{HEADER}{stack.stack}",
        f"aicluster acceptance {stack.stack}",
        f"this manifest (its Secret {ACCEPTANCE_SSH_SECRET} holds an SSH private key)",
        force=args.force,
        parents=args.parents or not args.output,  # the default path's work directory is created; a typed one not
    )
    print_warnings(plan)
    try:
        jobset = acceptance_jobset(plan)
    except ValueError as e:  # a fabric aicluster has no pinned test image for
        raise UsageError(f"{stack.source}: {e}") from None
    domains = acceptance_compute_domains(plan)  # rack-scale pools: one ComputeDomain per NVLink domain tested
    secret = acceptance_ssh_secret(plan, *_ssh_key_pair())

    class _Plain(yaml.SafeDumper):  # shared dicts (requests == limits) written out, not as &id001 anchors
        def ignore_aliases(self, data: Any) -> bool:
            return True

    header = f"{HEADER}{stack.stack}\n# rewritten by `aicluster acceptance` (a fresh key pair each run)\n"
    text = yaml.dump_all([secret, *domains, jobset], Dumper=_Plain, sort_keys=False)
    write_atomic(target, header + text, mode=0o600, flag="-o", secret=True, parents=args.parents or not args.output)
    shown = escape(str(target))
    name = jobset["metadata"]["name"]
    logs = f"jobs/{name}-{jobset['spec']['replicatedJobs'][0]['name']}-0"
    run_it = suggest.line("kubectl", "apply", "-f", str(target))
    follow = suggest.line("kubectl", "-n", jobset["metadata"]["namespace"], "logs", "-f", logs)
    out.print(
        f"wrote {shown} (mode 0600: the Secret {ACCEPTANCE_SSH_SECRET} with a fresh SSH key pair, "
        + (f"{len(domains)} ComputeDomain(s), one per NVLink domain, " if domains else "")
        + f"and the JobSet {escape(name)}); run it with: {escape(run_it)} && {escape(follow)}"
    )
    return EXIT_OK
