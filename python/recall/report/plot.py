"""The calibration plot as inline SVG (SPEC §7): the confidence curve of the record in use, its
threshold, and where a hit abstains or may be acted on. No plotting library.

Owns: drawing one record's boundary (`threshold`, `scale`: confidence = sigmoid(clamp((relevance
− threshold) / scale, ±60)), exactly 0.5 on the threshold) with its figures. A record keeps no
samples, so the score distributions are not drawn here (`recall calibrate QUERIES --plot` draws
them at fit time). Does not own: the record, or whether it is in force (`recall.priors`).
"""

from __future__ import annotations

import math
from html import escape

__all__ = ["calibration_svg"]

_W, _H = 640, 300
_L, _R, _T, _B = 52, 20, 34, 44


def _confidence(x: float, threshold: float, scale: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, (x - threshold) / scale))))


def _ticks(lo: float, hi: float) -> list[float]:
    step = 0.1 if hi - lo <= 1.6 else 0.2
    first = math.ceil(lo / step) * step
    out = []
    v = first
    while v <= hi + 1e-9:
        out.append(round(v, 6))
        v += step
    return out


def calibration_svg(
    threshold: float,
    scale: float,
    *,
    title: str,
    subtitle: str,
    span: float = 0.0,
    default: bool = False,
) -> str:
    """The plot of one boundary. `span` is how much the record's lexical features may add to a
    cosine (the relevance runs to 1 + span); `default` marks the uncalibrated development
    default, drawn dashed."""
    lo = max(-1.0, min(-0.1, threshold - 6 * scale))
    hi = min(1.0 + span, max(1.0, threshold + 6 * scale))
    pw, ph = _W - _L - _R, _H - _T - _B

    def px(x: float) -> float:
        return _L + (x - lo) / (hi - lo) * pw

    def py(y: float) -> float:
        return _T + (1.0 - y) * ph

    tx = px(min(max(threshold, lo), hi))
    steps = 240
    xs = [lo + (hi - lo) * k / steps for k in range(steps + 1)]
    points = " ".join(f"{px(x):.1f},{py(_confidence(x, threshold, scale)):.1f}" for x in xs)
    parts = [
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" '
        f'width="{_W}" height="{_H}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}: {escape(subtitle)}</title>",
        f'<rect x="{_L}" y="{_T}" width="{tx - _L:.1f}" height="{ph}" class="pl-abstain"/>',
        f'<rect x="{tx:.1f}" y="{_T}" width="{_L + pw - tx:.1f}" height="{ph}" class="pl-ok"/>',
        f'<text x="{_L + 6}" y="{_T + 14}" class="pl-region">abstains (low_confidence)</text>',
        f'<text x="{_L + pw - 6}" y="{_T + 14}" class="pl-region" text-anchor="end">'
        "may be acted on (ok)</text>",
    ]
    for x in _ticks(lo, hi):
        parts.append(
            f'<line x1="{px(x):.1f}" y1="{_T + ph}" x2="{px(x):.1f}" y2="{_T + ph + 4}" '
            'class="pl-axis"/>'
            f'<text x="{px(x):.1f}" y="{_T + ph + 16}" class="pl-tick" '
            f'text-anchor="middle">{x:.1f}</text>'
        )
    for y in (0.0, 0.5, 1.0):
        parts.append(
            f'<line x1="{_L}" y1="{py(y):.1f}" x2="{_L + pw}" y2="{py(y):.1f}" class="pl-grid"/>'
            f'<text x="{_L - 6}" y="{py(y) + 4:.1f}" class="pl-tick" '
            f'text-anchor="end">{y:.1f}</text>'
        )
    curve = "pl-curve pl-default" if default else "pl-curve"
    parts += [
        f'<rect x="{_L}" y="{_T}" width="{pw}" height="{ph}" class="pl-frame"/>',
        f'<polyline points="{points}" class="{curve}"/>',
        f'<line x1="{tx:.1f}" y1="{_T}" x2="{tx:.1f}" y2="{_T + ph}" class="pl-threshold"/>',
        f'<circle cx="{tx:.1f}" cy="{py(0.5):.1f}" r="3.5" class="pl-point"/>',
        f'<text x="{tx + 6:.1f}" y="{py(0.5) - 6:.1f}" class="pl-label">threshold '
        f"{threshold:.3f} (confidence 0.5)</text>",
        f'<text x="{_L}" y="20" class="pl-title">{escape(title)}</text>',
        f'<text x="{_L + pw}" y="20" class="pl-sub" text-anchor="end">{escape(subtitle)}</text>',
        f'<text x="{_L + pw / 2:.1f}" y="{_H - 8}" class="pl-axis-label" text-anchor="middle">'
        "relevance of a hit (dense cosine + weighted lexical evidence)</text>",
        f'<text x="14" y="{_T + ph / 2:.1f}" class="pl-axis-label" text-anchor="middle" '
        f'transform="rotate(-90 14 {_T + ph / 2:.1f})">confidence</text>',
        "</svg>",
    ]
    return "".join(parts)
