from __future__ import annotations

import pytest

from aicluster.spec import ClusterSpec, SpecError, parse_cluster
from tests.helpers import azure_cluster, azure_pool, cluster, pool

SRC = "stacks/Pulumi.t.yaml"


def errors(data: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_cluster(data, SRC)
    return str(info.value).splitlines()


def test_minimal_cluster_gets_documented_defaults() -> None:
    spec = parse_cluster(cluster(storage=[], scheduler={"kind": "slurm"}), SRC)
    assert isinstance(spec, ClusterSpec)
    p = spec.pools[0]
    assert (p.market, p.reservation, p.root_volume_gib) == ("on-demand", None, 500)
    assert spec.network.supernet == "10.0.0.0/8"
    assert spec.scheduler.kind == "slurm"


def test_spec_is_frozen() -> None:
    spec = parse_cluster(cluster(), SRC)
    with pytest.raises(Exception, match="frozen"):
        spec.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            cluster(nme="x"),
            'stacks/Pulumi.t.yaml: nme: got "nme"; unknown key; allowed keys: name, tags, sites, pools, storage, '
            'scheduler, budgets, compliance, pricing, network, access, monitoring, workloads (did you mean "name"?)',
            id="unknown-top-level-key",
        ),
        pytest.param(
            cluster(pools=[pool(nodez=3)]),
            'stacks/Pulumi.t.yaml: pools[0].nodez: got "nodez"; unknown key; allowed keys: name, provider, region, '
            "zone, instance_type, nodes, rollout, market, reservation, reservations, placement_group, image, "
            "root_volume_gib "
            '(did you mean "nodes"?)',
            id="unknown-pool-key",
        ),
        pytest.param(
            cluster(pools=[pool(market="spott")]),
            'stacks/Pulumi.t.yaml: pools[0].market: got "spott"; allowed: on-demand, spot, capacity-block, '
            'reserved (did you mean "spot"?)',
            id="bad-market",
        ),
        pytest.param(
            cluster(pools=[pool(nodes=0)]),
            "stacks/Pulumi.t.yaml: pools[0].nodes: got 0; must be at least 1",
            id="zero-nodes",
        ),
        pytest.param(
            cluster(name="LLM_Train"),
            "stacks/Pulumi.t.yaml: name: got \"LLM_Train\"; must be a lowercase DNS label: a-z, 0-9 and '-', "
            "starting with a letter, not ending with '-'",
            id="bad-name",
        ),
        pytest.param(
            cluster(name="a" * 41),
            f'stacks/Pulumi.t.yaml: name: got "{"a" * 41}"; must be at most 40 characters',
            id="long-name",
        ),
        pytest.param(
            cluster(pools=[pool(market="capacity-block")]),
            "stacks/Pulumi.t.yaml: pools[0].reservation: market capacity-block needs the id (cr-...) of the "
            "Capacity Block you purchased",
            id="capacity-block-without-reservation",
        ),
        pytest.param(
            cluster(pools=[pool(market="spot", reservation="cr-0123abcd")]),
            'stacks/Pulumi.t.yaml: pools[0].reservation: got "cr-0123abcd"; a spot pool cannot target a capacity '
            "reservation; drop `reservation` or use market reserved (or capacity-block)",
            id="spot-with-reservation",
        ),
        pytest.param(
            cluster(pools=[pool(zone="us-west-2a")]),
            'stacks/Pulumi.t.yaml: pools[0].zone: got "us-west-2a"; not a zone of region us-east-1 '
            '(did you mean "us-east-1a"?)',
            id="zone-outside-region",
        ),
        pytest.param(
            cluster(
                pools=[{"name": "h100", "provider": "onprem", "site": "fra1", "instance_type": "dgx-h100", "nodes": 4}]
            ),
            'stacks/Pulumi.t.yaml: pools[0].site: got "fra1"; the stack has no sites: describe the data centre '
            "under sites (name, network, power, carbon_g_per_kwh)",
            id="onprem-pool-without-its-site",
        ),
        pytest.param(
            cluster(pools=[pool(provider="amazon")]),
            'stacks/Pulumi.t.yaml: pools[0].provider: got "amazon"; allowed: aws',
            id="provider-unknown",
        ),
        pytest.param(
            cluster(pools=[pool(), pool()]),
            'stacks/Pulumi.t.yaml: pools[1].name: got "h100"; duplicate of pools[0].name; pool names must be unique',
            id="duplicate-pool",
        ),
        pytest.param(
            cluster(
                storage=[
                    {"name": "a", "kind": "nfs", "capacity_tib": 1, "mount": "/x"},
                    {"name": "a", "kind": "nfs", "capacity_tib": 1, "mount": "/x"},
                ]
            ),
            'stacks/Pulumi.t.yaml: storage[1].mount: got "/x"; duplicate of storage[0].mount; two file systems '
            "cannot share it",
            id="duplicate-mount",
        ),
        pytest.param(
            cluster(pools=[]),
            "stacks/Pulumi.t.yaml: pools: got a list; needs at least 1 item(s)",
            id="no-pools",
        ),
        pytest.param(
            cluster(tags={"cost-center": 4711}),
            'stacks/Pulumi.t.yaml: tags.cost-center: got 4711; must be a string (quote numbers, e.g. "4711")',
            id="numeric-tag",
        ),
        pytest.param(
            cluster(tags={"aicluster:pool": "x"}),
            'stacks/Pulumi.t.yaml: tags.aicluster:pool: got "aicluster:pool"; the aicluster: prefix is reserved '
            "for tags the toolkit sets",
            id="reserved-tag",
        ),
        pytest.param(
            cluster(storage=[{"name": "s", "kind": "lustree", "capacity_tib": 1, "mount": "/fsx"}]),
            'stacks/Pulumi.t.yaml: storage[0].kind: got "lustree"; allowed: lustre, nfs (did you mean "lustre"?)',
            id="bad-storage-kind",
        ),
        pytest.param(
            cluster(storage=[{"name": "s", "kind": "lustre", "capacity_tib": 1, "mount": "fsx"}]),
            'stacks/Pulumi.t.yaml: storage[0].mount: got "fsx"; must be an absolute path of letters',
            id="relative-mount",
        ),
        pytest.param(
            cluster(scheduler={"kind": "slurm", "controler": {}}),
            'stacks/Pulumi.t.yaml: scheduler.controler: got "controler"; unknown key; allowed keys: kind, controller '
            '(did you mean "controller"?)',
            id="unknown-nested-key",
        ),
        pytest.param(
            cluster(network={"supernet": "8.8.0.0/16"}),
            'stacks/Pulumi.t.yaml: network.supernet: got "8.8.0.0/16"; must lie inside an RFC 1918 range '
            "(10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)",
            id="public-supernet",
        ),
        pytest.param(
            cluster(network={"supernet": "169.254.0.0/16"}),
            'stacks/Pulumi.t.yaml: network.supernet: got "169.254.0.0/16"; must lie inside an RFC 1918 range '
            "(10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)",
            id="link-local-supernet",
        ),
        pytest.param(
            cluster(pools=[pool(market="on-demand", reservation="cr-0123abcd")]),
            'stacks/Pulumi.t.yaml: pools[0].reservation: got "cr-0123abcd"; a on-demand pool cannot target a '
            "capacity reservation; drop `reservation` or use market reserved (or capacity-block)",
            id="on-demand-with-reservation",
        ),
        pytest.param(
            cluster(pools=[pool(nodes=True)]),
            "stacks/Pulumi.t.yaml: pools[0].nodes: got true; must be a whole number",
            id="boolean-nodes",
        ),
        pytest.param(
            cluster(pools=[pool(nodes="4")]),
            'stacks/Pulumi.t.yaml: pools[0].nodes: got "4"; must be a whole number (write 4 without quotes)',
            id="quoted-nodes",
        ),
        pytest.param(
            cluster(pools=[pool(nodes="four")]),
            'stacks/Pulumi.t.yaml: pools[0].nodes: got "four"; must be a whole number',
            id="word-nodes",
        ),
        pytest.param(
            cluster(tags={"owner": "<script>"}),
            'stacks/Pulumi.t.yaml: tags.owner: got "<script>"; may only use letters, digits, spaces',
            id="tag-characters",
        ),
        pytest.param(
            cluster(storage=[{"name": "s", "kind": "lustre", "capacity_tib": 1, "mount": "/fsx/../etc"}]),
            'stacks/Pulumi.t.yaml: storage[0].mount: got "/fsx/../etc"; must be an absolute path',
            id="dotdot-mount",
        ),
        pytest.param(
            cluster(
                storage=[
                    {"name": "a", "kind": "nfs", "capacity_tib": 1, "mount": "/fsx"},
                    {"name": "b", "kind": "nfs", "capacity_tib": 1, "mount": "/fsx/b"},
                ]
            ),
            'stacks/Pulumi.t.yaml: storage[1].mount: got "/fsx/b"; inside storage[0].mount (/fsx)',
            id="nested-mount",
        ),
        pytest.param(
            cluster(pricing={"overrides": [{"sku": "p5.48xlarge"}]}),
            "stacks/Pulumi.t.yaml: pricing.overrides[0]: give exactly one of usd_per_hour (instance types, NAT "
            "gateways, addresses) or usd_per_gib_month (storage, disks)",
            id="override-without-price",
        ),
        pytest.param(
            cluster(pools=[pool(instance_type=None)]),
            "stacks/Pulumi.t.yaml: pools[0].instance_type: required field is missing: EC2 instance type "
            "(e.g. `p5.48xlarge`).",
            id="missing-instance-type",
        ),
        pytest.param(
            ["not", "a", "mapping"],
            "stacks/Pulumi.t.yaml: (top level): got a list; aicluster:cluster must be a mapping with at least "
            "`name` and `pools`",
            id="not-a-mapping",
        ),
    ],
)
def test_bad_input_names_file_field_value_and_fix(data: object, expected: str) -> None:
    found = errors(data)
    assert any(line.startswith(expected) for line in found), found


