"""The acceptance role's reading of nccl-tests all_reduce_perf output."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from tests.playbooks.conftest import PLAYBOOKS


def _load() -> ModuleType:
    path = PLAYBOOKS / "roles/acceptance/filter_plugins/nccl_tests.py"
    spec = importlib.util.spec_from_file_location("nccl_tests", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nccl = _load()

# Shaped like all_reduce_perf 2.13+ (with the root column), 2 nodes x 8 H100, -b 1G -e 8G -f 2.
OUTPUT = """\
# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid  12345 on   h100-000 device  0 [0x18] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1   7012.3  153.12  287.10      0   7001.9  153.35  287.53      0
  2147483648     536870912     float     sum      -1    13702  156.73  293.86      0    13690  156.86  294.12      0
  4294967296    1073741824     float     sum      -1    27120  158.37  296.94      0    27101  158.48  297.15      0
  8589934592    2147483648     float     sum      -1    54001  159.07  298.26      0    53987  159.11  298.33      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 294.2738
#
"""


def test_summary_takes_the_largest_message_out_of_place_busbw() -> None:
    summary = nccl.nccl_all_reduce_summary(OUTPUT)
    assert summary == {
        "busbw_gb_s": 298.26,
        "algbw_gb_s": 159.07,
        "size_bytes": 8589934592,
        "avg_busbw_gb_s": 294.2738,
        "rows": 4,
        "wrong": 0,
    }


def test_rows_without_the_root_column_and_without_checks_parse() -> None:
    old = (
        "     8388608       2097152     float     sum    512.3   16.38   30.71    N/A    510.9   16.42   30.79    N/A\n"
    )
    summary = nccl.nccl_all_reduce_summary(old)
    assert (summary["busbw_gb_s"], summary["wrong"], summary["avg_busbw_gb_s"]) == (30.71, 0, None)


def test_wrong_results_are_counted() -> None:
    bad = OUTPUT.replace("298.26      0", "298.26      3")
    assert nccl.nccl_all_reduce_summary(bad)["wrong"] == 3


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("srun: error: Unable to allocate resources: Invalid node name specified\n", id="srun-error"),
        pytest.param(OUTPUT.split("  1073741824", maxsplit=1)[0], id="header-only"),
    ],
)
def test_output_without_results_is_an_error_not_zero(text: str) -> None:
    with pytest.raises(nccl.NcclOutputError, match="no all_reduce_perf result rows"):
        nccl.nccl_all_reduce_summary(text)


def test_report_lists_pairs_worst_first_with_a_verdict() -> None:
    results = [
        {"pair": "h100-000+h100-001", "busbw_gb_s": 298.3, "size_bytes": 8589934592, "expected_gb_s": 300.0,
         "threshold_gb_s": 270.0, "wrong": 0},
        {"pair": "h100-002+h100-003", "busbw_gb_s": 61.2, "size_bytes": 8589934592, "expected_gb_s": 300.0,
         "threshold_gb_s": 270.0, "wrong": 0},
    ]  # fmt: skip
    lines = nccl.nccl_acceptance_report(results)
    assert lines[0].startswith("FAIL h100-002+h100-003: busbw 61.2 GB/s")
    assert lines[1].startswith("ok   h100-000+h100-001: busbw 298.3 GB/s")


def test_filters_are_registered_under_their_names() -> None:
    assert set(nccl.FilterModule().filters()) == {"nccl_all_reduce_summary", "nccl_acceptance_report"}
