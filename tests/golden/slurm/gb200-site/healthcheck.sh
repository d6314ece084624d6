#!/bin/bash
# Rendered by aicluster from the plan of cluster gb200-site; do not edit.
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
  gb200) gpus_expected=4 ;;
  *) gpus_expected=0 ;;
esac
[ "${gpus_expected}" -eq 0 ] && exit 0

command -v nvidia-smi >/dev/null 2>&1 || drain "nvidia-smi not found"
found="$(nvidia-smi --list-gpus 2>/dev/null | grep -c '^GPU ')"
[ "${found}" -eq "${gpus_expected}" ] || drain "expected ${gpus_expected} GPUs, nvidia-smi lists ${found}"

# Rack-scale pools: the node's NVLink domain must be whole. The IMEX daemon answers READY (nvidia-imex-ctl -q needs
# IMEX_CMD_ENABLED=1, as the nvidia_imex role sets) and every GPU has joined the NVLink fabric: in nvidia-smi -q's
# Fabric section, State "Completed" and Status "Success" (a GPU still "In Progress", or failed, cannot use MNNVL).
case "${node%-*}" in
  gb200) nvlink_domain=1 ;;
  *) nvlink_domain=0 ;;
esac
if [ "${nvlink_domain}" -eq 1 ]; then
  command -v nvidia-imex-ctl >/dev/null 2>&1 || drain "nvidia-imex-ctl not found (IMEX)"
  imex="$(timeout 10 nvidia-imex-ctl -q 2>/dev/null | tr -d '[:space:]')"
  [ "${imex}" = "READY" ] || drain "IMEX daemon not READY (nvidia-imex-ctl -q: ${imex:-no answer})"
  joined="$(nvidia-smi -q 2>/dev/null | awk -F' *: *' '
    /^    Fabric *$/ { fabric = 1; next }
    fabric && /^    [^ ]/ { fabric = 0 }
    fabric && $1 == "        State" { state = $2 }
    fabric && $1 == "        Status" { if (state == "Completed" && $2 == "Success") ok++ }
    END { print ok + 0 }')"
  [ "${joined}" -eq "${gpus_expected}" ] ||
    drain "NVLink fabric: ${joined} of ${gpus_expected} GPUs joined (nvidia-smi -q Fabric State/Status)"
fi
exit 0
