"""Command line of the engine: ``python -m cli <command>`` (see ``--help`` of each command).

Each command lives in ``cli/<name>.py``: its name (``COMMAND``), its line of help (``HELP``) and
``register(subparsers)``, which adds its options; a module imports the engine inside its
functions, so listing the commands loads none of it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Collection

COMMANDS = (
    "methods",
    "explain",
    "predict",
    "fill",
    "datasets",
    "train",
    "bench",
    "evaluate",
    "run",
    "runs",
    "delete",
    "show",
    "randomize",
    "attack",
    "reproduce",
    "roar",
    "importer",
    "bundle",
)


def build_parser(only: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with ``only``, the commands named there get their options and
    the others just their name and one line of help (each module's ``COMMAND`` and ``HELP``):
    ``--help`` and a command that needs no model (``runs``, ``show``) then start without
    importing torch and every method (5 s on 2 cores)."""
    # the console script names itself; `python -m cli` would otherwise show as __main__.py
    prog = "attrx" if os.path.basename(sys.argv[0]) == "attrx" else "python -m cli"
    parser = argparse.ArgumentParser(prog=prog, description="Token attribution engine.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"cli.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"cli.{name}":
                raise
            continue
        if only is None or module.COMMAND in only:
            module.register(sub)
        else:
            sub.add_parser(module.COMMAND, help=module.HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = build_parser(given[:1]).parse_args(argv)  # the command's own options only
    try:
        if getattr(args, "data_dir", None) is not None:  # every command that takes --data-dir checks it
            from cli.common import check_data_dir

            check_data_dir(args.data_dir)
        return args.run(args)
    except KeyboardInterrupt:  # Ctrl-C outside a command's own guard (loading the model): one line, not a traceback
        from cli.common import print_stopped

        return print_stopped(f"{args.command} stopped (Ctrl-C)")
    except BrokenPipeError:  # the reader went away (`runs | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except (ValueError, OSError) as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 2


def one_line(error: Exception) -> str:
    """The message of ``error`` on one line (library messages often span several), with a Ray
    cluster's credentials removed (``engine.runs.secrets``) and control characters escaped."""
    from cli.common import printable
    from engine.runs.secrets import redact

    text = str(error) if not isinstance(error, OSError) or not error.filename else f"{error.strerror}: {error.filename}"
    return printable(redact(" ".join(text.split())))