def test_every_problem_is_reported_at_once() -> None:
    lines = errors(cluster(name="X", nme=1, pools=[pool(market="spott", nodes=0)]))
    assert len(lines) == 4
    assert [line.split(": ")[1] for line in lines] == ["name", "pools[0].nodes", "pools[0].market", "nme"]


def test_line_numbers_point_into_the_stack_file() -> None:
    with pytest.raises(SpecError) as info:
        parse_cluster(cluster(pools=[pool(market="spott")]), SRC, {(): 3, ("pools", 0, "market"): 14})
    assert str(info.value).startswith("stacks/Pulumi.t.yaml:14: pools[0].market:")


# --- Azure pools ---------------------------------------------------------------------------------


def test_azure_pool_defaults_and_zone_number_from_yaml() -> None:
    spec = parse_cluster(azure_cluster(pools=[azure_pool(zone=2)]), SRC)
    p = spec.pools[0]
    assert p.provider == "azure"
    assert (p.zone, p.market, p.spot_eviction, p.root_volume_gib, p.resource_group) == (
        "2",
        "on-demand",
        None,
        512,
        None,
    )
    assert spec.access.admin_username == "aicluster"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            azure_cluster(pools=[azure_pool(spot_eviction="delete")]),
            f'{SRC}: pools[0].spot_eviction: got "delete"; only spot VMs are evicted; drop spot_eviction or set '
            "market: spot (now on-demand)",
            id="eviction-without-spot",
        ),
        pytest.param(
            azure_cluster(pools=[azure_pool(market="capacity-block")]),
            f'{SRC}: pools[0].market: got "capacity-block"; allowed: on-demand, spot, reserved',
            id="no-capacity-blocks-on-azure",
        ),
        pytest.param(
            azure_cluster(pools=[azure_pool(zone="4")]),
            f'{SRC}: pools[0].zone: got "4"; allowed: 1, 2, 3',
            id="zone-number",
        ),
        pytest.param(
            azure_cluster(access={"admin_username": "root", "ssh_public_keys": []}),
            f'{SRC}: access.admin_username: got "root"; reserved by Azure for Linux VMs; use e.g. aicluster',
            id="reserved-admin",
        ),
        pytest.param(
            azure_cluster(access={"ssh_public_keys": ["-----BEGIN OPENSSH PRIVATE KEY-----"]}),
            f"{SRC}: access.ssh_public_keys[0]: must be one OpenSSH public key line",
            id="private-key-pasted",
        ),
        pytest.param(
            azure_cluster(tags={"team/name": "x"}),
            f'{SRC}: tags.team/name: got "team/name"; Azure tag names cannot contain < > % & \\ ? or /; rename the tag',
            id="azure-tag-name",
        ),
    ],
)
def test_azure_bad_input_names_field_value_and_fix(data: object, expected: str) -> None:
    found = errors(data)
    assert any(line.startswith(expected) for line in found), found


