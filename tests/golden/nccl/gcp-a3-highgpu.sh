# /etc/profile.d/nccl.sh - managed by aicluster, do not edit: NCCL profile gcp-a3high-tcpx for a3-highgpu-8g (gcp, gpudirect-tcpx)
# A3 High, GPUDirect-TCPX over 4 GPU NICs (RxDM must run on the node)
# Library versions: none recorded
# Login shells read this; NCCL core settings without a vendor script are in /etc/nccl.conf.
# the TCPX net plugin (libnccl-net.so)
export LD_LIBRARY_PATH="/var/lib/tcpx/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_GPUDIRECTTCPX_CTRL_DEV="enp0s12"
export NCCL_GPUDIRECTTCPX_SOCKET_IFNAME="enp6s0,enp12s0,enp134s0,enp140s0"
export NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS="500000"
# transmit threads on the CPUs of each GPU NIC's NUMA node
export NCCL_GPUDIRECTTCPX_TX_BINDINGS="enp6s0:8-21,112-125;enp12s0:8-21,112-125;enp134s0:60-73,164-177;enp140s0:60-73,164-177"
# receive threads on the CPUs of each GPU NIC's NUMA node
export NCCL_GPUDIRECTTCPX_RX_BINDINGS="enp6s0:22-35,126-139;enp12s0:22-35,126-139;enp134s0:74-87,178-191;enp140s0:74-87,178-191"
