"""``python -m cli datasets``: the datasets and splits found, with their sizes (the hub versions,
listed when online, with their splits only: counting them would download them)."""

from __future__ import annotations

import argparse

from cli.common import check_data_dir, print_json

COMMAND = "datasets"
HELP = "list the datasets and splits found, with sizes"


def run(args: argparse.Namespace) -> int:
    from core.datasets import HUB_PREFIX, available_datasets, data_dir, load_examples

    check_data_dir(args.data_dir)
    found = available_datasets(args.data_dir)
    sizes: dict[str, dict[str, int | None]] = {
        name: {
            split: None if name.startswith(HUB_PREFIX) else len(load_examples(name, split, args.data_dir))
            for split in splits
        }
        for name, splits in found.items()
    }
    if args.json:
        folder = data_dir(args.data_dir)
        print_json({"data_dir": str(folder) if folder else None, "datasets": sizes})
        return 0
    for name, splits in sizes.items():
        listed = ", ".join(split if n is None else f"{split} ({n:,})" for split, n in splits.items())
        print(f"{name}: {listed}{' (downloaded when first used)' if name.startswith(HUB_PREFIX) else ''}")
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument("--data-dir", help="data folder (default: $ATTRIBUTION_DATA_DIR)")
    parser.add_argument("--json", action="store_true", help="sizes as JSON (null for a hub split)")
    parser.set_defaults(run=run)
