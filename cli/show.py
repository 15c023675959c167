"""``python -m cli show RUN_ID``: a stored run read back, summarised from its stored rows with the
code ``evaluate`` uses, so it prints what ``evaluate`` prints for the same slice."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

COMMAND = "show"
HELP = "a stored run read back (the summary `evaluate` prints)"
EVALUATION_KINDS = ("evaluate", "import")  # kinds whose rows are a dataset evaluation, as `evaluate` prints


def print_run(store, run_id: str, *, per_example: bool = False, as_json: bool = False) -> int:
    """Print a stored run as ``evaluate`` prints a slice, plus its catalogue entry under ``run``;
    the exit status, 1 for a failed run that stored no example or where every method failed on
    every example (``nothing_explained``); a failed run's stored examples are shown as a result."""
    from cli.common import nothing_explained, print_json, print_summary_table, printable, store_option
    from engine.evaluate import metric_params
    from engine.runs.executor import read_evaluation
    from engine.slice_report import slice_report

    found = store.get(run_id)
    if found.kind not in EVALUATION_KINDS:
        raise ValueError(f"`show` prints dataset evaluations; {shown_elsewhere(found, store_option(store))}")
    info, evaluation = read_evaluation(store, run_id)
    header = {
        "model": info.model,
        "dataset": info.dataset,
        "split": info.split,
        "selection": {"random": None, "limit": info.selection.get("limit"), "seed": info.seed},
        "target": info.target,
        "autocast": info.selection.get("autocast"),
    }
    params_by_metric = metric_params(info.metrics, info.overrides)
    payload = slice_report(evaluation, params_by_metric, header, info.wall_s, per_example=per_example)
    payload["run"] = run_json(info, store.root)
    if as_json:
        print_json(payload)
    else:
        print(printable(f"{info.run_id}: {info.shown_status}, {info.rows_done} of {info.rows_total} examples"))
        print_summary_table(payload)
    if info.status != "done":
        step = next_step(info, store_option(store), store.root)
        print(printable(f"{info.run_id} {state_text(info)}: {step}"), file=sys.stderr)
    return 1 if (info.status == "failed" and info.rows_done == 0) or nothing_explained(payload) else 0


def state_text(info) -> str:
    """How a run that is not done stands, for a sentence: ``is running`` (``killed``, ``stopped``),
    or ``failed (its stored error)``."""
    if info.status == "failed":
        return f"failed ({info.error})" if info.error else "failed"
    return f"is {info.shown_status}"


def next_step(info, where: str = "", root: Path | None = None) -> str:
    """What to do about a dataset evaluation or import ``info`` that is not done (``where``: the
    store's ``--results-dir`` option, ``cli.common.store_option``; ``root``: the store's folder,
    where a live writer says how far it is inside its unit)."""
    if info.being_written:
        now = now_text(info, root)
        return f"process {info.pid} on {info.host} is writing it" + (f" (now {now})" if now else "")
    if info.kind == "import":
        return _import_again(info)
    return f"resume it with `python -m cli run --resume {info.run_id}{where}`"


def shown_elsewhere(info, where: str = "") -> str:
    """Which command and page handle ``info``, a run that is not a dataset evaluation (a ROAR job,
    a reproduction; an import for ``run --resume``), as a sentence."""
    if info.kind == "roar":
        does = "prints its results" if info.status == "done" else "computes its missing units and prints its results"
        return (
            f"{info.run_id} is a ROAR job (kind roar): `python -m cli roar --resume {info.run_id}{where}` {does}, and the"
            " Remove and retrain page shows it"
        )
    if info.kind == "reproduce":
        name, limit = info.selection.get("name"), info.selection.get("limit")
        return (
            f"{info.run_id} is a reproduction (kind reproduce): `python -m cli reproduce {name} --cached --limit"
            f" {limit}{where}` prints it, and the Reproductions page shows it"
        )
    if info.kind == "import":
        return f"{info.run_id} is an import (kind import): {_import_again(info)}"
    return f"{info.run_id} is a run of kind {info.kind}, not a dataset evaluation"


def _import_again(info) -> str:
    """How an import is computed again: by importing its file again."""
    return f"import its file ({info.selection['import']['file']}) again with `python -m cli import`"


def now_text(info, root: Path | None) -> str | None:
    """Where the live writer of ``info`` is inside its unit, "examples 113-128 of 200 · explaining
    lime, 61 s in" (``engine.runs.live``), or None."""
    from engine.runs.live import read_live

    live = read_live(root, info) if root is not None else None
    return f"{live.message}, {live.wall_s:.0f} s in" if live is not None else None


def run_json(info, root: Path | None = None) -> dict:
    """A catalogue entry as JSON, with ``now`` (the live writer's fraction, line and seconds, or
    None) when the store's folder ``root`` is given."""
    from engine.runs.live import read_live

    live = read_live(root, info) if root is not None else None
    return {
        "run_id": info.run_id,
        "status": info.shown_status,  # killed: marked running, its writer gone, as the text says
        "writer_gone": info.writer_gone,
        "error": info.error,
        "kind": info.kind,
        "model": info.model,
        "model_fingerprint": info.model_fingerprint,
        "dataset": info.dataset,
        "split": info.split,
        "selection": info.selection,
        "methods": list(info.methods),
        "metrics": list(info.metrics),
        "params": info.params,
        "seed": info.seed,
        "target": info.target,
        "code_version": info.code_version,
        "created": info.created.isoformat(),
        "updated": info.updated.isoformat(),
        "rows_done": info.rows_done,
        "rows_total": info.rows_total,
        "units_done": info.units_done,
        "units_total": info.units_total,
        "wall_s": info.wall_s,
        "forward_passes": info.forward_passes,
        "executor": info.executor,
        "imported": info.selection.get("import"),
        "now": {"fraction": live.fraction, "line": live.message, "wall_s": live.wall_s} if live is not None else None,
    }


def run(args: argparse.Namespace) -> int:
    from cli.common import check_per_example, stored_runs

    check_per_example(args)
    return print_run(stored_runs(args.results_dir), args.run_id, per_example=args.per_example, as_json=args.json)


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument("run_id", metavar="RUN_ID", help="run id (see `python -m cli runs`)")
    parser.add_argument("--per-example", action="store_true", help="add every example's words, scores and values")
    parser.add_argument("--results-dir", help="run store folder (default: $ATTRIBUTION_RESULTS_DIR, else ./results)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
