# /etc/profile.d/nccl.sh - managed by aicluster, do not edit: NCCL profile aws-efa-ofi-legacy for p5.48xlarge (aws, efa)
# EFA with aws-ofi-nccl <= 1.5: provider and protocol must be forced (below p5's minimum of 1.7.2)
# Library versions: aws-ofi-nccl 1.5.0, efa-installer 1.51.0, nccl 2.27.7
# Login shells read this; NCCL core settings without a vendor script are in /etc/nccl.conf.
export FI_PROVIDER="efa"
# fork() in PyTorch data loaders fails with ENOMEM on huge pages; minor performance cost
export FI_EFA_USE_HUGE_PAGE="0"
# GPUDirect RDMA: the preset for aws-ofi-nccl < 1.7 on p4/p5
export FI_EFA_USE_DEVICE_RDMA="1"
