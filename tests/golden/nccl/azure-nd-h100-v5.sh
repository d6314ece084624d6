# /etc/profile.d/nccl.sh - managed by aicluster, do not edit: NCCL profile azure-ndv5 for Standard_ND96isr_H100_v5 (azure, infiniband)
# ND H100/H200 v5: relaxed ordering, the image's topology file, no CPU affinity from the VM's NUMA view
# Library versions: none recorded
# Login shells read this; NCCL core settings without a vendor script are in /etc/nccl.conf.
# CUDA device numbers match nvidia-smi and the topology file
export CUDA_DEVICE_ORDER="PCI_BUS_ID"