def test_a_pasted_private_key_is_never_echoed() -> None:
    secret = "\n".join(
        [
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
            "-----END OPENSSH PRIVATE KEY-----",
        ]
    )
    found = errors(azure_cluster(access={"ssh_public_keys": [secret]}))
    assert found
    assert not any("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" in line or "PRIVATE" in line for line in found)


def test_a_key_with_a_trailing_newline_is_quoted_on_one_line() -> None:
    (line, *_) = [x for x in errors({"0\n": None}) if "unknown key" in x]
    assert line.startswith(f'{SRC}: "0\\u000a": got "0\\u000a"; unknown key')


def _mount(mount: str) -> dict[str, object]:
    return cluster(storage=[{"name": "s", "kind": "nfs", "capacity_tib": 1, "mount": mount}])


@pytest.mark.parametrize("mount", ["/home", "/shared", "/fsx", "/data/ml", "/srv", "/mnt/fsx", "/opt/ml"])
def test_normal_mount_points_are_allowed(mount: str) -> None:
    assert parse_cluster(_mount(mount), SRC).storage[0].mount == mount


@pytest.mark.parametrize(
    ("mount", "message"),
    [
        pytest.param("/", "would hide / the node needs to run", id="root"),
        pytest.param("/etc", "would hide /etc the node needs to run", id="etc"),
        pytest.param("/usr/local", "would hide /usr the node needs to run", id="under-usr"),
        pytest.param("/lib64", "would hide /lib64 the node needs", id="lib64"),
        pytest.param("/proc/x", "would hide /proc the node needs", id="under-proc"),
        pytest.param("/var", "would hide /var the node needs", id="var"),
        pytest.param("/tmp", "would hide /tmp the node needs", id="tmp"),
        pytest.param("/home/", "must be an absolute path", id="trailing-slash"),
        pytest.param("/a//b", "must be an absolute path", id="double-slash"),
        pytest.param("/a/./b", "must be an absolute path", id="dot"),
        pytest.param("/fsx{{ lookup('pipe','id -un') }}", "must be an absolute path", id="jinja"),
        pytest.param("/fsx\n", "must be an absolute path", id="newline"),
        pytest.param("/my data", "must be an absolute path", id="space"),
    ],
)
def test_mount_points_that_break_the_node_are_refused(mount: str, message: str) -> None:
    (line,) = errors(_mount(mount))
    assert line.startswith(f"{SRC}: storage[0].mount: got ")
    assert message in line
    assert "(e.g. /fsx" in line


