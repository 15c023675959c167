"""Argument helpers shared by the commands."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from core.progress import count_text
from core.types import AUTOCAST_TYPES, HEAD_TYPES, Example, ProgressFn


def add_model(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        help="bundled model name, hub id or local folder (random:bert-base: a benchmark model with random weights)",
    )
    add_head_type(parser)


def add_head_type(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--head-type",
        choices=HEAD_TYPES,
        help="what the model's outputs mean (default: from its config's problem_type and num_labels)",
    )


def add_autocast(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--autocast",
        choices=AUTOCAST_TYPES,
        help="score perturbations (and metrics) under autocast in this type: float16 or bfloat16 on a GPU, "
        "bfloat16 on a CPU (faster only with AVX512-BF16 or AMX); gradients stay float32. The scores differ "
        "from float32's by rounding (BENCHMARKS.md, 'bfloat16 on the CPU')",
    )


DATASET_HELP = "dataset name (see `python -m cli datasets`), or file:PATH (a CSV, TSV, JSON lines or Parquet file)"
SPLIT_HELP = "split of the dataset (a data file's default: all, its every row)"


def add_dataset(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument("--dataset", required=required, help=DATASET_HELP)
    parser.add_argument("--split", help=SPLIT_HELP)
    parser.add_argument("--limit", type=positive_int, help="first N examples only")
    parser.add_argument("--data-dir", help="data folder (default: $ATTRIBUTION_DATA_DIR)")


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


def seed_int(text: str) -> int:
    """An argparse type: a random seed in [0, 2**31 - 1], as the run store and the app keep it."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**31:
        raise argparse.ArgumentTypeError(f"a seed must be in [0, 2**31 - 1], got {value}")
    return value


def add_methods(parser: argparse.ArgumentParser, default: str, note: str = "") -> None:
    """The ``--methods`` option, read by ``method_keys``: its keywords mean the same in every
    command, and ``default`` (the same as leaving it out) is this command's ``default``."""
    parser.add_argument(
        "--methods",
        default=default,
        help="comma-separated method keys (see `methods`), 'all', 'panel' (the heatmap page's seven fast methods) "
        f"or 'default', the same as leaving the option out: {default or 'none'}{note}",
    )
    parser.set_defaults(methods_default=default)


def method_keys(args: argparse.Namespace) -> list[str]:
    """The validated keys of ``--methods`` (``add_methods``); none is refused."""
    import explainers

    methods = explainers.resolve(args.methods, args.methods_default)
    if not methods:
        raise ValueError(f"no methods in --methods {args.methods!r}: name at least one (see `methods`) or 'all'")
    return methods


def add_slice_options(parser: argparse.ArgumentParser, seed_help: str = "seed for stochastic methods") -> None:
    """The options every dataset evaluation takes (``evaluate`` and ``run``): methods, metrics,
    their parameters, the seed, the explained class and the masked LM."""
    from engine.evaluate import DEFAULT_METHODS, DEFAULT_METRICS

    add_methods(parser, DEFAULT_METHODS)
    parser.add_argument(
        "--metrics",
        help=f"'all' or comma-separated metric keys (default: {DEFAULT_METRICS}; log_odds left out for a regression head)",
    )
    parser.add_argument(
        "--param", action="append", metavar="KEY.NAME=VALUE", help="method or metric parameter, repeatable"
    )
    parser.add_argument("--seed", type=seed_int, help=seed_help)
    parser.add_argument(
        "--target",
        choices=("predicted", "gold"),
        default="predicted",
        help="class to explain: the predicted one (default) or the gold label (MaRC's protocol)",
    )
    parser.add_argument("--mlm", default="minilm-mlm", help="masked LM for methods and removals that need one")


def stored_runs(results_dir: str | None):
    """The run store a reading command opens (read-only: nothing created); a folder named with
    ``--results-dir`` must exist, so a mistyped one is not read as an empty store."""
    from engine.runs.store import reading_store

    return reading_store(results_dir)


def store_option(store) -> str:
    """`` --results-dir DIR`` for a command printed for later, when ``store`` is not the folder that
    command finds by default ($ATTRIBUTION_RESULTS_DIR, else ./results); else nothing."""
    from engine.runs.store import results_dir

    if store.root.resolve() == results_dir().resolve():
        return ""
    return f" --results-dir {shlex.quote(str(store.root))}"


