"""The Pulumi program: stack config -> spec -> plan -> AiCluster. Run by `pulumi up` and, under
Pulumi's mocks, by `aicluster preview`."""

import pulumi

from aicluster.catalog import load_catalog
from aicluster.plan import plan
from aicluster.spec import SpecError, parse_cluster
from components import AiCluster

stack_file = f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
try:
    spec = parse_cluster(pulumi.Config("aicluster").require_object("cluster"), stack_file)
    cluster_plan = plan(spec, load_catalog())
except SpecError as err:
    raise pulumi.RunError(str(SpecError(stack_file, err.problems))) from None

cluster = AiCluster(cluster_plan.name, {"plan": cluster_plan})
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