@pytest.mark.parametrize(
    ("data", "where"),
    [
        pytest.param(cluster(pools=[pool(placement_group="pg\n$(id)")]), "pools[0].placement_group", id="pg"),
        pytest.param(cluster(pools=[pool(instance_type="p5.48xlarge\n")]), "pools[0].instance_type", id="type"),
        pytest.param(cluster(pools=[pool(instance_type="$(id)")]), "pools[0].instance_type", id="type-shell"),
        pytest.param(cluster(tags={"owner": "ml\n"}), "tags.owner", id="tag-trailing-newline"),
        pytest.param(cluster(tags={"owner\n": "ml"}), 'tags."owner\\u000a"', id="tag-key-newline"),
        pytest.param(cluster(tags={"owner": "{{ x }}"}), "tags.owner", id="tag-jinja"),
        pytest.param(
            cluster(storage=[{"name": "s", "kind": "nfs", "capacity_tib": 1, "mount": "/x", "region": "us\n"}]),
            "storage[0].region",
            id="storage-region",
        ),
        pytest.param(
            cluster(scheduler={"kind": "slurm", "controller": {"instance_type": "m7i.xlarge\n"}}),
            "scheduler.controller.instance_type",
            id="controller-type",
        ),
        pytest.param(
            cluster(scheduler={"kind": "slurm", "controller": {"region": "$(id)"}}),
            "scheduler.controller.region",
            id="controller-region",
        ),
        pytest.param(
            cluster(pricing={"overrides": [{"sku": "p5.48xlarge\n", "usd_per_hour": 1}]}),
            "pricing.overrides[0].sku",
            id="sku",
        ),
        pytest.param(
            cluster(pricing={"overrides": [{"sku": "p5.48xlarge", "region": "{{x}}", "usd_per_hour": 1}]}),
            "pricing.overrides[0].region",
            id="override-region",
        ),
        pytest.param(
            cluster(
                compliance={
                    "waivers": [{"policy": "a b", "resource": "r", "reason": "long enough", "expires": "2027-01-01"}]
                }
            ),
            "compliance.waivers[0].policy",
            id="waiver-policy",
        ),
        pytest.param(
            cluster(
                compliance={
                    "waivers": [
                        {"policy": "p", "resource": "r", "reason": "ok \x1b[2J cleared", "expires": "2027-01-01"}
                    ]
                }
            ),
            "compliance.waivers[0].reason",
            id="waiver-reason-escape",
        ),
        pytest.param(
            cluster(
                compliance={
                    "waivers": [
                        {"policy": "p", "resource": "{% x %}", "reason": "long enough", "expires": "2027-01-01"}
                    ]
                }
            ),
            "compliance.waivers[0].resource",
            id="waiver-resource-template",
        ),
        pytest.param(
            cluster(access={"ssh_public_keys": ["ssh-ed25519 " + "A" * 68 + " me@host\nX"]}),
            "access.ssh_public_keys[0]",
            id="ssh-key-newline-comment",
        ),
    ],
)
def test_every_user_string_has_an_allowed_shape(data: dict[str, object], where: str) -> None:
    found = errors(data)
    assert any(line.startswith(f"{SRC}: {where}: ") for line in found), found
    assert all("\n" not in line for line in found)


