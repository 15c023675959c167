"""``python -m cli train TASK``: fine-tune a bundled demo model from the packaged encoder."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from cli.common import positive_float, positive_int, print_json, seed_int

COMMAND = "train"
HELP = "fine-tune a bundled demo model from the packaged encoder"


def run(args: argparse.Namespace) -> int:
    from core.train import run_training

    command = "python -m cli " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    card = run_training(
        args.task,
        args.data_dir,
        Path(args.out) if args.out else None,
        args.steps,
        args.seed,
        train_limit=args.train_limit,
        eval_limit=args.eval_limit,
        command=command,
        lr=args.lr,
        init_from=args.init_from,
        bf16=args.bf16,
    )
    print_json(card)
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument(
        "task", choices=["sst2", "esnli", "movies", "hatexplain", "hatexplain-score", "hatexplain-targets", "mlm"]
    )
    parser.add_argument("--data-dir", help="data folder (default: $ATTRIBUTION_DATA_DIR)")
    parser.add_argument("--out", help="output folder (default: assets/models/minilm-TASK)")
    parser.add_argument("--steps", type=positive_int, help="optimizer steps (default: per task)")
    parser.add_argument("--seed", type=seed_int, default=0, help="training seed (default 0)")
    parser.add_argument("--lr", type=positive_float, help="peak learning rate (default: per task)")
    parser.add_argument(
        "--init-from", metavar="DIR", help="continue from a model folder this command wrote for the same task"
    )
    parser.add_argument(
        "--bf16", action="store_true", help="bfloat16 autocast (fast on CPUs with AMX / AVX512-BF16 and on GPUs)"
    )
    parser.add_argument("--train-limit", type=positive_int, help="use only the first N training examples")
    parser.add_argument("--eval-limit", type=positive_int, help="report on the first N examples only")
    parser.set_defaults(run=run)
