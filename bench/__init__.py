"""The side-by-side benchmark: ``make bench`` (see docs/benchmarks.md)."""
