"""Slurm cloud bursting: the ResumeProgram, SuspendProgram and the reconciling sync that slurmctld's power saving
runs to grow and shrink cloud groups (Auto Scaling groups, managed instance groups, VM scale sets) for the
State=CLOUD nodes of slurm.conf.

Programs (console scripts; also `python -m aicluster.burst.<module>`):
- `aicluster-resume [--config PATH] HOSTLIST`    (resume.py)  slurm.conf ResumeProgram
- `aicluster-suspend [--config PATH] HOSTLIST`   (suspend.py) slurm.conf SuspendProgram
- `aicluster-burst-sync [--config PATH]`         (sync.py)    every minute from a timer/cron

The configuration (config.py) maps node sets to cloud groups. The package is engine-free: it never imports Pulumi,
and imports each cloud SDK only when a node set of that provider is used.
"""
