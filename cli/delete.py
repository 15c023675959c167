"""``python -m cli delete RUN_ID ...``: remove stored runs, ROAR jobs or imports from the run store
(their catalogue rows, unit files and logs); a run that a live process writes is refused."""

from __future__ import annotations

import argparse

COMMAND = "delete"
HELP = "remove stored runs (catalogue rows, unit files, logs)"


def run(args: argparse.Namespace) -> int:
    from cli.common import print_json, printable, stored_runs
    from engine.runs.store import RunStore

    root = stored_runs(args.results_dir).root  # a mistyped --results-dir is refused, not created
    store = RunStore(root)
    deleted, refused = [], []
    for run_id in dict.fromkeys(args.run_ids):
        if not store.catalogue_path.exists():
            refused.append(f"no run {run_id!r} in {root}")
            continue
        try:
            deleted.append(store.delete(run_id))
        except ValueError as error:
            refused.append(str(error))
    if args.json:
        print_json({"deleted": [info.run_id for info in deleted], "refused": refused})
    else:
        for info in deleted:
            print(
                printable(f"deleted {info.run_id} ({info.kind}: {info.model} / {info.dataset}, {info.rows_done} rows)")
            )
    if refused:
        raise ValueError("; ".join(refused))
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument(
        "run_ids", nargs="+", metavar="RUN_ID", help="the runs to remove (`python -m cli runs` lists them)"
    )
    parser.add_argument("--results-dir", help="run store folder (default: $ATTRIBUTION_RESULTS_DIR, else ./results)")
    parser.add_argument("--json", action="store_true", help="print what was deleted and refused as JSON")
    parser.set_defaults(run=run)
