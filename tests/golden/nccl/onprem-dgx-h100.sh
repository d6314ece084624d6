# /etc/profile.d/nccl.sh - managed by aicluster, do not edit: NCCL profile onprem-dgx-h100-ib for dgx-h100 (onprem, infiniband)
# DGX H100/H200 on an InfiniBand compute fabric: NCCL over the 8 compute HCAs (the OSFP rails) only
# Library versions: nccl 2.30.7
# Login shells read this; NCCL core settings without a vendor script are in /etc/nccl.conf.
# No environment settings for this platform: see /etc/nccl.conf.
