#!/bin/bash
# Rendered by aicluster from the plan of cluster tri; do not edit.
# Slurm HealthCheckProgram (as root every HealthCheckInterval on idle nodes): a GPU node must show the
# pool's GPU count; a node that does not is drained with the counts in the reason.
set -u
# slurmd runs this with no PATH
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
node="${SLURMD_NODENAME:?slurmd sets SLURMD_NODENAME}"

drain() {
  echo "aicluster healthcheck: ${node}: $1" >&2
  scontrol update nodename="${node}" state=drain reason="healthcheck: $1"
  exit 1
}

# GPUs per node of the node's pool (node names are <pool>-<index>); 0: no GPUs (TPU, Trainium)
case "${node%-*}" in
  p5) gpus_expected=8 ;;
  nd) gpus_expected=8 ;;
  a3) gpus_expected=8 ;;
  *) gpus_expected=0 ;;
esac
[ "${gpus_expected}" -eq 0 ] && exit 0

command -v nvidia-smi >/dev/null 2>&1 || drain "nvidia-smi not found"
found="$(nvidia-smi --list-gpus 2>/dev/null | grep -c '^GPU ')"
[ "${found}" -eq "${gpus_expected}" ] || drain "expected ${gpus_expected} GPUs, nvidia-smi lists ${found}"
exit 0
