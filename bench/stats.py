"""Percentiles of measured times, the same way in every part of the benchmark."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(times: Sequence[float], share: float) -> float:
    """Nearest rank on sorted ``times``: the smallest value at least ``share`` of them reach."""
    rank = math.ceil(share * len(times) - 1e-9)  # the epsilon: 0.07 * 100 is 7.000000000000001
    index = max(0, min(len(times) - 1, rank - 1))
    return times[index]
