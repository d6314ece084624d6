# /etc/profile.d/nccl.sh - managed by aicluster, do not edit: NCCL profile aws-efa-ofi-1.7 for p5.48xlarge (aws, efa)
# EFA with libfabric >= 1.18 and aws-ofi-nccl >= 1.7: the plugin configures libfabric itself
# Library versions: aws-ofi-nccl 1.22.0, efa-installer 1.51.0, nccl 2.27.7
# Login shells read this; NCCL core settings without a vendor script are in /etc/nccl.conf.
# fork() in PyTorch data loaders fails with ENOMEM on huge pages; minor performance cost
export FI_EFA_USE_HUGE_PAGE="0"
