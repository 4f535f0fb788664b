"""The instruction count's pieces (the count itself runs under valgrind, by hand, not here)."""

from __future__ import annotations

import pytest

from bench import instructions


def test_defaults_count_whole_requests() -> None:
    args = instructions.parse_args([])
    assert args.modes == ["whole"]
    assert args.requests == 1280


def test_the_total_is_read_from_callgrind_output() -> None:
    dump = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 2075828323\n\nfn=x\n"
    assert instructions.total_instructions(dump) == 2075828323
    on_request = "events: Ir\nsummary: 0\n\nfn=x\n0 7\ntotals: 7\n"
    assert instructions.total_instructions(on_request) == 7
    with pytest.raises(ValueError, match="no totals"):
        instructions.total_instructions("events: Ir\n")


def test_a_count_is_per_counted_request() -> None:
    assert instructions.Count("whole", 1280, 2_075_828_323).per_request == pytest.approx(
        1621741.0, abs=1
    )
