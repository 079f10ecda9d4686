"""The quality report: one self-contained HTML page a colleague can read without Duplens.

The figures with their 95% intervals in plain sentences, the curve of estimated precision and
recall over thresholds with their bands (an inline SVG drawn here, so the command line needs
neither Qt nor matplotlib), how many verdicts it rests on and who gave them, the model, the
date, and one paragraph on how it was measured. Written by `duplens estimate --report` and
the window's File → Export quality report, from a `Measurement` with its curve.

Recall and the duplicate pairs are quoted down to the lowest threshold one can set (the
estimate's floor, 0.50) where pairs score below it, the whole file's beside them, with a
sentence on what the pairs below could hide (`engine.estimation.floor_words`, the window's
words too); the curve draws that recall.
"""

from __future__ import annotations

import html
import math
import os
import time
from pathlib import Path

from engine.estimation.estimators import Estimate, Figure
from engine.estimation.floor_words import below_floor_words, floor_hint

WIDTH, HEIGHT = 720, 384
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 68
COLOURS = {"precision": "#1f6fb2", "recall": "#c2571a", "f1": "#3c8d3c"}


def write_report(path: str | os.PathLike, measurement, project_name: str) -> Path:
    """Write the page (replacing `path` whole, never half-written) and return its path."""
    target = Path(path)
    page = render(measurement, project_name)
    tmp = target.with_name(target.name + ".part")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(target)
    return target


def render(m, project_name: str) -> str:
    """The page as a string (`m`: an `engine.services.measuring.Measurement`)."""
    e: Estimate | None = m.estimate
    date = time.strftime("%d %B %Y, %H:%M")
    title = f"How right are the duplicates in {project_name}?"
    parts = [f"<h1>{_h(title)}</h1>",
             f"<p class='meta'>Measured with Duplens on {_h(date)} · model "
             f"{_h(m.model)} · threshold {m.threshold:.2f}</p>"]
    if e is None:
        parts.append("<p class='lead'>No pairs have been judged yet, so there is nothing to "
                     "report. Open the review's <b>Measure quality</b> mode, or run "
                     "<code>duplens estimate --next</code>, and judge the pairs it draws.</p>")
    else:
        scope = getattr(m, "scope", None)
        parts += [_summary(e)
                  + (f"<p class='whole'>{_h(scope.words())}</p>" if scope is not None else ""),
                  _table(e, m), _curve_section(m), _verdicts_section(m), _method(m, e),
                  _strata(e)]
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_h(title)}</title><style>{_CSS}</style></head>"
            f"<body><main>{body}</main></body></html>\n")


def _summary(e: Estimate) -> str:
    """The figures in sentences: where the estimate has a floor, recall and the duplicate
    pairs down to it first, then a paragraph on the whole file and the pairs below."""
    p, r, d, f = e.precision, e.recall, e.duplicates, e.floored
    lines = [f"At this threshold Duplens flags <b>{e.flagged:,}</b> pairs of rows as "
             "duplicates of each other."]
    if math.isfinite(p.value):
        lines.append(f"About <b>{_pct(p.value)}</b> of them really are duplicates "
                     f"(we are 95% sure it is between {_pct(p.low)} and {_pct(p.high)}).")
    if f is None:
        if math.isfinite(r.value):
            lines.append(f"They are about <b>{_pct(r.value)}</b> of all the duplicate pairs "
                         f"in the file (between {_pct(r.low)} and {_pct(r.high)}); the rest "
                         "were missed.")
        lines.append(f"The file holds about <b>{d.value:,.0f}</b> duplicate pairs in all "
                     f"(between {d.low:,.0f} and {d.high:,.0f}).")
    else:
        if math.isfinite(f.recall.value):
            lines.append(f"They are about <b>{_pct(f.recall.value)}</b> of the duplicate "
                         f"pairs {floor_hint(f)} (between {_pct(f.recall.low)} and "
                         f"{_pct(f.recall.high)}); the rest of those were missed.")
        fd = f.duplicates
        lines.append(f"The pairs {floor_hint(f)} hold about <b>{fd.value:,.0f}</b> duplicate "
                     f"pairs (between {fd.low:,.0f} and {fd.high:,.0f}).")
    if f is not None and f.rows is not None:
        lines.append(f"About <b>{f.rows.value:,.0f}</b> rows have at least one duplicate "
                     f"{floor_hint(f)} (between {f.rows.low:,.0f} and {f.rows.high:,.0f}).")
    elif e.rows is not None:
        lines.append(f"About <b>{e.rows.value:,.0f}</b> rows have at least one duplicate "
                     f"(between {e.rows.low:,.0f} and {e.rows.high:,.0f}).")
    note = "" if e.ready else (" <span class='warn'>Some groups of pairs have no verdict yet: "
                               "these figures are provisional.</span>")
    return f"<p class='lead'>{' '.join(lines)}{note}</p>" + _whole_file(e)


