"""The report's plots as inline SVG (no scripts, no network): the document funnel and line plots
of counts over bins (document lengths, and the histograms stages add). They take plain figures,
not the report, so they can be drawn for any table of counts.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from curator.core.stats import StageStats

#: Colours of a plot's series, in order (Tableau 10, then two more).
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#1f6f6f", "#8c564b"]


def funnel_svg(stages: Sequence[tuple[str, StageStats]]) -> str:
    """Horizontal bars: documents out of each stage; in grey what it removed or set aside;
    hatched what it did not pass on without removing it (a stage that hands only some of its
    input to the next, as ``quality_model`` passes on the crawl it scores and not the
    Wikipedia it trained on): such documents were never counted as removed, and the bar used
    to show them as if they were."""
    w, row, left = 720, 26, 190
    h = row * len(stages) + 30
    top = max([st.docs_in for _, st in stages] + [st.docs_out for _, st in stages] + [1])
    scale = (w - left - 200) / top
    parts = [f'<svg class="plot plot-funnel" xmlns="http://www.w3.org/2000/svg" width="{w}" '
             f'height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="document funnel">',
             '<defs><pattern id="passed-on" width="6" height="6" patternUnits="userSpaceOnUse" '
             'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eef3fb"/>'
             '<line x1="0" y1="0" x2="0" y2="6" stroke="#9db7dd" stroke-width="2"/></pattern>'
             "</defs>"]
    for i, (sid, st) in enumerate(stages):
        y = 10 + i * row
        docs_in, docs_out = st.docs_in, st.docs_out
        removed = min(st.removed + st.set_aside, max(docs_in - docs_out, 0))
        held = max(docs_in - docs_out - removed, 0)  # neither passed on nor removed
        parts.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" font-size="12">'
                     f'{_e(sid)}</text>')
        x = left + docs_out * scale
        if removed:
            parts.append(f'<rect class="removed" x="{x:.1f}" y="{y + 3}" '
                         f'width="{removed * scale:.1f}" height="{row - 8}" fill="#d9d9d9">'
                         f"<title>removed or set aside: {removed:,}</title></rect>")
        if held:
            parts.append(f'<rect class="not-passed-on" x="{x + removed * scale:.1f}" '
                         f'y="{y + 3}" width="{held * scale:.1f}" height="{row - 8}" '
                         f'fill="url(#passed-on)"><title>not passed on (not removed): '
                         f"{held:,}</title></rect>")
        parts.append(f'<rect class="bar" x="{left}" y="{y + 3}" '
                     f'width="{max(docs_out * scale, 1):.1f}" height="{row - 8}" '
                     f'fill="{PALETTE[0]}"><title>out: {docs_out}</title></rect>')
        note = f" ({held:,} not passed on, not removed)" if held else ""
        parts.append(f'<text x="{left + max(docs_in, docs_out) * scale + 6:.1f}" '
                     f'y="{y + 15}" font-size="11">{docs_out:,}{note}</text>')
    parts.append("</svg>")
    return "".join(parts)


#: Characters of a series name in a plot's legend (11 px text in a 170 px column).
LEGEND_CHARS = 22


#: Width of one character of a 10 px axis label, an upper bound for digits and '-'.
LABEL_PX = 6.2


def histogram_svg(series: list[tuple[str, list[int]]], labels: list[str], title: str,
                  css_class: str = "plot-hist") -> str:
    """Grouped line plot of counts over (log) bins, one line per series."""
    w, h, pad_l, pad_b, pad_t = 720, 260, 50, 40, 20
    n = max(len(labels), 1)
    top = max([max(c) if c else 0 for _, c in series] + [1])
    xs = [pad_l + (w - pad_l - 20) * i / max(n - 1, 1) for i in range(n)]

    def y(v: int) -> float:
        return h - pad_b - (h - pad_b - pad_t) * v / top

    parts = [f'<svg class="plot {css_class}" xmlns="http://www.w3.org/2000/svg" width="{w}" '
             f'height="{h + 20 * ((len(series) + 3) // 4)}" role="img" aria-label="{_e(title)}">',
             f'<line x1="{pad_l}" y1="{h - pad_b}" x2="{w - 20}" y2="{h - pad_b}" '
             'stroke="#888"/>',
             f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{h - pad_b}" stroke="#888"/>',
             f'<text x="{pad_l - 6}" y="{pad_t + 4}" font-size="10" text-anchor="end">'
             f'{top:,}</text>']
    # every shown label fits its slot: wide labels ("1024-2047") are shown every few bins,
    # and the last one ends at the axis instead of running off the plot
    widest = max((len(x) for x in labels), default=1) * LABEL_PX + 8
    slot = (w - pad_l - 20) / max(n - 1, 1)
    step = max(1, -(-int(widest) // max(int(slot), 1)))
    placed: list[tuple[float, float, str]] = []  # left, right, svg text
    for i in range(0, len(labels), step):
        half = len(labels[i]) * LABEL_PX / 2
        end = xs[i] + half > w - 2
        left, right = (xs[i] - 2 * half, xs[i]) if end else (xs[i] - half, xs[i] + half)
        if placed and left < placed[-1][1] + 6:  # the last label, moved left, keeps its place
            placed.pop()
        placed.append((left, right, f'<text class="xlabel" x="{xs[i]:.1f}" y="{h - pad_b + 14}" '
                       f'font-size="10" text-anchor="{"end" if end else "middle"}">'
                       f"{_e(labels[i])}</text>"))
    parts += [t for _, _, t in placed]
    for k, (name, counts) in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        pts = " ".join(f"{xs[i]:.1f},{y(c):.1f}" for i, c in enumerate(counts[:n]))
        parts.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="2" '
                     f'points="{pts}"><title>{_e(name)}</title></polyline>')
        lx = pad_l + (k % 4) * 170
        ly = h + 4 + 20 * (k // 4)
        # a legend column is 170 px: a longer name is cut (full name in its tooltip), so
        # labels never run into the next column
        short = name if len(name) <= LEGEND_CHARS else name[: LEGEND_CHARS - 1] + "…"
        parts.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{color}"/>'
                     f'<text class="legend" x="{lx + 16}" y="{ly + 10}" font-size="11">'
                     f'<title>{_e(name)}</title>{_e(short)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def length_labels(nbins: int) -> list[str]:
    """Axis labels of the length histogram's bins (bin i starts at 2**(i-1) bytes)."""
    def human(v: int) -> str:
        for unit, div in (("M", 1 << 20), ("k", 1 << 10)):
            if v >= div:
                return f"{v // div}{unit}"
        return str(v)

    return ["0"] + [human(1 << (i - 1)) for i in range(1, nbins)]


def _e(x: Any) -> str:
    return html.escape(str(x))