def slice_keys(args: argparse.Namespace, fitted_to: str | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The method and metric keys of a dataset evaluation (``evaluate``, ``run``; the defaults
    fitted to the model ``fitted_to``, or to ``--head-type``, as ``metric_keys`` fits them); only
    an absent ``--metrics`` means the defaults (``--metrics ""`` once computed them under another
    run id)."""
    return tuple(method_keys(args)), metric_keys(args.metrics, fitted_to, getattr(args, "head_type", None))


def metric_keys(metrics_arg: str | None, model: str | None = None, head: str | None = None) -> tuple[str, ...]:
    """The metric keys of ``--metrics``: the defaults when absent, fitted to ``head`` (else to
    ``model``'s head where one is named; ``engine.evaluate.head_defaults``); an empty list
    (``--metrics ""``) refused."""
    from core.models import config_head_kind
    from engine.evaluate import DEFAULT_METRICS, head_defaults, resolve_metrics

    if metrics_arg is None:
        fitted = head or (config_head_kind(model) if model else None)
        return tuple(head_defaults(resolve_metrics(DEFAULT_METRICS), fitted))
    metrics = tuple(resolve_metrics(metrics_arg))
    if not metrics:
        raise ValueError(f"no metrics in --metrics {metrics_arg!r}: name at least one or 'all'")
    return metrics


def methods_and_params(args: argparse.Namespace) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The validated method keys and their ``--param`` values; a parameter of a method that was
    not asked for is refused."""
    methods = method_keys(args)
    params = parse_params(args.param)
    unknown = set(params) - set(methods)
    if unknown:
        raise ValueError(f"--param for methods not requested: {', '.join(sorted(unknown))}")
    return methods, params


def parse_params(items: list[str] | None) -> dict[str, dict[str, str]]:
    """``["im.k=5", "lime.n_samples=200"]`` ->
    ``{"im": {"k": "5"}, "lime": {"n_samples": "200"}}``."""
    out: dict[str, dict[str, str]] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        owner, dot, name = key.partition(".")
        if not eq or not dot or not owner or not name:
            raise ValueError(f"--param expects KEY.NAME=VALUE, got {item!r}")
        out.setdefault(owner, {})[name] = value
    return out


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: newline, tab, ESC, CSI...


def printable(text: object) -> str:
    """``text`` (a stored or given string, or what ``str`` makes of a value) for a terminal: its
    control characters shown as Python's escapes (``\\n``, ``\\t``, ``\\x1b``), as ``--json``
    shows them, so a word from a bundle, a store or a file cannot clear the screen, recolour the
    terminal or split a line of a table."""
    return _CONTROL.sub(lambda match: repr(match.group())[1:-1], str(text))


def print_json(payload: Any) -> None:
    """``payload`` as JSON on stdout, encoded whole first: a value JSON cannot hold (NaN) raises
    before anything is written, so no half document reaches a pipe or a file."""
    sys.stdout.write(json.dumps(payload, indent=2, allow_nan=False) + "\n")


def check_data_dir(explicit: str | None) -> None:
    """Refuse a data folder (``--data-dir``, else ``$ATTRIBUTION_DATA_DIR``) that is not a folder,
    naming where it came from, instead of carrying on without the data."""
    from core.datasets import DATA_DIR_ENV

    chosen, source = (explicit, "--data-dir") if explicit is not None else (os.environ.get(DATA_DIR_ENV), DATA_DIR_ENV)
    if chosen and not os.path.isdir(os.path.expanduser(chosen)):
        raise ValueError(f"{source} {chosen}: no such folder")


def writable_file(path: str, flag: str) -> None:
    """Check, before any long work, that a file can be written at ``path`` (its folder is created if
    missing, as the writer would, and written to once); ``ValueError`` names ``flag`` and the
    path."""
    from pathlib import Path

    from core.files import writable_folder_problem

    target = Path(path).expanduser()
    if target.is_dir():
        raise ValueError(f"{flag} {path} is a folder: give a file name")
    if target.exists() and not os.access(target, os.W_OK):
        raise ValueError(f"{flag} {path}: the file is not writable")
    problem = writable_folder_problem(target.parent)
    if problem is not None:
        raise ValueError(f"{flag} {path}: cannot write in {target.parent} ({problem})")


def split_of(args: argparse.Namespace) -> str | None:
    """``--split``, or a data file's split of every row when it names none."""
    from core.datasets import FILE_PREFIX, FILE_SPLIT

    return args.split or (FILE_SPLIT if (args.dataset or "").startswith(FILE_PREFIX) else None)


def load_dataset_examples(args: argparse.Namespace):
    from core.datasets import load_examples

    if not split_of(args):
        raise ValueError("--split is needed with --dataset")
    return load_examples(args.dataset, split_of(args), args.data_dir, limit=args.limit, exact=True)


_OPEN_BARS: list[Any] = []  # the bars progress_bar drew and has not closed; print_stopped closes them


# tqdm's layout of a bar in percent: the percentage, the bar, time spent and left, the message.
PERCENT_BAR = "{l_bar}{bar}| [{elapsed}<{remaining}{postfix}]"


def print_label_notes(examples: Sequence[Example], class_names: Sequence[str], target: str) -> None:
    """On stderr: how a dataset's gold labels were taken under a single-label model's classes,
    where not by the same names (``alignment_note``), and, explaining the gold class, how many
    examples have none and so explain the predicted class."""
    from core.datasets.labels import align_labels, alignment_note

    if examples and (note := alignment_note(examples[0].label_names, class_names)):
        print(note, file=sys.stderr)
    if target == "gold" and (unlabelled := sum(e.label is None for e in align_labels(examples, class_names))):
        print(
            f"{unlabelled} of {len(examples)} examples have no gold label: their predicted class is explained",
            file=sys.stderr,
        )


def progress_bar(total: int, enabled: bool = True, unit: str = "ex") -> ProgressFn | None:
    """A ``ProgressFn`` drawing a tqdm bar on stderr over ``total`` items (rate per second and
    ETA; the message as postfix); the bar closes when the fraction reaches 1. The first call
    sets the starting point, so a resumed run's rate counts only the work done now. A bar in
    percent (``unit="%"``) shows the percentage and the times only: "37/100" and "2.5%/s" say
    nothing more. None when not ``enabled`` (``--quiet``)."""
    if not enabled:
        return None
    from tqdm import tqdm

    bars: list[tqdm] = []

    def report(fraction: float, message: str) -> None:
        n = int(fraction * total + 1e-9)  # items whole: 0.89 of 4 examples is 3, not "4/4 100%"
        if not bars:
            shape = PERCENT_BAR if unit == "%" else None
            bars.append(
                tqdm(
                    total=total, initial=n, unit=unit, file=sys.stderr, mininterval=0.5, dynamic_ncols=True,
                    bar_format=shape,
                )
            )  # fmt: skip
            _OPEN_BARS.append(bars[0])
        bar = bars[0]
        if bar.disable:
            return
        bar.set_postfix_str(message, refresh=False)
        bar.update(n - bar.n)
        if fraction >= 1.0:
            bar.close()
            _OPEN_BARS.remove(bar)

    return report


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """SIGTERM (``kill``, a service manager) ends the block as Ctrl-C does (``SystemExit`` 143 in
    place of ``KeyboardInterrupt``): the run or import is marked stopped and goes on when asked
    again. The handler that was there is put back afterwards (``cli.main`` may be called
    in-process); only the main thread can set one, so elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)


def print_stopped(message: str, stop: BaseException | None = None) -> int:
    """The one line on stderr of a command Ctrl-C or ``stop`` stopped, after its progress bars are
    closed (an open bar is drawn again when tqdm cleans up at exit, below the line that should end
    the output); returns the exit status: 130 after Ctrl-C, else the ``SystemExit``'s own (143
    after SIGTERM, ``sigterm_stops``; another's code is kept, not read as SIGTERM's), and 1 for
    one without a code or with 0: work stopped part-way is no success."""
    while _OPEN_BARS:
        _OPEN_BARS.pop().close()
    print(message, file=sys.stderr)
    if not isinstance(stop, SystemExit):
        return 130
    return stop.code if isinstance(stop.code, int) and stop.code != 0 else 1


def check_per_example(args: argparse.Namespace) -> None:
    """Refuse ``--per-example`` without ``--json``: the table has no place for the examples."""
    if args.per_example and not args.json:
        raise ValueError("--per-example adds every example to the JSON output: add --json")


def nothing_explained(payload: dict[str, Any]) -> bool:
    """Whether every method of a slice's JSON (``engine.slice_report.slice_report``) failed on
    every example: the command exits with status 1, as ``explain`` does when every method failed."""
    n, methods = payload["n_examples"], payload["methods"]
    return n > 0 and bool(methods) and all(len(payload["errors"].get(method, ())) >= n for method in methods)


def print_summary_table(payload: dict[str, Any]) -> None:
    """The human-readable form of ``engine.slice_report.slice_report``: mean [95% interval] n per
    method and metric, the cost, and each method's first failure (stored strings ``printable``)."""
    from metrics.base import interval_text

    summary = payload["results"]
    metric_keys = list(payload["metrics"])
    arrows = ["↑" if payload["metrics"][k]["higher_is_better"] else "↓" for k in metric_keys]
    width = max((len(printable(method)) for method in summary), default=6)
    header = "  ".join(f"{printable(k) + a:>24}" for k, a in zip(metric_keys, arrows))
    print(f"{'method':<{width}}  {header}")
    for method, per in summary.items():
        cells = []
        for key in metric_keys:
            s = per[key]
            scored = interval_text(s["mean"], *s["interval"], s["n"], show_n=True) if s["mean"] is not None else None
            cells.append(scored or (f"— ({s['skipped']} skipped)" if s.get("skipped") else "—"))
        print(f"{printable(method):<{width}}  " + "  ".join(f"{c:>24}" for c in cells))
    print(
        f"{count_text(payload['n_examples'], 'example')}, {payload['runtime_s']:.1f} s, {payload['forward_passes']} forward passes"
    )
    for key in metric_keys:  # why a metric scored no example (a plausibility metric on data without rationales)
        reasons: dict[str, int] = {}
        for per in summary.values():
            if per[key]["n"] == 0:
                for reason, count in per[key].get("skipped_because", {}).items():
                    reasons[reason] = max(reasons.get(reason, 0), count)
        if reasons and all(per[key]["n"] == 0 for per in summary.values()):
            why = "; ".join(f"{reason} ({count_text(count, 'example')})" for reason, count in reasons.items())
            print(printable(f"{key} scored no example: {why}"))
    for method, failures in payload["errors"].items():
        print(printable(f"{method} failed on {count_text(len(failures), 'example')}, first: {failures[0]['error']}"))