def _whole_file(e: Estimate) -> str:
    """Recall and the duplicate pairs over every pair of the file, and what the pairs below
    the floor could hide ("" without a floor: the summary's figures are the whole file's)."""
    r, d, f = e.recall, e.duplicates, e.floored
    if f is None:
        return ""
    share = (f"they are about {_pct(r.value)} of them (between {_pct(r.low)} and "
             f"{_pct(r.high)}), and " if math.isfinite(r.value) else "")
    return (f"<p class='whole'>Counting every duplicate pair in the file, however low it "
            f"scores, {share}the file holds about {d.value:,.0f} duplicate pairs in all "
            f"(between {d.low:,.0f} and {d.high:,.0f}). {_h(below_floor_words(f))}</p>")


def _table(e: Estimate, m) -> str:
    rows = [("Precision: share of flagged pairs that are duplicates", e.precision, True),
            ("Recall: share of all duplicate pairs that are flagged", e.recall, True),
            ("F1: precision and recall in one number", e.f1, True),
            ("Duplicate pairs in the file", e.duplicates, False)]
    if e.floored is not None:
        at = floor_hint(e.floored)
        rows = [rows[0],
                (f"Recall: share of the duplicate pairs {at} that are flagged",
                 e.floored.recall, True),
                ("Recall, whole file: share of every duplicate pair, however low it scores, "
                 "that is flagged", e.recall, True),
                (f"F1: precision and recall {at} in one number", e.quoted("f1"), True),
                ("F1, whole file", e.f1, True),
                (f"Duplicate pairs {at}", e.floored.duplicates, False),
                ("Duplicate pairs in the whole file", e.duplicates, False)]
    if e.floored is not None and e.floored.rows is not None:
        rows.append((f"Rows with at least one duplicate {floor_hint(e.floored)}",
                     e.floored.rows, False))
        if e.rows is not None:
            rows.append(("Rows with at least one duplicate in the whole file", e.rows, False))
    elif e.rows is not None:
        rows.append(("Rows with at least one duplicate", e.rows, False))
    body = "".join(f"<tr><td>{_h(name)}</td><td class='num'>{_value(f, pct)}</td>"
                   f"<td class='num'>{_range(f, pct)}</td></tr>" for name, f, pct in rows)
    stop = ("Every interval is within ±3 points: more verdicts would change little."
            if m.enough else
            _h(_sentence(m.halving_words())) if m.widest is not None else "")
    why = m.why_wide()
    why_html = f" {_h(why)}" if why else ""
    return (f"<h2>The figures</h2><table><thead><tr><th>figure</th><th>estimate</th>"
            f"<th>95% interval</th></tr></thead><tbody>{body}</tbody></table>"
            f"<p class='note'>{stop}{why_html}</p>")


def _curve_section(m) -> str:
    if not m.curve:
        return ""
    floored = next((c.floored for c in m.curve if c.floored is not None), None)
    which = ("" if floored is None else
             f" Recall here counts the duplicate pairs {floor_hint(floored)}, the ones some "
             "threshold setting can flag.")
    return ("<h2>At other thresholds</h2><p>A higher threshold flags fewer pairs: more of them "
            "are right (precision) but more duplicates are missed (recall). The shaded bands "
            f"are the 95% intervals; the dashed line is the threshold above.{which}</p>"
            + curve_svg(m.curve, m.threshold))


