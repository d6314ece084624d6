"""Each harness user (the tests, a benchmark, pytest-xdist workers) gets namespaces, a bridge and a /24 of its own:
two sets side by side never share names, so neither deletes the other's hosts."""

from __future__ import annotations

from tests.tune.hosts import Allocation, allocate


def test_purposes_and_processes_get_their_own_names_and_subnets() -> None:
    tests, bench = allocate("tests", pid=4242), allocate("benchmark", pid=4242)
    other = allocate("tests", pid=4243)
    assert len({tests.prefix, bench.prefix, other.prefix}) == 3
    assert len({tests.subnet, bench.subnet, other.subnet}) == 3
    assert allocate("tests", pid=4242) == tests  # derived, not random: the same user, purpose and process
    for a in (tests, bench, other):
        assert len(f"br-{a.prefix}") <= 15
        assert len(f"{a.prefix}99h") <= 15
        first, second, third = (int(x) for x in a.subnet.split("."))
        assert first == 10
        assert 100 <= second < 200
        assert 0 <= third < 256


def test_a_set_already_on_the_machine_is_passed_over() -> None:
    """Sets started one after another see the ones already up (their bridge, their route) and take another."""
    live: list[Allocation] = []

    def taken(a: Allocation) -> bool:
        return any(a.prefix == b.prefix or a.subnet == b.subnet for b in live)

    for pid in range(20):
        for purpose in ("tests", "benchmark", "slurm-hosts"):
            live.append(allocate(purpose, pid=pid % 5, taken=taken))  # the same pids again: clashes
    assert len({a.prefix for a in live}) == len(live)
    assert len({a.subnet for a in live}) == len(live)
