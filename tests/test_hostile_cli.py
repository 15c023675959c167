"""Hostile and careless input through the command line: every case either works or stops with a
one-line ``error: ...`` naming the bad value and a non-zero exit; never a traceback, never a hang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers.normalizers import BertNormalizer

from cli.main import main
from tests.toy import save_toy_masked_lm, toy_bert, toy_tokenizer

MARKUP = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "[link](javascript:alert(1))", "![i](x.png)"]
LATEX = ["\\textbf{x}", "50% & $5 #1 _a ^b ~c {d}"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """A tiny classifier and masked LM, and folders that are broken in every way we know."""
    root = tmp_path_factory.mktemp("hostile")
    loaded = toy_bert(seed=2)
    loaded.model.save_pretrained(root / "clf")
    toy_tokenizer().save_pretrained(root / "clf")
    save_toy_masked_lm(root / "mlm", seed=3)
    (root / "empty").mkdir()
    (root / "corrupt").mkdir()
    loaded.model.save_pretrained(root / "corrupt")
    toy_tokenizer().save_pretrained(root / "corrupt")
    (root / "corrupt" / "config.json").write_text("{ not json")
    (root / "truncated").mkdir()
    loaded.model.save_pretrained(root / "truncated")
    toy_tokenizer().save_pretrained(root / "truncated")
    weights = root / "truncated" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    cleaning = toy_tokenizer()  # BERT's own tokenizers drop control characters and zero-width spaces
    cleaning.backend_tokenizer.normalizer = BertNormalizer(lowercase=False, strip_accents=False)
    loaded.model.save_pretrained(root / "cleaning")
    cleaning.save_pretrained(root / "cleaning")
    (root / "no-tokenizer").mkdir()
    loaded.model.save_pretrained(root / "no-tokenizer")
    for name, content in (
        ("empty-weights", b""),  # "header too small"
        ("huge-header", (10**9).to_bytes(8, "little") + b"{}"),  # "header too large"
        ("no-tensors", (2).to_bytes(8, "little") + b"{}"),  # valid, but none of the model's weights
    ):
        (root / name).mkdir()
        loaded.model.save_pretrained(root / name)
        toy_tokenizer().save_pretrained(root / name)
        (root / name / "model.safetensors").write_bytes(content)
    (root / "empty.jsonl").write_text("\n")
    (root / "bad-utf8.jsonl").write_bytes(b'{"text": "caf\xe9"}\n')
    (root / "not-json.jsonl").write_text('{"text": "fine"}\nnot json\n')
    (root / "surrogate.jsonl").write_text('{"text": "good \\udcff movie"}\n')  # JSON may escape a lone surrogate
    (root / "blank-b.jsonl").write_text('{"text": "fine", "text_b": "a dog"}\n{"text": "fine", "text_b": "  "}\n')
    (root / "number-b.jsonl").write_text('{"text": "fine", "text_b": 3}\n')
    return {p.name: p for p in root.iterdir()}


def explain(model: str, text: str, *extra: str) -> list[str]:
    return ["explain", "--model", model, "--text", text, "--methods", "loo_empty,saliency", "--json", *extra]


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own errors (unknown flag, bad int)
        code = stop.code if isinstance(stop.code, int) else 2
    captured = capsys.readouterr()
    return code, captured.out, captured.err


ACCEPTED = {
    "punctuation only": "!!! ??? ...",
    "one character": "a",
    "control characters": "a\x07b\x1bc \u200b d",
    "NUL": "good\x00bad",
    "emoji": "great 👍🏽 film 🎬",
    "CJK": "这部电影很好",
    "right to left": "הסרט היה נהדר",
    "5,000 words": " ".join(["good"] * 5000),
    **{f"markup {i}": text for i, text in enumerate(MARKUP)},
    **{f"latex {i}": text for i, text in enumerate(LATEX)},
}


@pytest.mark.parametrize("text", list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_odd_text_is_explained_as_text(folders, capsys, text) -> None:
    code, out, err = run(capsys, explain(str(folders["clf"]), text))
    assert code == 0, err
    payload = json.loads(out)
    assert payload["words"] and set(payload["attributions"]) == {"loo_empty", "saliency"}
    if text in MARKUP:
        assert any("<" in w or "[" in w or "!" in w for w in payload["words"])  # kept as words, not run


def refused(folders: dict[str, Path]) -> dict[str, tuple[list[str], str]]:
    clf, mlm, cleaning = str(folders["clf"]), str(folders["mlm"]), str(folders["cleaning"])
    return {
        "empty text": (explain(clf, ""), "empty"),
        "whitespace text": (explain(clf, "   \n\t "), "empty"),
        "zero-width spaces only": (explain(cleaning, "\u200b \u200b"), "the text is empty"),  # no word at all
        "control characters only": (explain(cleaning, "\x01\x07"), "no token the model reads"),
        "lone surrogate": (explain(clf, "good \udcff movie"), "not valid Unicode: the word '\\udcff'"),
        "lone surrogate in a texts file": (
            ["predict", "--model", clf, "--texts", str(folders["surrogate.jsonl"])],
            "surrogate.jsonl:1: the text is not valid Unicode",
        ),
        # a blank second text was dropped: the pair was explained as the first text alone
        "blank --text-b": (explain(clf, "fine", "--text-b", " "), "--text-b has no words"),
        "blank --text-b to attack": (
            ["attack", "--model", clf, "--text", "fine", "--text-b", "", "--methods", "loo_empty"],
            "--text-b has no words",
        ),
        "blank --text-b to randomize": (
            ["randomize", "--model", clf, "--text", "fine", "--text-b", "\t"],
            "--text-b has no words",
        ),
        "--text-b without --text": (
            ["attack", "--model", clf, "--dataset", "sst2", "--text-b", "a dog", "--methods", "loo_empty"],
            "--text-b is the second text of --text",
        ),
        "blank text_b in a texts file": (
            ["predict", "--model", clf, "--texts", str(folders["blank-b.jsonl"])],
            "blank-b.jsonl:2: 'text_b' must be a text with a word",
        ),
        "number text_b in a texts file": (
            ["predict", "--model", clf, "--texts", str(folders["number-b.jsonl"])],
            "number-b.jsonl:1: 'text_b' must be a text with a word",
        ),
        # options that were ignored without a word
        "--limit with --text": (
            ["attack", "--model", clf, "--text", "fine", "--limit", "3", "--methods", "loo_empty"],
            "--limit picks examples of --dataset; --text is explained alone",
        ),
        "--split and --limit with --text": (
            ["randomize", "--model", clf, "--text", "fine", "--split", "dev", "--limit", "3"],
            "--split and --limit pick examples of --dataset",
        ),
        "--objective for the substitution attack": (
            ["attack", "--model", clf, "--text", "fine", "--attack", "substitution", "--objective", "constrained"],
            "--objective applies to the embedding attack",
        ),
        "--actors with the serial executor": (
            ["run", "--model", clf, "--dataset", "examples", "--split", "sst2", "--limit", "1", "--executor", "serial"]
            + ["--actors", "2"],
            "--address and --actors set up Ray; the serial executor runs in this process",
        ),
        "--per-example without --json": (
            ["evaluate", "--model", clf, "--dataset", "examples", "--split", "sst2", "--per-example"],
            "--per-example adds every example to the JSON output: add --json",
        ),
        "nonexistent model": (explain("no-such-org/no-such-model-xyz", "fine"), "no-such-model-xyz"),
        "nonexistent folder": (explain("/nonexistent/folder", "fine"), "/nonexistent/folder"),
        "empty folder": (explain(str(folders["empty"]), "fine"), "is a folder without config.json"),
        "corrupt config": (explain(str(folders["corrupt"]), "fine"), "cannot load"),
        "truncated weights": (explain(str(folders["truncated"]), "fine"), "damaged"),
        "no tokenizer": (explain(str(folders["no-tokenizer"]), "fine"), "cannot load"),
        "masked LM as classifier": (explain(mlm, "fine"), "cannot load"),
        "classifier as masked LM": (
            ["explain", "--model", clf, "--text", "fine film", "--methods", "im", "--mlm", clf, "--json"],
            "masked",
        ),
        "unknown method": (["explain", "--model", clf, "--text", "x", "--methods", "nope"], "nope"),
        "IG steps 10^9": (
            ["explain", "--model", clf, "--text", "x", "--methods", "integrated_gradients"]
            + ["--param", "integrated_gradients.n_steps=1000000000"],
            "n_steps",
        ),
        "LIME samples 10^7": (
            ["explain", "--model", clf, "--text", "x", "--methods", "lime", "--param", "lime.n_samples=10000000"],
            "n_samples",
        ),
        "NaN parameter": (
            ["explain", "--model", clf, "--text", "x", "--methods", "lime", "--param", "lime.kernel_width=nan"],
            "kernel_width",
        ),
        "infinite parameter": (
            ["explain", "--model", clf, "--text", "x", "--methods", "lime", "--param", "lime.alpha=inf"],
            "alpha",
        ),
        "text parameter for a number": (
            ["explain", "--model", clf, "--text", "x", "--methods", "integrated_gradients"]
            + ["--param", "integrated_gradients.n_steps=many"],
            "n_steps",
        ),
        "unknown parameter": (explain(clf, "x", "--param", "saliency.bogus=1"), "bogus"),
        "malformed parameter": (explain(clf, "x", "--param", "saliency"), "KEY.NAME=VALUE"),
        "parameter of another method": (explain(clf, "x", "--param", "lime.n_samples=10"), "lime"),
        "target out of range": (explain(clf, "fine", "--target", "7"), "target 7"),
        "negative target": (explain(clf, "fine", "--target", "-1"), "target -1"),
        "bad dataset": (["evaluate", "--model", clf, "--dataset", "nope", "--split", "dev"], "nope"),
        "bad split": (["evaluate", "--model", clf, "--dataset", "examples", "--split", "nope"], "nope"),
        "unknown metric": (
            ["evaluate", "--model", clf, "--dataset", "examples", "--split", "sst2", "--metrics", "nope"],
            "nope",
        ),
        "zero random": (
            ["evaluate", "--model", clf, "--dataset", "examples", "--split", "sst2", "--random", "0"],
            "--random 0",
        ),
        "negative limit": (
            ["evaluate", "--model", clf, "--dataset", "examples", "--split", "sst2", "--limit", "-3"],
            "-3",
        ),
        "invalid UTF-8 texts file": (["predict", "--model", clf, "--texts", str(folders["bad-utf8.jsonl"])], "UTF-8"),
        "texts file not JSON": (["predict", "--model", clf, "--texts", str(folders["not-json.jsonl"])], "not JSON"),
        "missing texts file": (["predict", "--model", clf, "--texts", "/nonexistent.jsonl"], "nonexistent.jsonl"),
        "fill without a mask": (["fill", "--model", mlm, "--text", "no mask here"], "[MASK]"),
        "unknown class name": (["explain", "--model", clf, "--text", "x", "--target", "one"], "unknown class 'one'"),
        "empty weights file": (explain(str(folders["empty-weights"]), "fine"), "damaged"),
        "weights header too large": (explain(str(folders["huge-header"]), "fine"), "damaged"),
        "weights without tensors": (explain(str(folders["no-tensors"]), "fine"), "lacks"),
        "batch size 0": (explain(clf, "x", "--batch-size", "0"), "--batch-size"),
        "window overlap 1.5": (explain(clf, "x", "--windows", "--window-overlap", "1.5"), "overlap 1.5"),
        "unknown stitch rule": (explain(clf, "x", "--windows", "--stitch", "max"), "'max'"),
        "window options without windows": (explain(clf, "x", "--stitch", "mean"), "add --windows"),
        "windows for a pair": (explain(clf, "x", "--windows", "--text-b", "y"), "pair is cut to the model's length"),
        "limit of a texts file": (
            ["predict", "--model", clf, "--texts", str(folders["empty.jsonl"]), "--limit", "2"],
            "--texts predicts every line",
        ),
        "windows with LIME": (
            ["explain", "--model", clf, "--text", " ".join(["good"] * 200), "--methods", "lime", "--windows"],
            "lime cannot be explained in sliding windows",
        ),
        "missing masked LM": (
            ["explain", "--model", clf, "--text", "fine film", "--methods", "im", "--mlm", "/nonexistent/mlm"],
            "/nonexistent/mlm",
        ),
        "IG steps 0": (
            ["explain", "--model", clf, "--text", "x", "--methods", "integrated_gradients"]
            + ["--param", "integrated_gradients.n_steps=0"],
            "n_steps=0",
        ),
        "negative LIME samples": (
            ["explain", "--model", clf, "--text", "x", "--methods", "lime", "--param", "lime.n_samples=-5"],
            "n_samples=-5",
        ),
        "no methods": (["explain", "--model", clf, "--text", "x", "--methods", ""], "--methods"),
        "only commas as methods": (["explain", "--model", clf, "--text", "x", "--methods", ",,"], "',,'"),
        "huge target": (explain(clf, "fine", "--target", str(10**20)), str(10**20)),
        "negative seed": (explain(clf, "x", "--seed", "-1"), "-1"),
        "text seed": (explain(clf, "x", "--seed", "abc"), "'abc'"),
        "empty texts file": (["predict", "--model", clf, "--texts", str(folders["empty.jsonl"])], "no records"),
        "unknown hub dataset": (["evaluate", "--model", clf, "--dataset", "hub:nope", "--split", "dev"], "nope"),
        "limit 0": (["evaluate", "--model", clf, "--dataset", "examples", "--split", "sst2", "--limit", "0"], "got 0"),
        "unknown command": (["frobnicate"], "frobnicate"),
        "unknown reproduction": (["reproduce", "nope"], "nope"),
        "list of an unknown reproduction": (["reproduce", "--list", "nope"], "unknown reproduction 'nope'"),
        "port 0 for the app": (["open", "session.zip", "--app", "--port", "0"], "expected a port from 1 to 65535"),
        "classifier given to fill": (["fill", "--model", clf, "--text", "a [MASK]"], "not a masked language model"),
    }


REFUSED_IDS = [
    "empty text", "whitespace text", "zero-width spaces only", "control characters only", "lone surrogate",
    "lone surrogate in a texts file", "nonexistent model", "nonexistent folder", "empty folder", "corrupt config",
    "truncated weights", "no tokenizer", "masked LM as classifier", "classifier as masked LM", "unknown method",
    "IG steps 10^9", "LIME samples 10^7", "NaN parameter", "infinite parameter", "text parameter for a number",
    "unknown parameter", "malformed parameter", "parameter of another method", "target out of range",
    "negative target", "bad dataset", "bad split", "unknown metric", "zero random", "negative limit",
    "invalid UTF-8 texts file", "texts file not JSON", "missing texts file", "fill without a mask", "unknown class name",
    "empty weights file", "weights header too large", "weights without tensors", "batch size 0", "window overlap 1.5",
    "unknown stitch rule", "window options without windows", "windows for a pair", "limit of a texts file", "windows with LIME", "missing masked LM", "IG steps 0", "negative LIME samples", "no methods",
    "only commas as methods", "huge target", "negative seed", "text seed", "empty texts file", "unknown hub dataset",
    "limit 0", "unknown command", "unknown reproduction", "classifier given to fill",
    "list of an unknown reproduction", "port 0 for the app",
]  # fmt: skip


@pytest.mark.parametrize("case", REFUSED_IDS)
def test_bad_input_is_one_clear_line(folders, capsys, case) -> None:
    argv, names = refused(folders)[case]
    code, out, err = run(capsys, argv)
    assert code != 0, f"{case} was accepted: {out[:200]}"
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert "Traceback" not in err
    last = lines[-1]
    assert last.startswith("error:") or ": error:" in last, err
    assert names in last, f"{case}: {last!r} does not name {names!r}"