def curve_svg(curve: list[Estimate], current: float) -> str:
    """Estimated precision and recall over thresholds, each with its band, as inline SVG:
    recall as quoted (`Estimate.quoted`: down to the floor where there is one, so the
    legend says which)."""
    xs = [c.threshold for c in curve]
    x0, x1 = min(xs), max(xs)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0 or 1) * plot_w

    def py(y: float) -> float:
        return TOP + (1 - min(max(y, 0.0), 1.0)) * plot_h

    out = [f"<svg class='curve' viewBox='0 0 {WIDTH} {HEIGHT}' width='{WIDTH}' "
           f"height='{HEIGHT}' role='img' aria-label='estimated precision and recall by "
           f"threshold'>"]
    for tick in range(0, 101, 20):
        y = py(tick / 100)
        out.append(f"<line x1='{LEFT}' y1='{y:.1f}' x2='{WIDTH - RIGHT}' y2='{y:.1f}' "
                   f"class='grid'/><text x='{LEFT - 8}' y='{y + 4:.1f}' "
                   f"text-anchor='end'>{tick}%</text>")
    step = 0.1
    tick = math.ceil(x0 / step - 1e-9) * step
    while tick <= x1 + 1e-9:
        x = px(tick)
        out.append(f"<line x1='{x:.1f}' y1='{TOP + plot_h}' x2='{x:.1f}' "
                   f"y2='{TOP + plot_h + 5}' class='axis'/><text x='{x:.1f}' "
                   f"y='{TOP + plot_h + 20}' text-anchor='middle'>{tick:.1f}</text>")
        tick += step
    out.append(f"<text x='{LEFT + plot_w / 2:.0f}' y='{TOP + plot_h + 38}' "
               "text-anchor='middle'>"
               "similarity threshold</text>")
    for name in ("precision", "recall"):
        figures = [(c.threshold, c.quoted(name)) for c in curve]
        figures = [(x, f) for x, f in figures if all(map(math.isfinite,
                                                          (f.value, f.low, f.high)))]
        if len(figures) < 2:
            continue
        upper = [f"{px(x):.1f},{py(f.high):.1f}" for x, f in figures]
        lower = [f"{px(x):.1f},{py(f.low):.1f}" for x, f in reversed(figures)]
        line = [f"{px(x):.1f},{py(f.value):.1f}" for x, f in figures]
        colour = COLOURS[name]
        out.append(f"<polygon points='{' '.join(upper + lower)}' fill='{colour}' "
                   "fill-opacity='0.18' stroke='none'/>")
        out.append(f"<polyline points='{' '.join(line)}' fill='none' stroke='{colour}' "
                   "stroke-width='2.5'/>")
    if x0 <= current <= x1:
        x = px(current)
        out.append(f"<line x1='{x:.1f}' y1='{TOP}' x2='{x:.1f}' y2='{TOP + plot_h}' "
                   "class='now'/>")
    floored = next((c.floored for c in curve if c.floored is not None), None)
    names = {"precision": "precision",
             "recall": "recall" if floored is None else f"recall, pairs {floor_hint(floored)}"}
    legend_x, y = LEFT, HEIGHT - 6    # under the axis, outside the plot: it hides no line
    for name in ("precision", "recall"):
        label = f"{names[name]} (estimated)"
        out.append(f"<rect x='{legend_x}' y='{y - 9}' width='14' height='10' "
                   f"fill='{COLOURS[name]}'/><text x='{legend_x + 20}' y='{y}'>"
                   f"{_h(label)}</text>")
        legend_x += 20 + 7 * len(label) + 24
    out.append("</svg>")
    return "".join(out)


def _verdicts_section(m) -> str:
    people = "".join(f"<li>{_h(name)}: {count:,}</li>"
                     for name, count in sorted(m.analysts.items(), key=lambda kv: -kv[1]))
    waiting = (f" {m.pending:,} drawn pairs still wait for a verdict; they are not counted."
               if m.pending else "")
    started = (time.strftime(" The sample was drawn on %d %B %Y.",
                             time.localtime(m.started)) if m.started else "")
    return (f"<h2>What it rests on</h2><p><b>{m.verdicts:,}</b> pairs drawn at random were "
            f"judged by people.{waiting}{started}</p><ul>{people}</ul>")


