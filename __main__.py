"""The Pulumi program: stack config -> spec -> plan -> AiCluster (aicluster/program.py). Run by `pulumi up` and,
under Pulumi's mocks, by `aicluster preview`."""

from aicluster.program import main

main()
