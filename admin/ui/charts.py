"""Bar charts drawn on the server as inline SVG: no script, no library, nothing from a CDN.

Bars and text use presentation attributes and classes styled by admin.css (the CSP allows no
inline style). The SVG scales to its container through its viewBox, so it fits a phone; each bar
carries a ``<title>`` with its exact value, and the page puts the same numbers in a table below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 640, 220
LEFT, BOTTOM, TOP = 56, 28, 12
ROW = 26


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** len(str(int(value))) / 10 if value >= 1 else 0.1
    while step * 10 < value:
        step *= 10
    for factor in (1, 2, 2.5, 5, 10):
        if step * factor >= value:
            return step * factor
    return value


def columns(
    points: Sequence[tuple[str, float]], *, label: str, fmt: Callable[[float], str]
) -> Markup:
    """Vertical bars over time (one per day or hour), the y axis from zero."""
    top = _nice_max(max((value for _, value in points), default=0.0))
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    slot = plot_w / max(len(points), 1)
    parts = [_open(WIDTH, HEIGHT, label)]
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(
            f'<text class="axis" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(fmt(top * fraction))}</text>"
        )
    every = max(1, round(len(points) / 8))
    for index, (name, value) in enumerate(points):
        height = plot_h * value / top
        x = LEFT + index * slot + slot * 0.15
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{TOP + plot_h - height:.1f}" '
            f'width="{max(slot * 0.7, 1):.1f}" height="{height:.1f}">'
            f"<title>{escape(name)}: {escape(fmt(value))}</title></rect>"
        )
        if index % every == 0:
            parts.append(
                f'<text class="axis" x="{x + slot * 0.35:.1f}" y="{HEIGHT - 8}" '
                f'text-anchor="middle">{escape(name[-5:])}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704  (every value above is escaped)


def bars(points: Sequence[tuple[str, float]], *, label: str, fmt: Callable[[float], str]) -> Markup:
    """Horizontal bars, largest first (top spenders): the name above each bar, the value after."""
    top = max((value for _, value in points), default=0.0) or 1.0
    height = TOP + ROW * 1.6 * max(len(points), 1)
    parts = [_open(WIDTH, height, label)]
    for index, (name, value) in enumerate(points):
        y = TOP + index * ROW * 1.6
        width = (WIDTH - 120) * value / top
        parts.append(f'<text class="label" x="0" y="{y + 10:.1f}">{escape(name[:60])}</text>')
        parts.append(
            f'<rect class="bar" x="0" y="{y + 15:.1f}" width="{max(width, 1):.1f}" '
            f'height="{ROW * 0.6:.1f}"><title>{escape(name)}: {escape(fmt(value))}</title></rect>'
        )
        parts.append(
            f'<text class="axis" x="{width + 6:.1f}" y="{y + 27:.1f}">{escape(fmt(value))}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704  (every value above is escaped)


def _open(width: float, height: float, label: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height:.0f}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
    )


def usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"


def count(value: float) -> str:
    return f"{value:,.0f}"
