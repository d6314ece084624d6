"""The `aicluster` console script and `python -m aicluster`.

The cyclic garbage collector is off for the process: one command allocates a bounded graph (a preview of 3,072
nodes peaks at about 145 MB either way), while with it on, every full collection walks the tens of thousands
of classes the provider SDKs define, which cost 0.15-0.4 s of a cold preview. Reference counting still frees
everything that is not in a cycle. A command that runs long and leaves cycles behind turns it back on
(`tune`: an Ansible event per task and host; `collect_cycles` in aicluster/cli/commands/tune.py). This module is
only the entry point: importing aicluster.cli (as the tests and other programs do) leaves the collector alone.
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from aicluster.cli.app import entry

    entry()


if __name__ == "__main__":
    main()
