"""The CLI's exit codes and the two exceptions a command raises to end with one (pip's status_codes).

0 success; 1 the program or a check failed (a mandatory policy, a host that failed, a cloud); 2 bad input (stack
file, arguments). app.py maps these and the core's own errors to the codes, in one table.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class UsageError(Exception):
    """Bad input the user can fix (an argument, a file they named): exit 2 with the reason."""


class OperationFailed(Exception):
    """Something outside the input failed (a cloud, a plugin): exit 1 with the reason."""
