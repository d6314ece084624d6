#!/bin/bash
# Rendered by aicluster from the plan of cluster gb200-site; do not edit.
# Slurm HealthCheckProgram (as root every HealthCheckInterval on idle nodes, drained ones included, and once at
# slurmd start): aicluster-health's periodic layer (its first run after a boot is the boot layer). It also resumes a
# node whose drain reason is aicluster's own once the check that set it passes.
set -u
# slurmd runs this with no PATH; aicluster-health is installed in /opt/aicluster/bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/aicluster/bin
node="${SLURMD_NODENAME:?slurmd sets SLURMD_NODENAME}"

# drain CODE MESSAGE: reason "aicluster-health:CODE healthcheck: MESSAGE", the grammar of aicluster/health/reasons.py
# (one printable line without "=", which scontrol would read as another key)
drain() {
  local message
  message="$(printf '%s' "healthcheck: ${2//=/:}" | tr -c '[:print:]' ' ' | cut -c1-200)"
  echo "aicluster healthcheck: ${node}: $1 ${message}" >&2
  # slurmd's check at boot, before the node registers after `scontrol reboot` (DOWN+REBOOT_ISSUED): the
  # registration would clear a drain given now, so the reboot is ended first (aicluster/health/slurm.py drain)
  if scontrol show node "${node}" 2>/dev/null | grep -q 'State=[^ ]*REBOOT_ISSUED'; then
    scontrol update nodename="${node}" state=resume
  fi
  scontrol update nodename="${node}" state=drain reason="aicluster-health:$1 ${message}"
  exit 1
}

# aicluster-health --layer periodic: that layer's checks (aicluster/health/checks.py LAYER_CHECKS); on a
# fault it drains the node itself with an aicluster-health: reason (never replacing someone else's) and exits 1.
# A node tuned without the slurm_health role (which installs it) keeps only the checks below, and says so in
# slurmd's log.
if command -v aicluster-health >/dev/null 2>&1; then
  aicluster-health --layer periodic --config /etc/slurm/aicluster-health.json || exit 1
else
  echo "aicluster healthcheck: ${node}: aicluster-health not installed; its checks are skipped" >&2
fi

# GPUs per node of the node's pool (node names are <pool>-<index>); 0: no GPUs (TPU, Trainium)
case "${node%-*}" in
  gb200) gpus_expected=4 ;;
  *) gpus_expected=0 ;;
esac
[ "${gpus_expected}" -eq 0 ] && exit 0

# The GPU count again, for a node without aicluster-health (same code: the checker clears it once it passes)
command -v nvidia-smi >/dev/null 2>&1 || drain TOOL_MISSING "nvidia-smi not found"
found="$(nvidia-smi --list-gpus 2>/dev/null | grep -c '^GPU ')"
[ "${found}" -eq "${gpus_expected}" ] || drain GPU_COUNT "expected ${gpus_expected} GPUs, nvidia-smi lists ${found}"

# Rack-scale pools: the node's NVLink domain must be whole. The IMEX daemon answers READY (nvidia-imex-ctl -q needs
# IMEX_CMD_ENABLED=1, as the nvidia_imex role sets) and every GPU has joined the NVLink fabric: in nvidia-smi -q's
# Fabric section, State "Completed" and Status "Success" (a GPU still "In Progress", or failed, cannot use MNNVL).
case "${node%-*}" in
  gb200) nvlink_domain=1 ;;
  *) nvlink_domain=0 ;;
esac
if [ "${nvlink_domain}" -eq 1 ]; then
  command -v nvidia-imex-ctl >/dev/null 2>&1 || drain TOOL_MISSING "nvidia-imex-ctl not found (IMEX)"
  imex="$(timeout 10 nvidia-imex-ctl -q 2>/dev/null | tr -d '[:space:]')"
  [ "${imex}" = "READY" ] || drain IMEX "IMEX daemon not READY (nvidia-imex-ctl -q: ${imex:-no answer})"
  joined="$(nvidia-smi -q 2>/dev/null | awk -F' *: *' '
    /^    Fabric *$/ { fabric = 1; next }
    fabric && /^    [^ ]/ { fabric = 0 }
    fabric && $1 == "        State" { state = $2 }
    fabric && $1 == "        Status" { if (state == "Completed" && $2 == "Success") ok++ }
    END { print ok + 0 }')"
  [ "${joined}" -eq "${gpus_expected}" ] ||
    drain NVLINK_FABRIC "NVLink fabric: ${joined} of ${gpus_expected} GPUs joined (nvidia-smi -q Fabric State/Status)"
fi
exit 0
