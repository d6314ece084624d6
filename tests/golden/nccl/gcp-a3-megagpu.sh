# /etc/profile.d/nccl.sh - managed by aicluster, do not edit: NCCL profile gcp-a3mega-tcpxo for a3-megagpu-8g (gcp, gpudirect-tcpxo)
# A3 Mega, GPUDirect-TCPXO (FasTrak) over 8 GPU NICs: the plugin's own profile, then the NIC names
# Library versions: nccl 2.28.7
# Login shells read this; NCCL core settings without a vendor script are in /etc/nccl.conf.
# the vendor script refuses to run without it
export NCCL_LIB_DIR="/var/lib/tcpxo/lib64"
# The vendor's profile (bash only); the settings below it override what it sets.
if [ -n "${BASH_VERSION:-}" ] && [ -r /var/lib/tcpxo/lib64/nccl-env-profile.sh ]; then
  . /var/lib/tcpxo/lib64/nccl-env-profile.sh
fi
export NCCL_FASTRAK_CTRL_DEV="enp0s12"
export NCCL_FASTRAK_IFNAME="enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0"
# after the script, which sets it too (the environment wins over nccl.conf)
export NCCL_SOCKET_IFNAME="enp0s12"
export NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY="/dev/aperture_devices"