@pytest.mark.parametrize(
    ("budgets", "message"),
    [
        pytest.param({"rack_kw": float("inf")}, "budgets.rack_kw: got .inf; must be a finite number", id="inf"),
        pytest.param({"power_kw": float("nan")}, "budgets.power_kw: got .nan; must be a finite number", id="nan"),
        pytest.param(
            {"monthly_usd": 1e308}, "budgets.monthly_usd: got 1e+308; must be at most 1000000000000", id="huge"
        ),
    ],
)
def test_budgets_are_finite_and_bounded(budgets: dict[str, float], message: str) -> None:
    assert f"{SRC}: {message}" in errors(cluster(budgets=budgets))


def test_price_overrides_are_finite_and_bounded() -> None:
    found = errors(cluster(pricing={"overrides": [{"sku": "p5.48xlarge", "usd_per_hour": float("inf")}]}))
    assert f"{SRC}: pricing.overrides[0].usd_per_hour: got .inf; must be a finite number" in found


def test_a_list_as_a_pool_provider_does_not_hide_the_tag_rules() -> None:
    assert errors(cluster(pools=[pool(provider=[])], tags={"owner": "x", "aicluster:x": "y"})) == [
        f"{SRC}: pools[0].provider: got a list; allowed: aws, azure, gcp, onprem",
        f'{SRC}: tags.aicluster:x: got "aicluster:x"; the aicluster: prefix is reserved for tags the toolkit sets',
    ]


def test_a_word_is_not_taken_for_a_quoted_number() -> None:
    assert errors(cluster(pools=[pool(nodes="four")])) == [
        'stacks/Pulumi.t.yaml: pools[0].nodes: got "four"; must be a whole number'
    ]


def test_a_choice_or_number_union_is_one_problem_in_any_model() -> None:
    # Outside the stack's models the field's bounds are not looked up: the number branch's own message is used.
    from typing import Annotated, Literal

    from pydantic import BaseModel, Field

    from aicluster.spec import model_problems

    class Knob(BaseModel):
        x: Literal["auto", "none"] | Annotated[int, Field(strict=True, ge=2)]

    found = model_problems(Knob, {"x": 1}, ("knob",))
    assert [p.render("f.yaml") for p in found] == ["f.yaml: knob.x: got 1; must be auto, none or at least 2"]
    found = model_problems(Knob, {"x": "nome"}, ("knob",))
    assert [p.render("f.yaml") for p in found] == [
        'f.yaml: knob.x: got "nome"; must be auto, none or a whole number (did you mean "none"?)'
    ]
