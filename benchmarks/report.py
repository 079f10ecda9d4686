"""Regenerate docs/benchmarks.md's generated blocks (and plots) from benchmarks/results/*.json.

    python -m benchmarks.report [--results DIR] [--doc FILE] [--plots DIR]

The page is written by hand; only the text between `<!-- generated:NAME -->` and
`<!-- /generated -->` is replaced, NAME being a results file's name (`summary` is the table
of every headline figure). A result with no block in the page gets a new section at the
end; a block with no result is left as it is. Every block names the hardware, the command
and the date of its run, and every summary row does too.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.registry import BY_NAME, REGISTRY

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
PLOTS = ROOT / "docs" / "benchmarks"

BLOCK = re.compile(r"<!-- generated:([\w-]+) -->\n.*?<!-- /generated -->", re.DOTALL)


@dataclass
class Section:
    """One results file, normalised for rendering."""

    name: str
    title: str
    command: str
    date: str
    hardware: str
    mode: str = ""
    wall_seconds: float | None = None
    headline: list[dict] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)
    plots: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--plots", type=Path, default=PLOTS)
    args = ap.parse_args(argv)
    results = load_results(args.results)
    text = args.doc.read_text(encoding="utf-8")
    updated = render_doc(text, results, args.plots, args.doc.parent)
    if updated != text:
        args.doc.write_text(updated, encoding="utf-8")
    print(f"{args.doc}: {len(results)} results rendered", file=sys.stderr)
    return 0


def load_results(folder: Path) -> dict[str, dict]:
    """Every results file of `folder` (not its subfolders), by benchmark name."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(folder.glob("*.json"))}


def render_doc(text: str, results: dict[str, dict], plot_dir: Path | None,
               doc_dir: Path) -> str:
    """`text` with its generated blocks rewritten from `results` (plots drawn to plot_dir)."""
    sections = [section(name, data) for name, data in _ordered(results)]
    blocks = {s.name: render_section(s, plot_dir, doc_dir) for s in sections}
    if sections:
        blocks["summary"] = render_summary(sections)
    present = set(block_names(text))

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in blocks:
            return match.group(0)
        return f"<!-- generated:{name} -->\n{blocks[name]}\n<!-- /generated -->"

    text = BLOCK.sub(replace, text)
    for s in sections:
        if s.name not in present:
            text = (text.rstrip("\n") + f"\n\n## {s.title}\n\n<!-- generated:{s.name} -->\n"
                    f"{blocks[s.name]}\n<!-- /generated -->\n")
    return text


def block_names(text: str) -> list[str]:
    """The NAMEs of the generated blocks in `text`, in order."""
    return [m.group(1) for m in BLOCK.finditer(text)]


# -- normalising each kind of results file ---------------------------------------------------
def section(name: str, data: dict) -> Section:
    """A results file as a `Section`: the suite's own format, or an older script's."""
    if name == "finetune_quora" and "runs" in data:
        return _finetune_section(name, data)
    if name == "table_scroll" and "open" in data:
        return _table_scroll_section(name, data)
    result = data.get("result", {})
    s = Section(name=name, title=data.get("title") or _title(name),
                command=data.get("command", "?"), date=data.get("date", "?"),
                hardware=hardware_text(data.get("hardware", {})), mode=data.get("mode", ""),
                wall_seconds=data.get("wall_seconds"))
    if "skipped" in result:
        s.skipped = str(result["skipped"])
        return s
    s.headline = list(result.get("headline", []))
    s.tables = list(result.get("tables", []))
    s.plots = list(result.get("plots", []))
    s.notes = list(result.get("notes", []))
    if not (s.headline or s.tables):
        adapter = {"import_throughput": _import_tables,
                   "window_latency": _window_tables}.get(name)
        s.headline, s.tables = adapter(result) if adapter else ([], [_flat_table(result)])
    return s


def hardware_text(hw: dict) -> str:
    """"Intel(R) Xeon(R) Processor, 2 cores, 23.4 GiB RAM" (+ the GPU, if any)."""
    if not hw:
        return "?"
    cpu = hw.get("cpu") or hw.get("processor") or hw.get("machine") or "?"
    cores = hw.get("cores") or hw.get("cpu_count")
    parts = [cpu, f"{cores} cores" if cores else None,
             f"{hw['ram_gib']:g} GiB RAM" if hw.get("ram_gib") else None]
    parts.append(f"GPU {hw['gpu']}" if hw.get("gpu") else "CPU only")
    return ", ".join(p for p in parts if p)


