"""``python -m cli methods``: list the explainer keys with one-line descriptions."""

from __future__ import annotations

import argparse

from cli.common import print_json

COMMAND = "methods"
HELP = "list the attribution methods"


def run(args: argparse.Namespace) -> int:
    from explainers import REGISTRY

    if args.json:
        print_json({key: spec.description for key, spec in REGISTRY.items()})
    else:
        width = max(map(len, REGISTRY))
        for key, spec in REGISTRY.items():
            print(f"{key:<{width}}  {spec.description}")
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)
