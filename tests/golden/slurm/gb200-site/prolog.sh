#!/bin/bash
# Rendered by aicluster from the plan of cluster gb200-site; do not edit.
# Slurm Prolog (PrologFlags=Alloc: as root on every node of a job, before the job starts). GPU nodes run
# DCGM diagnostics level 1 (deployment checks, seconds); on a failure the node is drained with the reason
# and the non-zero exit makes Slurm requeue the job on other nodes.
set -u
# slurmd runs this with no PATH
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
node="${SLURMD_NODENAME:?slurmd sets SLURMD_NODENAME}"

drain() {
  echo "aicluster prolog: ${node}: $1" >&2
  scontrol update nodename="${node}" state=drain reason="prolog: $1"
  exit 1
}

# GPUs per node of the node's pool (node names are <pool>-<index>); 0: no GPUs (TPU, Trainium)
case "${node%-*}" in
  gb200) gpus_expected=4 ;;
  *) gpus_expected=0 ;;
esac
[ "${gpus_expected}" -eq 0 ] && exit 0

command -v dcgmi >/dev/null 2>&1 || drain "dcgmi not found"
if ! result="$(timeout 300 dcgmi diag -r 1 2>&1)" || grep -qw "Fail" <<<"${result}"; then
  drain "dcgmi diag -r 1 failed"
fi
exit 0
