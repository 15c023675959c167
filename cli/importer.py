"""``python -m cli import FILE``: attributions made elsewhere (this project's JSON, CSV, ferret,
inseq, Thermostat) stored as a run beside computed ones (``engine.imports``); prints the run as
``show`` does."""

from __future__ import annotations

import argparse
import os
import sys

from engine.imports import FORMATS

COMMAND = "import"
HELP = "store attributions made elsewhere as a run (JSON, CSV, ferret, inseq, Thermostat)"


def run(args: argparse.Namespace) -> int:
    import explainers
    from cli.common import (
        check_data_dir,
        check_per_example,
        metric_keys,
        parse_params,
        print_stopped,
        printable,
        progress_bar,
        sigterm_stops,
        split_of,
    )
    from cli.show import print_run
    from engine.imports import import_file
    from engine.runs.store import RunStore

    check_per_example(args)
    if args.data_dir is not None and args.dataset is None:
        raise ValueError("--data-dir is the folder of --dataset: add --dataset and --split")
    if args.dataset is not None:
        check_data_dir(args.data_dir)
    split = split_of(args)  # a data file's is "all" when none is given, as in every command
    if (args.dataset is None) != (split is None):
        raise ValueError("give both --dataset and --split, or neither (the examples then come from the file)")
    methods = explainers.resolve(args.methods, args.methods_default)
    metrics, overrides = metric_keys(args.metrics, args.model), parse_params(args.param)
    if unknown := set(overrides) - set(methods) - set(metrics):
        raise ValueError(f"--param for methods or metrics not requested: {', '.join(sorted(unknown))}")
    if not os.path.exists(args.file):
        raise ValueError(f"{args.file}: no such file")
    try:
        with sigterm_stops():  # a stopped import, as Ctrl-C leaves it, not a killed one
            outcome = import_file(
                args.file,
                RunStore(args.results_dir),  # written only once the file passed its checks: a refusal leaves none
                fmt=args.format,
                model=args.model,
                dataset=args.dataset,
                split=split,
                data_dir=args.data_dir,
                methods=methods,
                metrics=metrics,
                overrides=overrides,
                target=args.target,
                mlm=args.mlm,
                progress=progress_bar(100, enabled=not args.quiet, unit="%"),
            )
    except (KeyboardInterrupt, SystemExit) as stop:
        return print_stopped(f"the import of {args.file} stopped; the same command goes on where it stopped", stop)
    info = outcome.info
    for note in outcome.notes:  # shown with --quiet too: a warning, not progress
        print(printable(f"warning: {note}"), file=sys.stderr)
    if not args.quiet:
        origin = info.selection["import"]
        state = "imported" if outcome.created else "already imported"
        print(
            printable(
                f"{info.run_id}: {state} from {origin['file']} ({origin['format']}, {origin['records']} records,"
                f" {info.rows_total} examples)"
            ),
            file=sys.stderr,
        )
    return print_run(RunStore(args.results_dir), info.run_id, per_example=args.per_example, as_json=args.json)


def register(sub) -> None:
    from cli.common import add_methods
    from engine.evaluate import DEFAULT_METRICS

    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument(
        "file",
        metavar="FILE",
        help="the file (a session bundle's zip too) or a Thermostat `datasets` save_to_disk folder",
    )
    parser.add_argument("--format", choices=FORMATS, help="the file's format (default: detected from its content)")
    parser.add_argument(
        "--model", required=True, help="the model the attributions explain (bundled name, hub id or folder)"
    )
    parser.add_argument(
        "--dataset", help="match the records to this dataset's examples by id (else the file's own text)"
    )
    parser.add_argument("--split", help="split of --dataset (a data file's: all when not given)")
    parser.add_argument("--data-dir", help="data folder of --dataset (default: $ATTRIBUTION_DATA_DIR)")
    add_methods(parser, "", "; the built-in methods to compute beside the imported ones")
    parser.add_argument("--metrics", help=f"'all' or comma-separated metric keys (default: {DEFAULT_METRICS})")
    parser.add_argument("--param", action="append", metavar="KEY.NAME=VALUE", help="method or metric parameter")
    parser.add_argument("--target", choices=("predicted", "gold"), default="predicted",
                        help="class explained where the file names none")  # fmt: skip
    parser.add_argument("--mlm", default="minilm-mlm", help="masked LM for methods and removals that need one")
    parser.add_argument("--results-dir", help="run store folder (default: $ATTRIBUTION_RESULTS_DIR, else ./results)")
    parser.add_argument("--per-example", action="store_true", help="add every example's words, scores and values")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
