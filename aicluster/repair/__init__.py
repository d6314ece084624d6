"""aicluster-repair: repair the nodes aicluster-health drained, on the Slurm controller, every minute.

It reads the nodes drained with aicluster's reasons (`aicluster-health:<CODE> <detail>`, aicluster/health/reasons.py)
and once a node has no job left (IDLE+DRAIN or DOWN+DRAIN, never DRAINING or COMPLETING, as ParallelCluster's
clustermgtd waits) it repairs it as the catalog says for the reason's code (aicluster-repair.json, rendered from
data/health.yaml): a Slurm reboot, a BMC power-cycle through Redfish, a cloud replace through the burst groups, or a
hold for a person. Someone else's drain is never touched. Two guard rails, with their state in a state directory:
a circuit breaker (never more than max_share_in_repair of the cluster in repair at once) and a repeat-offender
rule (a node repaired repeat_count times within repeat_window_s is held). See cli.py for the loop.
"""
