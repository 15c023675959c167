"""``python -m cli roar``: a ROAR / ROAR_BERT / Recursive ROAR job kept in the run store
(``engine.roar``): prints its cost first (retrains, explanations, time from a measured training
step), runs the units not stored yet (a killed job resumes with ``--resume RUN_ID`` or the same
command), then prints the curves, Madsen et al.'s Eq. 3, Pham et al.'s t-tests and the leakage
flags."""

from __future__ import annotations

import argparse
import json
import sys

COMMAND = "roar"
HELP = "remove and retrain (ROAR, ROAR_BERT, Recursive ROAR), resumable"
LEVEL_PRESETS = {
    "pham2022": "10,20,30",
    "madsen2022": ",".join(str(n) for n in range(0, 101, 10)),
    "tokens": ",".join(f"{n}t" for n in range(11)),
}


def parse_levels(text: str):
    from core.params import current_name
    from experiments.roar.removal import Level

    preset = LEVEL_PRESETS.get(current_name(text), text)
    return tuple(Level.parse(part) for part in preset.split(",") if part.strip())


def job_from_args(args: argparse.Namespace):
    """The job the options ask for; a refused setting is worded with its option."""
    from core.params import SettingError

    try:
        return _job(args)
    except SettingError as error:
        raise ValueError(error.on_command_line()) from None


def _job(args: argparse.Namespace):
    from cli.common import method_keys
    from experiments.roar.job import RoarJob

    on_model = args.model is not None or args.dataset is not None
    return RoarJob(
        methods=tuple(method_keys(args)),
        task=None if on_model and args.task is None else (args.task or "sst2"),
        model=args.model,
        dataset=args.dataset,
        removal=args.removal,
        levels=parse_levels(args.levels),
        recursive=args.recursive,
        seeds=args.seeds,
        train_size=args.train_size,
        eval_size=args.eval_size,
        train_steps=args.train_steps,
        target=args.target,
        rounding=args.rounding,
        order=args.order,
        scope=args.scope,
        mlm=args.mlm,
    )


