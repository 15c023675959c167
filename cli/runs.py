"""``python -m cli runs``: the run store's catalogue, newest first."""

from __future__ import annotations

import argparse

COMMAND = "runs"
HELP = "the stored runs (id, status, progress, model, data, methods)"


def run(args: argparse.Namespace) -> int:
    from cli.common import print_json, printable, stored_runs
    from cli.show import now_text, run_json

    store = stored_runs(args.results_dir)
    infos = store.infos()
    if args.json:
        print_json([run_json(info, store.root) for info in infos])
        return 0
    if not infos:
        print(f"no runs in {store.root}{_without_catalogue(store)}")
        return 0
    print(f"{'run':<16}  {'status':<8}  {'rows':>11}  {'wall':>8}  {'created (UTC)':<19}  model / data / methods")
    for info in infos:
        status = info.shown_status
        origin = info.selection.get("import")
        note = f" (imported from {origin['file']}, {origin['format']})" if origin else ""
        if info.kind == "reproduce":  # engine.reproduce.stored: a reproduction's result
            note = f" (reproduce {info.selection['name']} --limit {info.selection['limit']})"
        data = f"{info.dataset}:{info.split}" if info.split else info.dataset
        line = (
            f"{info.run_id:<16}  {status:<8}  {info.rows_done:>5}/{info.rows_total:<5}  {info.wall_s:>7.1f}s"
            f"  {info.created:%Y-%m-%d %H:%M:%S}  {info.model} / {data} / {','.join(info.methods)}{note}"
        )
        print(printable(line))
        now = now_text(info, store.root)
        if now:
            print(printable(f"{'':16}  now {now}"))
    return 0


def _without_catalogue(store) -> str:
    """What an empty listing leaves out: run folders whose catalogue was deleted (they hold rows
    but not what the rows are of, so they cannot be listed)."""
    if store.catalogue_path.exists():
        return ""
    folders = [path for path in (store.root / "runs").glob("run-*") if path.is_dir()]
    if not folders:
        return ""
    return f", but {len(folders)} run folder(s) under runs/ without the catalogue ({store.catalogue_path.name}) to list them"


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument("--results-dir", help="run store folder (default: $ATTRIBUTION_RESULTS_DIR, else ./results)")
    parser.add_argument("--json", action="store_true", help="print one JSON array")
    parser.set_defaults(run=run)