def _method(m, e: Estimate) -> str:
    total = sum(s["pairs"] for s in e.strata)
    return ("<h2>How it was measured</h2><p>Every pair of rows in the file could be a "
            f"duplicate: {total:,} pairs of distinct texts (rows with the same text count "
            "once). Duplens drew pairs from them at random and people said whether each is "
            "a duplicate. The draw was not uniform: pairs were grouped by how similar the "
            "model finds them, including one group for the pairs the model never compared, "
            "and more pairs were drawn from the groups whose verdicts matter most, with the "
            "chance of each pair being drawn recorded. Each group's verdicts stand for the "
            "whole group, so the figures hold for the entire file, not only for the pairs "
            "that were judged; pairs people judged elsewhere (while reviewing) count only "
            "if they were drawn. The intervals show how far the figures could be off by the "
            "luck of the draw: with 95% confidence the true value lies inside. They do not "
            f"cover mistakes in the verdicts themselves.{_why_floor(e)}</p>")


def _why_floor(e: Estimate) -> str:
    f = e.floored
    if f is None:
        return ""
    return (f" Recall is quoted first for the duplicate pairs {floor_hint(f)}: "
            f"{f.floor:.2f} is the lowest threshold Duplens lets you set, so a duplicate the "
            "model scores below it is one no setting would flag. The pairs below are most of "
            "the file's pairs, and no few hundred verdicts can say closely how many "
            "duplicates they hide, so they get one verdict in ten and are reported apart; the "
            "whole file's recall, beside it, counts them too.")


def _strata(e: Estimate) -> str:
    rows = "".join(f"<tr><td>{_h(s['stratum'])}</td><td class='num'>{s['pairs']:,}</td>"
                   f"<td class='num'>{s['flagged']:,}</td><td class='num'>{s['answered']:,}"
                   f"</td><td class='num'>{s['duplicates_found']:,}</td></tr>"
                   for s in e.strata)
    return ("<details><summary>Where the verdicts came from</summary><table><thead><tr>"
            "<th>pairs with similarity</th><th>pairs</th><th>flagged</th><th>judged</th>"
            f"<th>duplicates among them</th></tr></thead><tbody>{rows}</tbody></table>"
            "</details>")


def _value(f: Figure, pct: bool) -> str:
    if not math.isfinite(f.value):
        return "—"
    return _pct(f.value) if pct else f"{f.value:,.0f}"


def _range(f: Figure, pct: bool) -> str:
    if not (math.isfinite(f.low) and math.isfinite(f.high)):
        return "—"
    return (f"{_pct(f.low)} – {_pct(f.high)}" if pct
            else f"{f.low:,.0f} – {f.high:,.0f}")


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%" if x * 100 >= 10 or x == 0 else f"{x * 100:.1f}%"


def _sentence(words: str) -> str:
    return f"{words[0].upper()}{words[1:]}."


def _h(text: str) -> str:
    return html.escape(str(text), quote=True)


_CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
 color:#222;background:#fafafa;margin:0}
main{max-width:780px;margin:0 auto;padding:32px 24px 48px;background:#fff;min-height:100vh}
h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px}
.meta{color:#666;margin:0 0 20px}.lead{font-size:17px;line-height:1.6}
.warn{color:#a15c00}.note{color:#555}.whole{line-height:1.55}
table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{padding:7px 10px;border-bottom:1px solid #e4e4e4;text-align:left}
th{font-weight:600;color:#444;background:#f4f4f4}td.num{text-align:right;white-space:nowrap}
svg.curve{max-width:100%;height:auto;font-size:12px;fill:#444}
svg .grid{stroke:#e6e6e6}svg .axis{stroke:#999}
svg .now{stroke:#333;stroke-dasharray:5 4;stroke-width:1.5}
details{margin-top:28px}summary{cursor:pointer;color:#444}
code{background:#f1f1f1;padding:1px 4px;border-radius:3px}
"""
