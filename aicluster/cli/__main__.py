"""`python -m aicluster.cli`: the console script's entry, without its process-wide settings (aicluster/__main__.py)."""

from aicluster.cli.app import entry

if __name__ == "__main__":
    entry()