def _finetune_section(name: str, data: dict) -> Section:
    """One row per recipe (objective, options and training size), its training seeds pooled:
    mean held-out AP with the lowest and highest; the recommended recipe in the headline."""
    before = data["before"]
    base_ap = before["average_precision"]
    groups: dict[tuple, list[dict]] = {}
    for r in data["runs"]:
        options = {k: v for k, v in r.get("options", {}).items() if k != "seed"}
        key = (r["train_pairs"], r["objective"], json.dumps(options, sort_keys=True),
               r.get("negative_pool", 0))
        groups.setdefault(key, []).append(r)
    rows, headline = [], []
    held = data.get("data", {})
    headline.append({"figure": f"held-out Quora AP ({held.get('measured_pairs', '?'):,} pairs), "
                               "default model",
                     "duplens": f"{base_ap:.2f}", "baseline": "", "ratio": "", "goal": "",
                     "met": None})
    goals = {int(k): v for k, v in data.get("goals", {}).items()}
    ordered = sorted(groups.values(), key=lambda g: (g[0]["train_pairs"], -_mean_ap(g)))
    for group in ordered:
        first = group[0]
        label = _recipe(first)
        done = [r for r in group if "after" in r]
        if not done:
            rows.append([label, f"{first['train_pairs']:,}", f"failed: {first['error']}",
                         "", "", "", "", "", ""])
            continue
        aps = [r["after"]["average_precision"] for r in done]
        mean = sum(aps) / len(aps)
        spread = f" ({min(aps):.2f}–{max(aps):.2f})" if len(aps) > 1 else ""
        seconds = sum(r["training_seconds"] for r in done) / len(done)
        per_pair = [r.get("seconds_per_pair") or r["total_seconds"] / r["train_pairs"]
                    for r in done if r.get("total_seconds")]
        rows.append([
            ("**recommended:** " if first.get("recommended") else "") + label,
            f"{first['train_pairs']:,}", len(done),
            f"{_bold_if(mean, before)} ({mean - base_ap:+.2f}){spread}",
            f"{sum(r['after']['f1'] for r in done) / len(done):.2f}", f"{seconds:.0f}",
            f"{sum(per_pair) / len(per_pair):.3f}" if per_pair else "",
            _loads(done),
            _minute(max(r.get("date", data.get("date", "?")) for r in done))])
        if first.get("recommended"):
            size = first["train_pairs"]
            goal = goals.get(size)
            seeds = f", mean of {len(aps)} seeds {min(aps):.2f}–{max(aps):.2f}" if spread else ""
            headline.append({
                "figure": f"held-out Quora AP after fine-tuning ({first['objective']}, "
                          f"{size:,} pairs{seeds})",
                "duplens": f"{mean:.2f}", "baseline": f"{base_ap:.2f} (default model)",
                "ratio": f"{mean - base_ap:+.2f} points",
                "goal": f"≥ +{goal:g} points" if goal else "",
                "met": None if goal is None else mean - base_ap >= goal})
    return Section(
        name=name, title="Fine-tuning objectives on Quora pairs", command=data.get("command", "?"),
        date=data.get("date", "?"), hardware=hardware_text(data.get("hardware", {})),
        headline=headline,
        tables=[{"title": f"Held-out AP (before: {base_ap:.2f}) and best F1 (before: "
                          f"{before['f1']:.2f}) on {held.get('measured_pairs', '?'):,} held-out "
                          f"pairs ({held.get('held_out_duplicates', '?'):,} duplicates); options "
                          f"as they differ from the engine's defaults",
                 "columns": ["recipe", "training pairs", "seeds",
                             "held-out AP after (gain) (lowest–highest)", "best F1 after",
                             "training s", "s per pair", "load average", "measured"],
                 "rows": rows}],
        notes=[f"Earlier runs kept by `--merge` were made by `{c}`."
               for c in data.get("earlier_commands", [])])


_LOSSES = {"contrastive": "`OnlineContrastiveLoss`", "triplet": "`TripletLoss`, margin 1",
           "cosine": "`CosineSimilarityLoss`",
           "mnrl": "`MultipleNegativesRankingLoss`, duplicates only",
           "softmax": "`SoftmaxLoss`",
           "contrastive+mnrl": "`OnlineContrastiveLoss` + `MultipleNegativesRankingLoss`"}


def _recipe(run: dict) -> str:
    """"contrastive (`OnlineContrastiveLoss`), learning_rate=5e-05" and the like."""
    changed = " ".join(part for part in run.get("changed", "").split()
                       if not part.startswith("seed="))
    pool = (f", negatives also from {run['negative_pool']:,} training-half questions"
            if run.get("negative_pool") else "")
    return (f"{run['objective']} ({_LOSSES.get(run['objective'], '?')})"
            f"{', ' + changed if changed else ''}{pool}")


def _loads(runs: list[dict]) -> str:
    """The 1-minute load average before → after each run ("" for runs that kept none): the
    training seconds beside it are only comparable at a like load."""
    return ", ".join(f"{r['load_before']} → {r['load_after']}" for r in runs
                     if r.get("load_before") and r.get("load_after"))