def run(args: argparse.Namespace) -> int:
    from cli.common import print_stopped, progress_bar, sigterm_stops, store_option
    from engine.roar.cost import cost_json, estimate
    from engine.roar.report import job_report, save_report, summary
    from engine.roar.run import execute_job, job_of, open_job, prepare_job
    from engine.runs.store import RunStore
    from engine.runs.writers import claim_refusal

    check_flags(args)
    reader = RunStore(args.results_dir, read_only=True)  # a refused job and an estimate create nothing
    job = job_of(reader.get(args.resume)) if args.resume else job_from_args(args)
    prepared = prepare_job(job, reader, data_dir=args.data_dir, resume=args.resume)
    run_id, found = prepared.run_id, reader.find(prepared.run_id)
    refusal = claim_refusal(run_id, reader.root, found) if found is not None else None
    if refusal is not None and not args.estimate_only:  # another process writes it: refused before the cost
        raise ValueError(refusal)
    if not args.quiet:
        new = "not stored: an estimate only)" if args.estimate_only else "new)"
        stored = f"{found.shown_status}): {found.units_done} of {found.units_total} units stored" if found else new
        print(f"job {run_id} ({stored}", file=sys.stderr)
    # nothing stored before the go-ahead; a finished job is estimated only when asked to be
    if args.estimate_only or (not args.no_estimate and (found is None or found.status != "done")):
        cost, rates = estimate(prepared.data)
        shown = cost_json(cost, rates)
        left = ""
        if found is not None and 0 < found.units_done < found.units_total:  # units of about one size: pro rata
            share = (found.units_total - found.units_done) / found.units_total
            left = (
                f"; about {cost.seconds * share / 60:.1f} min for the {found.units_total - found.units_done} units left"
            )
        print(
            f"cost: {cost.retrains} retrains ({cost.training_steps} training steps), "
            f"{cost.total_explanations} explanations, {cost.fills} masked-LM fills, {cost.predictions} predictions; "
            f"about {cost.seconds / 60:.1f} min on one worker for the whole job ({rates.seconds_per_step:.2f} s per "
            f"training step){left}",
            file=sys.stderr,
        )
        if args.estimate_only:
            if args.json:  # else the cost line above is the answer
                print(json.dumps({"run_id": run_id, "cost": shown}, indent=2))
            return 0
    store = RunStore(args.results_dir)
    opened = open_job(prepared, store)
    try:
        with sigterm_stops():  # a stopped job, not a killed one
            info = execute_job(
                opened,
                store,
                executor=args.executor,
                data_dir=args.data_dir,
                progress=progress_bar(opened.info.units_total, enabled=not args.quiet, unit="unit"),
            )
    except (KeyboardInterrupt, SystemExit) as stop:
        info = store.get(run_id)
        return print_stopped(
            f"{run_id} stopped after {info.units_done} of {info.units_total} units; continue it with "
            f"`python -m cli roar --resume {run_id}{store_option(store)}`",
            stop,
        )
    report = job_report(store, run_id, args.data_dir)
    if args.export:
        save_report(report, args.export)
    result = {
        "run_id": run_id,
        "status": info.status,
        "command": report["command"],
        "units_done": info.units_done,
        "units_total": info.units_total,
        "wall_s": round(info.wall_s, 1),
        **summary(report, args.metric),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_summary(result)
    return 0


def check_flags(args: argparse.Namespace) -> None:
    """Refuse contradictory flags and an ``--export`` path that cannot be written, before any
    work: the report is written only when the job ends, hours later."""
    from cli.common import writable_file
    from cli.run import settings_given

    if args.estimate_only and args.no_estimate:
        raise ValueError("--estimate-only and --no-estimate contradict each other: give one of them")
    if args.export and args.estimate_only:
        raise ValueError("--export writes the job's report when it ends; --estimate-only does not run the job")
    if args.export:
        writable_file(args.export, "--export")
    if args.resume and (ignored := settings_given(args, JOB_SETTINGS)):
        print(f"--resume uses the job's own settings: {', '.join(ignored)} ignored", file=sys.stderr)


# A job's settings (``job_from_args``): with --resume, the stored job's.
JOB_SETTINGS = ("task", "model", "dataset", "methods", "removal", "levels", "recursive", "seeds", "train_size",
                "eval_size", "train_steps", "target", "rounding", "order", "scope", "mlm")  # fmt: skip


def print_summary(result: dict) -> None:
    """The job's curves, Eq. 3, t-tests and leakage flags; what the store holds printed escaped."""
    from cli.common import printable
    from metrics.base import interval_text

    print(
        printable(
            f"{result['run_id']} {result['status']}: {result['units_done']}/{result['units_total']} units, "
            f"{result['wall_s']} s"
        )
    )
    print(printable(result["command"]))
    for method, cells in result["curves"].items():
        values = "  ".join(f"{c['level']}: {interval_text(c['mean'], c['low'], c['high'], c['n'])}" for c in cells)
        print(printable(f"{method:>22}  {values}"))
    for method, f in result["faithfulness"].items():
        mean = "-" if f["mean"] is None else f"{f['mean']:.1f}%"
        interval = "" if f["low"] is None or f["high"] is None else f" [{f['low']:.1f}, {f['high']:.1f}]"
        print(printable(f"Eq. 3 {method}: {mean}{interval} over {f['n']} seed(s): {f['reading']}"))  # as the page
    for t in result["t_tests"]:  # Pham et al. 2022: Welch, two-sided, over seeds
        shown = "-" if t["t"] is None else f"t = {t['t']:.2f}, p = {'-' if t['p'] is None else format(t['p'], '.4f')}"
        print(printable(f"t-test {t['a']} vs {t['b']} at {t['level']}: {shown}"))
    for leak in result["leakage"]:
        print(
            printable(
                f"leakage? {leak['method']} rises {leak['rise']:+.3f} from {leak['from']} to {leak['to']}"
                + (" (beyond the 95% intervals)" if leak["significant"] else "")
            )
        )


def register(sub) -> None:
    from cli.common import add_methods
    from core.params import current_name
    from core.train import TASKS
    from engine.roar.run import EXECUTORS
    from experiments.roar.job import DEFAULT_MLM, TARGETS
    from experiments.roar.removal import ORDERS, REMOVALS, ROUNDINGS, SCOPES

    parser = sub.add_parser(COMMAND, help=HELP)
    tasks = ", ".join(name for name in TASKS if name != "mlm")  # the masked LM's recipe is not a classification task
    parser.add_argument("--task", help=f"bundled task: {tasks} (default: sst2)")
    parser.add_argument(
        "--model", help="instead of a task: a hub model id or folder to retrain from (with --dataset and --train-steps)"
    )
    parser.add_argument(
        "--dataset",
        help="the dataset of --model: a local name such as sst2, hub:NAME, or file:PATH with a split column",
    )
    add_methods(parser, "loo_empty,integrated_gradients,im", "; random is always added")
    parser.add_argument(
        "--removal",
        choices=REMOVALS,
        default="delete",
        help="delete (Pham et al.'s ROAR), mlm (ROAR_BERT, masked-LM top-1), mask (Madsen et al.'s [MASK])",
    )
    parser.add_argument(
        "--levels",
        default="pham2022",
        help="10,20,30 (percent), 1t,2t (tokens), or pham2022 (Pham et al. 2022: 10,20,30%%), madsen2022 (Madsen et "
        "al. 2022: 0..100%%), tokens (0..10)",
    )
    parser.add_argument("--recursive", action="store_true", help="Recursive ROAR (Madsen et al. 2022)")
    parser.add_argument("--seeds", type=int, default=3, help="models per cell, 1 to 100")
    parser.add_argument("--train-size", type=int, help="first N training examples (default: the whole split)")
    parser.add_argument("--eval-size", type=int, help="first N evaluation examples (default: the whole split)")
    parser.add_argument(
        "--train-steps", type=int, help="training steps per model, at most 1,000,000 (default: the task's recipe)"
    )
    parser.add_argument("--target", choices=TARGETS, default="gold", help="class explained (Madsen et al. 2022: gold)")
    parser.add_argument(
        "--rounding",
        choices=ROUNDINGS,
        type=current_name,
        help="removed-word count rule: pham2022, Pham et al. 2022's ceil((n - 1) N / 100), at least 1; madsen2022, "
        "Madsen et al. 2022's floor(n N / 100) (default: the removal's paper)",
    )
    parser.add_argument(
        "--order", choices=ORDERS, help="rank signed scores or magnitudes (default: the removal's paper)"
    )
    parser.add_argument("--scope", choices=SCOPES, default="main", help="words that may be removed")
    parser.add_argument("--mlm", default=DEFAULT_MLM, help="masked LM of the mlm removal and of im")
    parser.add_argument("--metric", choices=("accuracy", "macro_f1"), default="accuracy")
    parser.add_argument("--executor", choices=EXECUTORS, default="serial", help="serial (default) or ray")
    parser.add_argument("--resume", metavar="RUN_ID", help="continue a stored job (its own settings are used)")
    parser.add_argument("--estimate-only", action="store_true", help="print the cost and stop")
    parser.add_argument("--no-estimate", action="store_true", help="start without measuring the cost")
    parser.add_argument("--export", metavar="PATH", help="write the job's report (JSON, as the page reads it)")
    parser.add_argument("--data-dir", help="data folder (default: $ATTRIBUTION_DATA_DIR)")
    parser.add_argument("--results-dir", help="run store folder (default: $ATTRIBUTION_RESULTS_DIR, else ./results)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
