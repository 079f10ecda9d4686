"""`duplens eval sts|pairs`: a model's quality on labelled data, no project needed."""

from __future__ import annotations

import json

from engine.cli.common import EXIT_OK, Parser, json_option, model_options
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("eval", help="measure a model on labelled data")
    ev = p.add_subparsers(dest="eval_kind", required=True, parser_class=Parser)
    e = ev.add_parser("sts", help="Spearman x100 of cosine similarity vs gold scores "
                      "(columns: score, sentence1, sentence2)")
    e.add_argument("file", help="the labelled pairs (.csv, .tsv, .xlsx, …)")
    e.add_argument("--columns", nargs=3, metavar=("SCORE", "TEXT1", "TEXT2"),
                   help="the file's columns (default: score sentence1 sentence2)")
    json_option(e, "the result")
    model_options(e)
    e = ev.add_parser("pairs", help="average precision and best F1 on duplicate labels "
                      "(columns: question1, question2, is_duplicate)")
    e.add_argument("file", help="the labelled pairs (.csv, .tsv, .xlsx, …)")
    e.add_argument("--columns", nargs=3, metavar=("TEXT1", "TEXT2", "LABEL"),
                   help="the file's columns (default: question1 question2 is_duplicate)")
    json_option(e, "the result")
    model_options(e)
    p.set_defaults(run=cmd_eval)


def cmd_eval(args, _cancel: CancelToken) -> int:
    from engine.encoding.loading import load_encoder
    from engine.evaluation import PAIR_COLUMNS, STS_COLUMNS, evaluate_pairs, evaluate_sts

    encoder = load_encoder(args.model, device=args.device, batch_size=args.batch_size,
                           backend=args.backend)
    spec = encoder.spec
    if args.eval_kind == "sts":
        result = evaluate_sts(encoder, args.file, tuple(args.columns or STS_COLUMNS))
        line = f"Spearman x100: {result['spearman']:.2f} ({result['pairs']} pairs, {spec.name})"
    else:
        result = evaluate_pairs(encoder, args.file, tuple(args.columns or PAIR_COLUMNS))
        line = (f"average precision: {result['average_precision']:.2f}  best F1: "
                f"{result['f1']:.2f} at cosine {result['threshold']:.4f} "
                f"({result['pairs']} pairs, {spec.name})")
    print(json.dumps(result) if args.json else line)
    return EXIT_OK
