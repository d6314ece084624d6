"""Moved to aicluster.schedulers.kubernetes.render (each scheduler renders from its own folder). What aicluster/cli.py
imports from here stays until it imports it from there; nothing else may."""

from aicluster.schedulers.kubernetes.render import ACCEPTANCE_SSH_SECRET, acceptance_jobset, acceptance_ssh_secret

__all__ = ["ACCEPTANCE_SSH_SECRET", "acceptance_jobset", "acceptance_ssh_secret"]
