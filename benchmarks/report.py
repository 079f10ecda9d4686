"""Regenerate docs/benchmarks.md's generated blocks (and plots) from benchmarks/results/*.json.

    python -m benchmarks.report [--results DIR] [--doc FILE] [--plots DIR]

The page is written by hand; only the text between `<!-- generated:NAME -->` and
`<!-- /generated -->` is replaced, NAME being a results file's name (`summary` is the table
of every headline figure). A result with no block in the page gets a new section at the
end; a block with no result is left as it is. `NAME@MACHINE.json` is benchmark NAME run on
another machine (a CPU unlike the one the page's other figures come from), kept beside
NAME.json rather than over it: it is rendered by NAME's own `present` into its own block
`NAME@MACHINE`, and its caption names its hardware like every block's. Every block names the
hardware, the command and the date of its run, and every summary row does too, with what its
baseline is.

What is shown is derived here, from the figures each file measured: a benchmark module with
`present(result, results)` has its headline, tables, plots and notes made by it from the raw
result (`results` being every results file, for a figure read from another), so a wording
changes in the code, never in a results file, and nothing shown can be edited by hand.
`tests/test_benchmark_report.py` renders the page from benchmarks/results/ and compares it
with the committed one.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
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

BLOCK = re.compile(r"<!-- generated:([\w@-]+) -->\n.*?<!-- /generated -->", re.DOTALL)


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
               doc_dir: Path, *, draw: bool = True) -> str:
    """`text` with its generated blocks rewritten from `results` (plots drawn to plot_dir;
    with `draw` False only their image lines are written, the PNGs left as they are)."""
    sections = [section(name, data, results) for name, data in _ordered(results)]
    blocks = {s.name: render_section(s, plot_dir, doc_dir, draw=draw) for s in sections}
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
def section(name: str, data: dict, results: dict[str, dict] | None = None) -> Section:
    """A results file as a `Section`: what its module's `present` derives from the raw
    result, else what the file holds (an older script's format through an adapter)."""
    if name == "table_scroll" and "open" in data:
        return _table_scroll_section(name, data)
    whole = name == "finetune_quora" and "runs" in data   # the script's own format
    result = data if whole else data.get("result", {})
    s = Section(name=name, title=_title(name, data.get("title")),
                command=data.get("command", "?"), date=data.get("date", "?"),
                hardware=hardware_text(data.get("hardware", {})), mode=data.get("mode", ""),
                wall_seconds=data.get("wall_seconds"))
    if "skipped" in result:
        s.skipped = str(result["skipped"])
        return s
    presenter = _presenter(name)
    derived = {}
    if presenter:
        # A presenter whose words depend on the machine (the CPU's vendor) takes `hardware`;
        # one that names the file's own commands takes `file` (the whole results file).
        wants = inspect.signature(presenter).parameters
        extra = {k: v for k, v in (("hardware", data.get("hardware", {})), ("file", data))
                 if k in wants}
        derived = presenter(result, results or {}, **extra)
    s.headline = list(derived.get("headline", result.get("headline", [])))
    s.tables = list(derived.get("tables", result.get("tables", [])))
    s.plots = list(derived.get("plots", result.get("plots", [])))
    s.notes = list(derived.get("notes", result.get("notes", [])))
    if not (s.headline or s.tables):
        adapter = {"import_throughput": _import_tables,
                   "window_latency": _window_tables}.get(name)
        s.headline, s.tables = adapter(result) if adapter else ([], [_flat_table(result)])
    return s


def _presenter(name: str):
    """The benchmark module's `present(result, results)` (NAME's for "NAME@MACHINE"), or
    None where there is no such module (a results file of another kind). A module that
    exists but cannot be imported fails the report: rendering its section from what the file
    happens to hold would show stale or missing text as if it were derived."""
    name = benchmark_of(name)
    if importlib.util.find_spec(f"benchmarks.{name}") is None:
        return None
    module = importlib.import_module(f"benchmarks.{name}")
    return getattr(module, "present", None)


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


def _import_tables(result: dict) -> tuple[list[dict], list[dict]]:
    """import_throughput's flat dict: bare encode vs the whole import."""
    bare, ours = result.get("bare_encode_rows_per_s"), result.get("duplens_import_rows_per_s")
    if bare is None or ours is None:
        return [], [_flat_table(result)]
    ratio = result.get("ratio", ours / bare)
    rows = result.get("rows", "?")
    headline = [{"figure": f"import throughput, {rows:,} rows (parse + store + encode + index)",
                 "duplens": f"{ours:,.1f} rows/s", "baseline": f"{bare:,.1f} rows/s",
                 "baseline_is": "plain sentence-transformers encode of the same texts, same "
                                "run",
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
def render_section(s: Section, plot_dir: Path | None, doc_dir: Path, *,
                   draw: bool = True) -> str:
    lines = [_caption(s), ""]
    if s.skipped:
        lines.append(f"_Not measured: {s.skipped}._")
        return "\n".join(lines)
    for table in s.tables:
        if table.get("title"):
            lines += [f"**{table['title']}**", ""]
        lines += [_md_table(table["columns"], table["rows"]), ""]
    for image in draw_plots(s.plots, plot_dir, doc_dir, draw=draw):
        lines += [image, ""]
    for note in s.notes:
        lines.append(f"- {note}")
    return "\n".join(lines).rstrip("\n")


SUMMARY_COLUMNS = ["figure", "Duplens", "baseline", "baseline is (as run)", "ratio", "goal",
                   "met", "hardware", "command", "date"]


def render_summary(sections: list[Section]) -> str:
    """One row per headline figure; "baseline is" says what the baseline was and whether it
    ran in the same run (a headline's `baseline_is`; "–" where a figure has no baseline)."""
    rows = []
    for s in sections:
        if s.skipped:
            rows.append([s.title, "not measured", "", "", "", "", "–", s.hardware,
                         f"`{s.command}`", _day(s.date)])
            continue
        for h in s.headline:
            met = h.get("met")
            baseline = h.get("baseline", "")
            rows.append([h.get("figure", ""), f"**{h.get('duplens', '')}**", baseline,
                         h.get("baseline_is") or ("?" if baseline not in ("", "—", "–")
                                                  else "–"),
                         h.get("ratio", ""), h.get("goal", ""),
                         "–" if met is None else ("yes" if met else "**no**"), s.hardware,
                         f"`{h.get('command') or s.command}`", _day(h.get("date") or s.date)])
    return _md_table(SUMMARY_COLUMNS, rows)


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


def draw_plots(plots: list[dict], plot_dir: Path | None, doc_dir: Path, *,
               draw: bool = True) -> list[str]:
    """Draw each plot to plot_dir (PNG) and return its Markdown image lines (with `draw`
    False, the lines only: what the page says does not depend on matplotlib)."""
    if not plots or plot_dir is None:
        return []
    if not draw:
        return [f"![{spec.get('title', spec['file'])}]"
                f"({_image_path(plot_dir / spec['file'], doc_dir)})" for spec in plots]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:   # the page stays the same; only the PNGs are not redrawn
        print("matplotlib is not installed: the plots were not redrawn "
              "(`pip install -e \".[bench]\"`)", file=sys.stderr)
        return draw_plots(plots, plot_dir, doc_dir, draw=False)
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
        images.append(f"![{spec.get('title', spec['file'])}]({_image_path(path, doc_dir)})")
    return images


def _image_path(path: Path, doc_dir: Path) -> str:
    rel = path.resolve().relative_to(doc_dir.resolve()) if path.resolve().is_relative_to(
        doc_dir.resolve()) else path
    return rel.as_posix()


def benchmark_of(name: str) -> str:
    """The benchmark a results file's name is of: "cpu_classes@amd-zen5" -> "cpu_classes"."""
    return name.split("@", 1)[0]


def _ordered(results: dict[str, dict]) -> list[tuple[str, dict]]:
    """Registry order, each benchmark's other machines right after it."""
    order = {b.name: i for i, b in enumerate(REGISTRY)}
    return sorted(results.items(), key=lambda kv: (
        order.get(benchmark_of(kv[0]), len(order)), benchmark_of(kv[0]), kv[0]))


def _title(name: str, recorded: str | None = None) -> str:
    """The results file's own title, else the registry's; "(on MACHINE)" for another
    machine's run."""
    base = benchmark_of(name)
    title = recorded or (BY_NAME[base].title if base in BY_NAME
                         else base.replace("_", " ").capitalize())
    return title if base == name else f"{title} (on {name.split('@', 1)[1]})"


def _day(date: str) -> str:
    return date[:10]


if __name__ == "__main__":
    sys.exit(main())
