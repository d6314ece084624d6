#!/bin/bash
# Rendered by aicluster from the plan of cluster gb200-site; do not edit.
# Slurm Prolog (PrologFlags=Alloc: as root on every node of a job, before the job starts). GPU nodes run
# DCGM diagnostics level 1 (deployment checks, seconds); on a failure the node is drained with the reason
# and the non-zero exit makes Slurm requeue the job on other nodes.
set -u
# slurmd runs this with no PATH; aicluster-health is installed in /opt/aicluster/bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/aicluster/bin
node="${SLURMD_NODENAME:?slurmd sets SLURMD_NODENAME}"

# drain CODE MESSAGE: reason "aicluster-health:CODE prolog: MESSAGE", the grammar of aicluster/health/reasons.py
# (one printable line without "=", which scontrol would read as another key)
drain() {
  local message
  message="$(printf '%s' "prolog: ${2//=/:}" | tr -c '[:print:]' ' ' | cut -c1-200)"
  echo "aicluster prolog: ${node}: $1 ${message}" >&2
  scontrol update nodename="${node}" state=drain reason="aicluster-health:$1 ${message}"
  exit 1
}

# aicluster-health --layer prolog: that layer's checks (aicluster/health/checks.py LAYER_CHECKS); on a
# fault it drains the node itself with an aicluster-health: reason (never replacing someone else's) and exits 1.
# A node tuned without the slurm_health role (which installs it) keeps only the checks below, and says so in
# slurmd's log.
if command -v aicluster-health >/dev/null 2>&1; then
  aicluster-health --layer prolog --config /etc/slurm/aicluster-health.json || exit 1
else
  echo "aicluster prolog: ${node}: aicluster-health not installed; its checks are skipped" >&2
fi

# GPUs per node of the node's pool (node names are <pool>-<index>); 0: no GPUs (TPU, Trainium)
case "${node%-*}" in
  gb200) gpus_expected=4 ;;
  *) gpus_expected=0 ;;
esac
[ "${gpus_expected}" -eq 0 ] && exit 0

command -v dcgmi >/dev/null 2>&1 || drain TOOL_MISSING "dcgmi not found"
if ! result="$(timeout 300 dcgmi diag -r 1 2>&1)" || grep -qw "Fail" <<<"${result}"; then
  drain DCGM_DIAG "dcgmi diag -r 1 failed"
fi

# Rack-scale pools on a Slurm without switch/nvidia_imex (before 24.05): CUDA refuses a process without an IMEX
# channel, so the job's nodes get channel 0 (the driver's device; /dev entries do not survive a reboot). Every job
# of the NVLink domain shares it: no isolation between users, as ParallelCluster's prolog warns. From 24.05 Slurm
# gives each job step its own channel instead.
case "${node%-*}" in
  gb200) imex_channel=1 ;;
  *) imex_channel=0 ;;
esac
if [ "${imex_channel}" -eq 1 ] && [ ! -c /dev/nvidia-caps-imex-channels/channel0 ]; then
  major="$(awk '$2 == "nvidia-caps-imex-channels" { print $1 }' /proc/devices)"
  [ -n "${major}" ] || drain IMEX "no nvidia-caps-imex-channels in /proc/devices (NVIDIA driver without IMEX)"
  mkdir -p /dev/nvidia-caps-imex-channels &&
    mknod -m 666 /dev/nvidia-caps-imex-channels/channel0 c "${major}" 0 ||
    drain IMEX "could not create IMEX channel 0"
fi
exit 0
