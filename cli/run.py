"""``python -m cli run``: a dataset evaluation kept in the run store, on Ray or in-process (the
work is ``engine.runs.executor``); prints the run id and the summary ``evaluate`` prints."""

from __future__ import annotations

import argparse
import sys

COMMAND = "run"
HELP = "a dataset evaluation kept in the run store (resumable, on Ray)"


def run(args: argparse.Namespace) -> int:
    from cli.common import check_per_example, print_stopped, progress_bar, sigterm_stops, store_option
    from cli.show import print_run
    from engine.runs.executor import check_startable, execute, open_run
    from engine.runs.store import RunStore

    check_per_example(args)
    if args.actors is not None and args.actors < 1:
        raise ValueError(f"--actors must be at least 1, got {args.actors}")
    spec = run_spec(args)
    executor = args.executor or (_stored_executor(args) if args.resume else None) or "ray"
    if executor == "serial" and (args.address is not None or args.actors is not None):
        if args.executor is None:  # the stored run's executor, not one the user chose
            raise ValueError(f"run {args.resume} ran on the serial executor: add --executor ray to resume it on Ray")
        raise ValueError("--address and --actors set up Ray; the serial executor runs in this process")
    check_startable(spec, executor, args.address)  # before anything is written
    store = RunStore(args.results_dir)  # written only once the run passed its checks
    opened = open_run(spec, store, resume=args.resume)
    # The run id even with --quiet: it is what a stopped or killed run is resumed by.
    stored = opened.info
    found = (
        "new" if opened.created else f"{stored.shown_status}, {stored.rows_done} of {stored.rows_total} examples stored"
    )
    print(f"run {stored.run_id} ({found})", file=sys.stderr)
    if not opened.created and args.resume is None and args.chunk_size not in (None, stored.chunk_size):
        print(f"--chunk-size ignored: the stored run keeps its units of {stored.chunk_size}", file=sys.stderr)
    try:
        with sigterm_stops():  # a stopped run, on either executor, not a killed one
            outcome = execute(
                opened,
                store,
                executor=executor,
                address=args.address,
                actors=args.actors,
                progress=progress_bar(opened.info.rows_total, enabled=not args.quiet),
            )
    except (KeyboardInterrupt, SystemExit) as stop:
        info = store.get(opened.info.run_id)
        return print_stopped(
            f"{info.run_id} stopped after {info.rows_done} of {info.rows_total} examples;"
            f" continue it with `python -m cli run --resume {info.run_id}{store_option(store)}`",
            stop,
        )
    if outcome.computed_units == 0 and not args.quiet:
        print(f"{outcome.info.run_id} was already done: nothing recomputed", file=sys.stderr)
    return print_run(store, outcome.info.run_id, per_example=args.per_example, as_json=args.json)


def _stored_executor(args: argparse.Namespace) -> str | None:
    """The executor the run ``--resume`` names ran on (None where it names none we know)."""
    from engine.runs.executor import EXECUTORS
    from engine.runs.store import RunStore

    executor = RunStore(args.results_dir, read_only=True).get(args.resume).executor
    return executor if executor in EXECUTORS else None


def run_spec(args: argparse.Namespace):
    """The ``RunSpec`` asked for: the stored evaluation's with ``--resume`` (read only: nothing
    created), else the options'; a refused setting is worded with its option."""
    from core.params import SettingError

    try:
        return _run_spec(args)
    except SettingError as error:
        raise ValueError(error.on_command_line()) from None


