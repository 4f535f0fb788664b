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


def test_the_record_is_read_and_replaced() -> None:
    document = instructions.RECORD.read_text(encoding="utf-8")
    record = instructions.recorded(document)
    assert set(record) == {"whole", "stream"}

    changed = instructions.with_record(document, {"stream": 2_500_000}, "(a note)")
    assert instructions.recorded(changed) == {"whole": record["whole"], "stream": 2_500_000}
    assert "(a note)" in changed
    assert changed.count("| whole |") == document.count("| whole |")  # replaced, not added


def test_more_than_five_percent_over_the_record_fails() -> None:
    record = {"whole": 1_000_000, "stream": 2_000_000}
    assert instructions.regressions({"whole": 1_050_000, "stream": 1_900_000}, record) == []
    (line,) = instructions.regressions({"whole": 1_050_001, "stream": 2_000_000}, record)
    assert line.startswith("whole: 1,050,001 instructions per request, +5.0% over")


def test_make_bench_runs_the_check() -> None:
    makefile = (instructions.RECORD.parent.parent / "Makefile").read_text(encoding="utf-8")
    assert "bench.instructions --modes whole stream --check" in makefile