def _mean_ap(runs: list[dict]) -> float:
    aps = [r["after"]["average_precision"] for r in runs if "after" in r]
    return sum(aps) / len(aps) if aps else 0.0


def _minute(stamp: str) -> str:
    """"2026-11-23T06:58:00+00:00" -> "2026-11-23 06:58 UTC"."""
    return f"{stamp[:10]} {stamp[11:16]} UTC" if len(stamp) >= 16 else stamp


def _table_scroll_section(name: str, data: dict) -> Section:
    """benchmarks/table_scroll.py's own format: the rows table of a big project, in a window."""
    def timed(key: str, what: str) -> list:
        step = data.get(key)
        if not step:
            return [what, "not measured", ""]
        rows = f" ({step['rows']:,} rows)" if key.startswith("filter") else ""
        return [what + rows, f"{step['seconds']:.2f} s", f"{step['longest_gap_ms']} ms"]

    def steps(key: str, what: str) -> list:
        step = data.get(key)
        if not step:
            return [what, "not measured", ""]
        return [f"{what} ({step['steps']} steps; p50 / p95 / max, until its rows show)",
                f"{step['p50_ms']} / {step['p95_ms']} / {step['max_ms']} ms", "–"]

    project = data.get("project", {})
    rows = [timed("open", "open the project until its rows show"),
            steps("scroll_random", "scroll to random places"),
            steps("scroll_page_down", "page down"),
            timed("sort_text", "sort by Text"),
            timed("sort_number_desc", "sort by the number column, descending"),
            timed("filter_text", "filter on a word in the text"),
            timed("filter_all_columns", "filter on a word in all columns"),
            steps("scroll_random_sorted_filtered", "random places in the sorted, filtered table")]
    notes = [f"Load average during the run: {data['load_average']}."] \
        if data.get("load_average") else []
    return Section(
        name=name, title="The table of rows", command=data.get("command", "?"),
        date=data.get("date", "?"), hardware=data.get("machine", "?"),
        tables=[{"title": f"{project.get('rows', 0):,} rows, {project.get('file_mb', '?')} MB "
                          "project file, real window under Xvfb",
                 "columns": ["what", "time", "longest GUI freeze meanwhile"], "rows": rows}],
        notes=notes)


def _bold_if(ap_after: float, before: dict) -> str:
    """Bold where fine-tuning moved AP by at least 0.5 points, up or down."""
    moved = abs(ap_after - before["average_precision"]) >= 0.5
    return f"**{ap_after:.2f}**" if moved else f"{ap_after:.2f}"


def _import_tables(result: dict) -> tuple[list[dict], list[dict]]:
    """import_throughput's flat dict: bare encode vs the whole import."""
    bare, ours = result.get("bare_encode_rows_per_s"), result.get("duplens_import_rows_per_s")
    if bare is None or ours is None:
        return [], [_flat_table(result)]
    ratio = result.get("ratio", ours / bare)
    rows = result.get("rows", "?")
    headline = [{"figure": f"import throughput, {rows:,} rows (parse + store + encode + index)",
                 "duplens": f"{ours:,.1f} rows/s", "baseline": f"{bare:,.1f} rows/s (encode)",
                 "ratio": f"{ratio:.2f}×", "goal": "≥ 0.9×", "met": ratio >= 0.9}]
    table = {"title": f"{rows:,} distinct Quora questions, batch {result.get('batch_size', '?')}"
                      f", {result.get('device', 'cpu')}",
             "columns": ["pipeline", "rows/s", "ratio"],
             "rows": [["plain sentence-transformers encode", f"{bare:,.1f}", "1.00"],
                      ["Duplens import (parse + store + encode + index)", f"{ours:,.1f}",
                       f"**{ratio:.2f}**"]]}
    extra = {k: v for k, v in result.items()
             if k not in ("rows", "batch_size", "device", "machine", "bare_encode_rows_per_s",
                          "duplens_import_rows_per_s", "ratio")}
    return headline, [table] + ([_flat_table(extra, "More figures")] if extra else [])


def _window_tables(result: dict) -> tuple[list[dict], list[dict]]:
    start = result.get("time_to_window_s", {})
    keys = result.get("keystroke_to_results_ms", {})
    rows = [[f"process start → main window viewable ({len(start.get('runs', []))} runs)",
             f"{min(start.get('runs', [0])):.2f}–{max(start.get('runs', [0])):.2f} s, median "
             f"**{start.get('median', 0):.2f} s**"],
            [f"last keystroke → results shown, {result.get('queries', '?')} real questions",
             f"p50 **{keys.get('p50')} ms**, p95 **{keys.get('p95')} ms**, "
             f"max {keys.get('max')} ms"],
            ["of which the search box's debounce", f"{result.get('debounce_ms')} ms"]]
    bare = result.get("bare_pyside6_window_s")
    if bare:
        rows.insert(1, [f"baseline: a bare PySide6 window, same screen, in turns "
                        f"({len(bare.get('runs', []))} runs)",
                        f"median **{bare.get('median', 0):.2f} s** (Duplens "
                        f"+{start.get('median', 0) - bare.get('median', 0):.2f} s; goal ≤ +1 s)"])
    imp = result.get("import")
    if imp:
        rows.append([f"longest gap between 10 ms timer ticks while {imp['rows']:,} rows were "
                     f"imported ({imp['seconds']} s)",
                     f"**{imp['longest_gap_ms']} ms**, during {imp.get('during', '?')}"])
    return [], [{"title": result.get("inputs", ""), "columns": ["figure", "measured"],
                 "rows": rows}]