def _run_spec(args: argparse.Namespace):
    from cli.common import parse_params, slice_keys, split_of, store_option
    from cli.show import shown_elsewhere
    from engine.runs.executor import resume_spec
    from engine.runs.spec import RunSpec
    from engine.runs.store import RunStore

    if args.resume is not None:
        store = RunStore(args.results_dir, read_only=True)
        stored = store.get(args.resume)
        if stored.kind != "evaluate":
            raise ValueError(
                f"`run --resume` continues dataset evaluations only; {shown_elsewhere(stored, store_option(store))}"
            )
        if ignored := settings_given(args):
            print(f"--resume uses the run's own settings: {', '.join(ignored)} ignored", file=sys.stderr)
        return resume_spec(store, args.resume, data_dir=args.data_dir, batch_size=args.batch_size)
    if not args.model or not args.dataset or not split_of(args):
        raise ValueError("--model, --dataset and --split are needed (or --resume RUN_ID)")
    if args.limit is None and not args.all:
        raise ValueError("give --limit N or --all (the whole split)")
    methods, metrics = slice_keys(args, fitted_to=args.model)
    return RunSpec(
        model=args.model,
        dataset=args.dataset,
        split=split_of(args),
        limit=args.limit,
        methods=methods,
        metrics=metrics,
        overrides=parse_params(args.param),
        seed=args.seed,
        target=args.target,
        mlm=args.mlm,
        data_dir=args.data_dir,
        chunk_size=args.chunk_size,
        batch_size=args.batch_size,
        autocast=args.autocast,
        head_type=args.head_type,
    )


# A run's settings (its key, ``engine.runs.executor.prepare``, and the unit size and masked LM it
# was made with): with --resume, the stored run's.
_RUN_SETTINGS = ("model", "dataset", "split", "limit", "all", "methods", "metrics", "param", "seed", "target", "mlm",
                 "chunk_size", "autocast", "head_type")  # fmt: skip


def settings_given(args: argparse.Namespace, settings: tuple[str, ...] = _RUN_SETTINGS) -> list[str]:
    """The options among ``settings`` (of ``args.command``) given other values than their
    defaults, as typed."""
    from cli.main import build_parser

    defaults = build_parser([args.command]).parse_args([args.command])
    return [f"--{name.replace('_', '-')}" for name in settings if getattr(args, name) != getattr(defaults, name)]


def register(sub) -> None:
    from cli.common import DATASET_HELP, SPLIT_HELP, add_autocast, add_head_type, add_slice_options, positive_int
    from engine.runs.executor import EXECUTORS
    from engine.runs.spec import DEFAULT_CHUNK_SIZE
    from engine.runs.worker import UNIT_TOKENS

    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument("--model", help="bundled model name, hub id or local folder")
    add_head_type(parser)
    parser.add_argument("--dataset", help=DATASET_HELP)
    parser.add_argument("--split", help=SPLIT_HELP)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--limit", type=int, help="the first N examples of the split")
    size.add_argument("--all", action="store_true", help="the whole split")
    parser.add_argument("--data-dir", help="data folder (default: $ATTRIBUTION_DATA_DIR)")
    add_slice_options(parser)
    parser.add_argument(
        "--executor", choices=EXECUTORS, help="ray (default; with --resume: the run's own) or serial (in-process)"
    )
    parser.add_argument(
        "--address", help="Ray cluster to use, e.g. ray://host:10001 (default: $RAY_ADDRESS, else a local Ray)"
    )
    parser.add_argument(
        "--actors",
        type=int,
        help="model actors, at least 1 (default: one per CPU, one thread each; one per GPU on a GPU cluster)",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        help=f"examples per unit of work (default: {DEFAULT_CHUNK_SIZE}, fewer where the median example is over"
        f" {UNIT_TOKENS // DEFAULT_CHUNK_SIZE} tokens, so a unit holds about {UNIT_TOKENS:,})",
    )
    parser.add_argument("--batch-size", type=positive_int, help="scorer batch (default: 64 on CPU, 256 on GPU)")
    add_autocast(parser)  # part of the run's key: a run under autocast is another run
    parser.add_argument("--resume", metavar="RUN_ID", help="continue a stored run (its own settings are used)")
    parser.add_argument("--results-dir", help="run store folder (default: $ATTRIBUTION_RESULTS_DIR, else ./results)")
    parser.add_argument("--per-example", action="store_true", help="add every example's words, scores and values")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr (the run id is still printed)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
