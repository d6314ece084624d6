import sys

from aicluster.repair.cli import main

sys.exit(main())
