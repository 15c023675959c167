"""``python -m cli reproduce``: the papers' headline findings re-run on the bundled models and
data, set beside the published values (the work is ``engine.reproduce``).

``--list`` names every reproduction with its paper, table and claim; ``reproduce NAME`` prints row
by row the published value, ours (mean, 95% interval, n), the convention used and whether the
finding holds, does not hold or is undecided (a paired interval contains 0), with the reasons ours
may differ. Results are kept in the run store under
``$ATTRIBUTION_RESULTS_DIR`` (default ./results, or ``--results-dir``) as runs of kind
``reproduce`` (``engine.reproduce.stored``); a stored result of the same name, slice and code
version is printed instead of recomputed, ``--refresh`` recomputes and replaces it, and
``--cached`` prints the stored result without ever computing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

COMMAND = "reproduce"
HELP = "re-run a paper's headline finding beside its published table"


def run(args: argparse.Namespace) -> int:
    from cli.common import print_json
    from engine import reproduce

    if args.list:
        if given := [flag for flag, value in (("--limit", args.limit is not None),
                                              ("--cached", args.cached), ("--refresh", args.refresh)) if value]:  # fmt: skip
            raise ValueError(f"--list names the reproductions; {', '.join(given)} computes or reads one: drop it")
        if args.name is not None and args.name not in reproduce.REGISTRY:
            raise ValueError(f"unknown reproduction {args.name!r}; choose one of {', '.join(reproduce.REGISTRY)}")
        listed = [r for r in reproduce.REGISTRY.values() if args.name in (None, r.name)]  # NAME: that one only
        if args.json:
            print_json(
                [
                    {
                        "name": r.name,
                        "paper": r.paper.cite(),
                        "table": r.table,
                        "claim": r.claim,
                        "default_limit": r.default_limit,
                    }
                    for r in listed
                ]
            )
        else:
            for r in listed:
                print(f"{r.name}\t{r.paper.cite()}\t{r.table}\t{r.claim}")
        return 0
    if not args.name:
        raise ValueError(f"give a reproduction name or --list; choose one of {', '.join(reproduce.REGISTRY)}")
    if args.cached and args.refresh:
        raise ValueError("give --cached (print the stored result) or --refresh (recompute), not both")
    if args.cached:
        payload, cached = _stored(args), True
    else:
        start = time.perf_counter()
        payload, cached = reproduce.cached_run(
            args.name,
            args.limit,
            refresh=args.refresh,
            progress=None if args.quiet else _progress(start),
            root=None if args.results_dir is None else os.path.expanduser(args.results_dir),  # as the store reads it
        )
    if args.json:
        print_json({**payload, "cached": cached})
    else:
        _print(payload, cached)
    return 0


def _stored(args: argparse.Namespace) -> dict[str, Any]:
    """The stored result of ``args.name`` (at ``--limit`` when given) the current code computed,
    else the newest of an older version, else the one packaged with the app (at its slice); a
    one-line error naming the command when there is none."""
    from cli.common import printable, stored_runs
    from engine import reproduce
    from engine.reproduce.base import check_limit

    reproduction = reproduce.get(args.name)
    if args.limit is not None:
        check_limit(args.limit, reproduction)
    stored_runs(args.results_dir)  # a mistyped folder is named, not read as an empty store
    results = reproduce.stored_results(args.name, args.results_dir)
    if args.limit is not None:
        results = [result for result in results if result.limit == args.limit]
    chosen, current = reproduce.pick(results)
    packaged = reproduce.bundled(args.name) if chosen is None else None
    if packaged is not None and args.limit in (None, packaged["limit"]):
        print(
            printable(f"note: the result packaged with the app (computed {packaged['computed']} UTC)"), file=sys.stderr
        )
        return packaged
    if chosen is None:
        at = "" if args.limit is None else f" at --limit {args.limit}"
        command = f"python -m cli reproduce {args.name}" + ("" if args.limit is None else f" --limit {args.limit}")
        raise ValueError(f"no stored result of {args.name}{at}; compute it with `{command}`")
    if not current:
        note = f"note: stored by an earlier version of the code ({chosen.code}); rerun without --cached to update"
        print(printable(note), file=sys.stderr)
    return reproduce.load(chosen.run_id, args.results_dir)


def _progress(start: float):
    def report(fraction: float, message: str) -> None:
        print(
            f"\r[{fraction:6.1%}] {message} ({time.perf_counter() - start:.0f} s)", end="", file=sys.stderr, flush=True
        )
        if fraction >= 1.0:
            print(file=sys.stderr)

    return report


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def _print(payload: dict[str, Any], cached: bool) -> None:
    """The result as text, what the store holds escaped (``printable``)."""
    from cli.common import printable

    def line(text: str) -> None:
        print(printable(text))

    line(f"{payload['paper']}, {payload['title']}, {payload['table']}")
    line(f"claim: {payload['claim']}")
    line(f"published: {payload['published_note']}")
    labels = [printable(row["label"]) for row in payload["rows"]]
    width = max(map(len, labels), default=10)
    print(f"{'row':<{width}}  {'published':>9}  {'ours':>9}  {'95% interval':>21}  {'n':>4}")
    for label, row in zip(labels, payload["rows"], strict=True):
        interval = "—" if row["low"] is None else f"[{_number(row['low'])}, {_number(row['high'])}]"
        line(
            f"{label:<{width}}  {_number(row['published']):>9}  {_number(row['mean']):>9}  {interval:>21}  {row['n']:>4}"
        )
    line(f"settings: {payload['settings']}")
    finding = payload["finding"]
    holds = finding["holds"]
    word = "UNDECIDED" if holds is None else "HOLDS" if holds else "DOES NOT HOLD"
    line(f"finding: {word}: {finding['reason']}")
    print("ours may differ because:")
    for reason in payload["differences"]:
        line(f"  - {reason}")
    if not cached:
        source = f"computed now, run {payload['run_id']}"
    else:
        source = "packaged with the app" if payload.get("bundled") else f"stored, run {payload['run_id']}"
    line(
        f"{payload['limit']} examples per split, {payload['runtime_s']} s, finished {payload['computed']} UTC"
        f" (code {payload['code_version']}; {source})"
    )


def register(sub) -> None:
    from cli.common import positive_int

    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument("name", nargs="?", help="reproduction name (see --list)")
    parser.add_argument("--list", action="store_true", help="name every reproduction with its paper, table and claim")
    parser.add_argument(
        "--limit", type=positive_int, help="first N examples of each split (default: the entry's slice)"
    )
    parser.add_argument("--refresh", action="store_true", help="recompute and replace the stored result")
    parser.add_argument(
        "--cached", action="store_true", help="print the stored result (newest; at --limit when given), never compute"
    )
    parser.add_argument("--results-dir", help="run store folder (default: $ATTRIBUTION_RESULTS_DIR, else ./results)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
