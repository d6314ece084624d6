"""Node health checks for Slurm nodes, in layers, with drain reasons as an interface.

One program, `aicluster-health --layer boot|prolog|epilog|periodic [--config PATH]` (also `python -m
aicluster.health`), run as root on a node by slurmd: from the HealthCheckProgram (periodic; the first run after a
boot is promoted to the boot layer), the Prolog and the Epilog. It reads a JSON configuration that `aicluster
inventory` renders from the plan and the catalog (expected GPUs per pool, the XID table, fabric port rates), runs
the checks of its layer, and:

- drains the node (`scontrol update nodename=N state=DRAIN reason=...`) with a reason of the grammar in reasons.py
  (`aicluster-health:XID79 GPU 0000:3B:00.0 ...`) when a check fails or cannot run; a node someone else drained
  keeps its reason;
- resumes the node only when its current reason is aicluster's own and the check that set it passed (event codes
  such as XIDs are cleared only by the boot layer, after a reboot).

Repair (cloud replace, BMC power-cycle) is not done here: a drained node with a parseable reason is the seam a
repair loop reads (`aicluster.health.reasons.parse_reason`).

The package is self-contained: it imports only the standard library and pydantic, nothing else of aicluster, so it
can be copied onto a node alone.
"""
