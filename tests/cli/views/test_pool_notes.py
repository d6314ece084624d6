"""The pool notes the plan and preview print under the tables: what a GCP pool's NICs are."""

from __future__ import annotations

from aicluster.catalog import Catalog
from aicluster.cli.views.pool_notes import pool_notes
from tests.helpers import a4x_max_pool, gcp_cluster, plan_of


def test_a4x_max_notes_say_idpf_host_nics_and_ipv6_mrdma(catalog: Catalog) -> None:
    plan = plan_of(catalog, gcp_cluster(pools=[a4x_max_pool()], storage=[]))
    (nics, *_) = pool_notes(plan.pools[0], stack_images=False)
    assert nics.startswith("gb300: 10 NICs per VM (2 IDPF + 8 MRDMA IPv6-only, gpudirect-rdma); ")
