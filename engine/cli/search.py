"""`duplens search`: the most similar existing rows to one text."""

from __future__ import annotations

import json
import sys

from engine.cli.common import (
    EXIT_OK,
    backend_option,
    nothing_indexed,
    one_line,
    open_project,
    positive,
    prefer_torch_free,
    prepare_torch_free,
    project_argument,
    say,
    trust_option,
)
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("search", help="the most similar existing rows to a text")
    project_argument(p)
    p.add_argument("text", help="the text to look for")
    p.add_argument("-k", type=positive, default=10,
                   help="how many of the most similar rows to print (default 10)")
    p.add_argument("--json", action="store_true",
                   help="print the hits as JSON: [{id, row, text, score, item_id, source_id, "
                   "copies, overlap, differing}, ...], with passage [start, end] for a long "
                   "text, whose overlap is the passage's")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, "
                   "cuda or mps; on the CPU a model already checked against its ONNX export "
                   "answers without loading torch")
    backend_option(p)
    trust_option(p)
    p.set_defaults(run=cmd_search)


def cmd_search(args, _cancel: CancelToken) -> int:
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        empty = nothing_indexed(project, "nothing to search")
        if empty:
            say(empty)
            if args.json:
                print("[]")
            return EXIT_OK
        prefer_torch_free(project, args.device, args.backend)
        active = project.model.row()
        if args.backend and active is not None:
            # The query must match the stored embeddings: an int8 backend cannot serve a
            # project encoded with torch (and the reverse); an exact one can.
            project.model.configure(backend=project.model.serving_backend(active, args.backend))
        hits = project.search(args.text, args.k)
        for notice in project.notices:
            say(notice)
        _print_hits(args, hits)
        prepare_torch_free(project)   # when torch had to serve: the next search will not
    return EXIT_OK


def _print_hits(args, hits) -> None:
    from engine.review.overlap import overlap

    found = [overlap(args.text, h.matched_text()) for h in hits]
    if args.json:
        print(json.dumps([{**h.as_json(), "overlap": round(o.jaccard, 4),
                           "differing": list(o.differing)} for h, o in zip(hits, found,
                                                                           strict=True)],
                         ensure_ascii=False, indent=1))
    else:
        for h, o in zip(hits, found, strict=True):
            copies = f" (+{h.copies - 1} identical)" if h.copies > 1 else ""
            shown = one_line(h.text)
            if h.passage is not None and h.passage[0] > 0:   # where in a long text it matched
                shown = "…" + one_line(h.text[h.passage[0]:h.passage[1]], 99)
            print(f"{h.score:.3f}  ∩{o.jaccard:.2f}  [{h.id}]  {shown}{copies}")
    sys.stdout.flush()   # the results are out before any preparation for the next search
