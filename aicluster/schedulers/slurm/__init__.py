"""Slurm: a controller (slurmctld on a cloud VM or a site host) with the pools as partitions."""
