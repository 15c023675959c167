"""Recompute every reproduction at its default slice and package the results with the app
(``assets/reproductions/``, which the Reproductions page shows until the run store has a result of
its own; BENCHMARKS.md, "Reproductions").

Any change to ``core/``, ``explainers/``, ``metrics/``, ``experiments/`` or ``engine/`` changes the
code version the results are keyed by, so the packaged results are recomputed before a release:

    python tools/package_reproductions.py [--out /tmp/reproductions] [--names A,B] [--write]

Each reproduction runs in its own process, one after the other, as ``python -m cli reproduce NAME
--json --refresh`` into a fresh run store under ``--out``; its output is kept as ``OUT/NAME.json``
and its time and load average in ``OUT/times.jsonl``. A name whose output is already there at the
current code version is not computed again, so a stopped packaging resumes. Each result is then
compared with the packaged one, rows and finding (times, dates and code versions left out), and
the differences are printed. ``--write`` replaces the packaged files (written whole or not at all).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.files import write_text_atomic
from engine.reproduce import BUNDLED_DIR, REGISTRY, code_version

# Fields of a result that change from one computation to the next without its content changing.
VOLATILE = ("runtime_s", "load_average", "code_version", "computed", "run_id", "cached")
# Cheapest first, so a stopped packaging has the most results done.
ORDER = (
    "recursive-roar-synthetic",
    "double-trouble-table4",
    "double-trouble-table1",
    "double-trouble-tableA3",
    "double-trouble-tableA5",
    "double-trouble-table3",
    "aml-table1",
    "marc-table1",
)


def compute(name: str, out: Path) -> dict[str, Any]:
    """``name``'s result at its default slice, computed now unless ``out`` holds one at this code version."""
    path = out / f"{name}.json"
    if path.exists():
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("code_version") == code_version():
            return kept
    command = [
        sys.executable,
        "-m",
        "cli",
        "reproduce",
        name,
        "--json",
        "--refresh",
        "--results-dir",
        str(out / "store"),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    write_text_atomic(path, done.stdout)
    with open(out / "times.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps({"name": name, "seconds": round(seconds, 1), "load": os.getloadavg()}) + "\n")
    print(f"{name}: {seconds:.0f} s", file=sys.stderr)
    return json.loads(done.stdout)


def content(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key not in VOLATILE}


def differences(new: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    """What differs between two results of one reproduction, field by field and row by row."""
    if old is None:
        return ["nothing was packaged before"]
    new, old = content(new), content(old)
    found = [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in sorted({*new, *old} - {"rows"})
             if new.get(key) != old.get(key)]  # fmt: skip
    old_rows = {json.dumps(row["key"]): row for row in old.get("rows", [])}
    for row in new.get("rows", []):
        before = old_rows.pop(json.dumps(row["key"]), None)
        if before != row:  # printed without the per-example values (hundreds a row)
            shown = [{k: v for k, v in r.items() if k != "values"} if r else r for r in (before, row)]
            found.append(f"row {row['key']}: {shown[0]} -> {shown[1]}")
    found += [f"row {key} is gone" for key in old_rows]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/reproductions"), help="where results are computed")
    parser.add_argument("--write", action="store_true", help="replace the packaged results with the new ones")
    parser.add_argument("--names", default=",".join(ORDER), help="comma-separated reproductions (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if set(ORDER) != set(REGISTRY):
        raise SystemExit(f"ORDER names {sorted(ORDER)}, the registry {sorted(REGISTRY)}")
    unknown = set(args.names.split(",")) - set(ORDER)
    if unknown:
        raise SystemExit(f"unknown reproductions {sorted(unknown)}; known: {', '.join(ORDER)}")
    names = [name for name in ORDER if name in args.names.split(",")]
    changed = 0
    for name in names:
        result = compute(name, args.out)
        packaged = BUNDLED_DIR / f"{name}.json"
        found = differences(result, json.loads(packaged.read_text(encoding="utf-8")) if packaged.exists() else None)
        changed += bool(found)
        print(f"{name}: " + ("identical to the packaged result" if not found else "\n  ".join(["differs:", *found])))
        if args.write:
            kept = {key: value for key, value in result.items() if key not in ("run_id", "cached")}
            write_text_atomic(packaged, json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
    print(f"code version {code_version()}: {changed} of {len(names)} differ from what was packaged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
