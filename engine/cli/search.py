"""`duplens search`: the most similar existing entries to one text."""

from __future__ import annotations

import json

from engine.cli.common import (
    EXIT_OK,
    backend_option,
    one_line,
    open_project,
    say,
    trust_option,
)
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("search", help="the most similar existing entries to a text")
    p.add_argument("project")
    p.add_argument("text")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--json", action="store_true")
    p.add_argument("--device", default="auto")
    backend_option(p)
    trust_option(p)
    p.set_defaults(run=cmd_search)


def cmd_search(args, _cancel: CancelToken) -> int:
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        project.model.configure(device=args.device)
        active = project.model.row()
        if args.backend and active is not None:
            # The query must match the stored embeddings: an int8 backend cannot serve a
            # project encoded with torch (and the reverse); an exact one can.
            project.model.configure(backend=project.model.serving_backend(active, args.backend))
        hits = project.search(args.text, args.k)
        for notice in project.notices:
            say(notice)
    from engine.review.overlap import overlap

    found = [overlap(args.text, h.text) for h in hits]
    if args.json:
        print(json.dumps([{**h.as_json(), "overlap": round(o.jaccard, 4),
                           "differing": list(o.differing)} for h, o in zip(hits, found,
                                                                           strict=True)],
                         ensure_ascii=False, indent=1))
    else:
        for h, o in zip(hits, found, strict=True):
            copies = f" (+{h.copies - 1} identical)" if h.copies > 1 else ""
            print(f"{h.score:.3f}  ∩{o.jaccard:.2f}  [{h.id}]  {one_line(h.text)}{copies}")
    return EXIT_OK
