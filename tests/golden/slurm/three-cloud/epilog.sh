#!/bin/bash
# Rendered by aicluster from the plan of cluster tri; do not edit.
# Slurm Epilog (as root on every node of a job, after it ends). On GPU nodes: processes still holding the
# job's GPUs 30 s after the job drain the node; after a failed job, DCGM diagnostics level 2 (about two
# minutes, on the job's GPUs) tells a broken GPU from a broken program and drains the node on a failure.
set -u
# slurmd runs this with no PATH; aicluster-health is installed in /opt/aicluster/bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/aicluster/bin
node="${SLURMD_NODENAME:?slurmd sets SLURMD_NODENAME}"

# drain CODE MESSAGE: reason "aicluster-health:CODE epilog: MESSAGE", the grammar of aicluster/health/reasons.py
# (one printable line without "=", which scontrol would read as another key)
drain() {
  local message
  message="$(printf '%s' "epilog: ${2//=/:}" | tr -c '[:print:]' ' ' | cut -c1-200)"
  echo "aicluster epilog: ${node}: $1 ${message}" >&2
  scontrol update nodename="${node}" state=drain reason="aicluster-health:$1 ${message}"
  exit 1
}

# aicluster-health --layer epilog: that layer's checks (aicluster/health/checks.py LAYER_CHECKS); on a
# fault it drains the node itself with an aicluster-health: reason (never replacing someone else's) and exits 1.
# A node tuned without the slurm_health role (which installs it) keeps only the checks below, and says so in
# slurmd's log.
if command -v aicluster-health >/dev/null 2>&1; then
  aicluster-health --layer epilog --config /etc/slurm/aicluster-health.json || exit 1
else
  echo "aicluster epilog: ${node}: aicluster-health not installed; its checks are skipped" >&2
fi

# GPUs per node of the node's pool (node names are <pool>-<index>); 0: no GPUs (TPU, Trainium)
case "${node%-*}" in
  p5) gpus_expected=8 ;;
  nd) gpus_expected=8 ;;
  a3) gpus_expected=8 ;;
  *) gpus_expected=0 ;;
esac
[ "${gpus_expected}" -eq 0 ] && exit 0
job_gpus="${SLURM_JOB_GPUS:-}"  # GPU ids of this job, e.g. "0,1"; empty: the job had no GPUs
[ -z "${job_gpus}" ] && exit 0

command -v nvidia-smi >/dev/null 2>&1 || drain TOOL_MISSING "nvidia-smi not found"
left=""
for _ in $(seq 30); do
  left="$(nvidia-smi -i "${job_gpus}" --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr '\n' ' ')"
  [ -z "${left// /}" ] && break
  sleep 1
done
[ -n "${left// /}" ] && drain GPU_PROCESSES "processes ${left% } still on GPUs ${job_gpus} after job ${SLURM_JOB_ID:-?}"

if [ "${SLURM_JOB_EXIT_CODE:-0}" != "0" ]; then
  command -v dcgmi >/dev/null 2>&1 || drain TOOL_MISSING "dcgmi not found"
  if ! result="$(timeout 600 dcgmi diag -r 2 -i "${job_gpus}" 2>&1)" || grep -qw "Fail" <<<"${result}"; then
    drain DCGM_DIAG "dcgmi diag -r 2 failed on GPUs ${job_gpus} after job ${SLURM_JOB_ID:-?}"
  fi
fi
exit 0
