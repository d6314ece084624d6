# /etc/profile.d/nccl.sh - managed by aicluster, do not edit: NCCL profile gcp-a3ultra-gib for a4-highgpu-8g (gcp, gpudirect-rdma)
# A3 Ultra, A4 and A4X, GPUDirect RDMA over RoCE with NCCL/gIB: Google's set_nccl_env.sh, then the gVNIC names
# Library versions: nccl-gib 1.1.2
# Login shells read this; NCCL core settings without a vendor script are in /etc/nccl.conf.
export NCCL_LIB_DIR="/usr/local/gib/scripts"
# The vendor's profile (bash only); the settings below it override what it sets.
if [ -n "${BASH_VERSION:-}" ] && [ -r /usr/local/gib/scripts/set_nccl_env.sh ]; then
  . /usr/local/gib/scripts/set_nccl_env.sh
fi
# NCCL and the gIB net plugin of the nccl-gib package
export LD_LIBRARY_PATH="/usr/local/gib/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# after the script; fail loudly instead of falling back to sockets
export NCCL_NET="gIB"
# bootstrap over the two gVNICs
export NCCL_SOCKET_IFNAME="enp0s19,enp192s20"
