"""``python -m cli open BUNDLE``: a session bundle of the heatmap page (``engine.bundles``)
reopened without recomputing: its selection, prediction and every method's word scores printed
(``--json``: the bundle's JSON), or the app started on it (``--app``)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

COMMAND = "open"
HELP = "reopen a session bundle (print it, or start the app on it)"
ROOT = Path(__file__).resolve().parents[1]
BUNDLE_ENV = "ATTRIBUTION_BUNDLE"


def app_command(bundle: Path, port: int | None = None) -> tuple[list[str], dict[str, str]]:
    """The command and environment that start the app on ``bundle`` (the heatmap page opens it)."""
    command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py")]
    if port is not None:
        command += ["--server.port", str(port)]
    return command, {**os.environ, BUNDLE_ENV: str(bundle.resolve())}


def run(args: argparse.Namespace) -> int:
    from cli.common import print_json, printable
    from engine.bundles import MAX_BUNDLE_BYTES, read_bundle
    from engine.explain import Prediction
    from engine.imports.records import read_limited

    if args.port is not None and not args.app:
        raise ValueError("--port is the app's port: add --app")
    path = Path(args.bundle)
    bundle = read_bundle(read_limited(path, MAX_BUNDLE_BYTES), path.name)
    if args.app:
        command, env = app_command(path, args.port)
        return subprocess.run(command, env=env, cwd=ROOT, check=False).returncode
    if args.json:
        print_json(bundle.to_json())
        return 0
    selection = bundle.selection
    where = (
        f"{selection['dataset']}/{selection['split']} example {selection['index']}"
        if selection.get("dataset")
        else "typed text"
    )
    print(printable(f"{path.name}: {bundle.model}, {where} ({bundle.example.id or 'text'}), made {bundle.created}"))
    prediction = Prediction(bundle.probabilities, bundle.predicted, bundle.head)
    print(printable(prediction.text(bundle.target, bundle.label_names)))  # as ``explain`` prints it
    methods = [printable(m) for m in bundle.attributions]
    words = [printable(w) for w in bundle.example.words]
    width = max(map(len, words), default=4)
    print(f"{'word':<{width}}  " + "  ".join(f"{m:>14}" for m in methods))
    attributions = list(bundle.attributions.values())
    for i, word in enumerate(words):
        print(f"{word:<{width}}  " + "  ".join(f"{float(a.scores[i]):>14.5g}" for a in attributions))
    for method, message in bundle.errors.items():
        print(printable(f"{method} failed: {message}"))
    if bundle.figures:
        print(printable(f"figures in the bundle: {', '.join(bundle.figures)}"))
    return 0


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 1 to 65535, got {value}")
    return value


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument("bundle", metavar="BUNDLE", help="a session bundle (.zip) downloaded from the heatmap page")
    parser.add_argument("--app", action="store_true", help="start the app showing the bundle's view")
    parser.add_argument("--port", type=port_number, help="the app's port (with --app)")
    parser.add_argument("--json", action="store_true", help="print the bundle's JSON")
    parser.set_defaults(run=run)
