"""Command line of the engine: ``python -m core <command>`` (see ``--help`` of each command)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def _cmd_train(args: argparse.Namespace) -> int:
    from core.train import run_training

    command = "python -m core " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    card = run_training(args.task, args.data_dir, Path(args.out) if args.out else None, args.steps, args.seed,
                        train_limit=args.train_limit, eval_limit=args.eval_limit, command=command)
    print(json.dumps(card, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="fine-tune a bundled demo model from the packaged encoder")
    train.add_argument("task", choices=["sst2", "esnli", "movies", "hatexplain", "mlm"])
    train.add_argument("--data-dir", help="data folder (default: $ATTRIBUTION_DATA_DIR)")
    train.add_argument("--out", help="output folder (default: assets/models/minilm-TASK)")
    train.add_argument("--steps", type=int, help="optimizer steps (default: per task)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--train-limit", type=int, help="use only the first N training examples")
    train.add_argument("--eval-limit", type=int, help="report on the first N examples only")
    train.set_defaults(run=_cmd_train)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