def _flat_table(data: dict, title: str = "Figures") -> dict:
    rows = []

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (int, float, str, bool)) or value is None:
            rows.append([prefix, value])

    walk("", data)
    return {"title": title, "columns": ["figure", "value"], "rows": rows}


# -- rendering -------------------------------------------------------------------------------
def render_section(s: Section, plot_dir: Path | None, doc_dir: Path) -> str:
    lines = [_caption(s), ""]
    if s.skipped:
        lines.append(f"_Not measured: {s.skipped}._")
        return "\n".join(lines)
    for table in s.tables:
        if table.get("title"):
            lines += [f"**{table['title']}**", ""]
        lines += [_md_table(table["columns"], table["rows"]), ""]
    for image in draw_plots(s.plots, plot_dir, doc_dir):
        lines += [image, ""]
    for note in s.notes:
        lines.append(f"- {note}")
    return "\n".join(lines).rstrip("\n")


def render_summary(sections: list[Section]) -> str:
    rows = []
    for s in sections:
        if s.skipped:
            rows.append([s.title, "not measured", "", "", "", "–", s.hardware,
                         f"`{s.command}`", _day(s.date)])
            continue
        for h in s.headline:
            met = h.get("met")
            rows.append([h.get("figure", ""), f"**{h.get('duplens', '')}**",
                         h.get("baseline", ""), h.get("ratio", ""), h.get("goal", ""),
                         "–" if met is None else ("yes" if met else "**no**"), s.hardware,
                         f"`{h.get('command') or s.command}`", _day(h.get("date") or s.date)])
    return _md_table(["figure", "Duplens", "baseline (plain sentence-transformers)", "ratio",
                      "goal", "met", "hardware", "command", "date"], rows)


def _caption(s: Section) -> str:
    run = f"{s.mode} run, " if s.mode else ""
    wall = f", {s.wall_seconds:.0f} s" if s.wall_seconds is not None else ""
    return f"_Measured {s.date} ({run}{s.hardware}{wall}): `{s.command}`._"


def _md_table(columns: list, rows: list[list]) -> str:
    def cell(value) -> str:
        text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(cell(c) for c in columns) + " |",
           "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def draw_plots(plots: list[dict], plot_dir: Path | None, doc_dir: Path) -> list[str]:
    """Draw each plot to plot_dir (PNG) and return its Markdown image lines."""
    if not plots or plot_dir is None:
        return []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["_(plots need matplotlib: `pip install -e \".[bench]\"`)_"]
    plot_dir.mkdir(parents=True, exist_ok=True)
    images = []
    for spec in plots:
        fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=110)
        for series in spec.get("series", []):
            ax.plot(series["x"], series["y"], marker="o", label=series.get("label"))
        labels = spec.get("annotate")
        if labels and spec.get("series"):
            first = spec["series"][0]
            for x, y, text in zip(first["x"], first["y"], labels, strict=False):
                ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, -10),
                            fontsize=8)
        if spec.get("logx"):
            ax.set_xscale("log")
        if spec.get("logy"):
            ax.set_yscale("log")
        ax.set_title(spec.get("title", ""), fontsize=11)
        ax.set_xlabel(spec.get("xlabel", ""))
        ax.set_ylabel(spec.get("ylabel", ""))
        ax.grid(True, which="both", alpha=0.3)
        if any(s.get("label") for s in spec.get("series", [])):
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = plot_dir / spec["file"]
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        rel = path.resolve().relative_to(doc_dir.resolve()) if path.resolve().is_relative_to(
            doc_dir.resolve()) else path
        images.append(f"![{spec.get('title', spec['file'])}]({rel.as_posix()})")
    return images


def _ordered(results: dict[str, dict]) -> list[tuple[str, dict]]:
    order = {b.name: i for i, b in enumerate(REGISTRY)}
    return sorted(results.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))


def _title(name: str) -> str:
    return BY_NAME[name].title if name in BY_NAME else name.replace("_", " ").capitalize()


def _day(date: str) -> str:
    return date[:10]


if __name__ == "__main__":
    sys.exit(main())
