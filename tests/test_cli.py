"""The command line on local model folders (a tiny BERT and masked LM saved by the test)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import explainers
from cli.common import method_keys
from cli.main import build_parser, main

FAST = [
    "--param",
    "lime.n_samples=50",
    "--param",
    "lime_mlm.n_samples=30",
    "--param",
    "kernel_shap.n_samples=50",
    "--param",
    "integrated_gradients.n_steps=8",
    "--param",
    "marc.n_steps=10",
    "--param",
    "aml.n_steps=2",
    "--param",
    "aml.n_train=8",
    "--param",
    "aml.n_epochs=1",
]


def run_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_methods_lists_every_key(capsys) -> None:
    listed = run_json(capsys, "methods", "--json")
    assert list(listed) == list(explainers.REGISTRY)


def test_explain_all_methods_from_a_local_folder(capsys, model_dirs) -> None:
    clf_dir, mlm_dir = model_dirs
    words = ["the", "movie", "was", "great", "but", "the", "plot", "was", "bad"]
    out = run_json(
        capsys,
        "explain",
        "--model",
        str(clf_dir),
        "--text",
        " ".join(words),
        "--methods",
        "all",
        "--mlm",
        str(mlm_dir),
        "--seed",
        "1",
        "--json",
        *FAST,
    )
    assert out["words"] == words and out["segment_ids"] == [0] * len(words)
    assert sum(out["probabilities"]) == pytest.approx(1.0)
    assert out["target"] == out["predicted"] == int(np.argmax(out["probabilities"]))
    assert set(out["attributions"]) == set(explainers.REGISTRY)
    for key, record in out["attributions"].items():
        assert len(record["scores"]) == len(words) and all(np.isfinite(record["scores"])), key
        assert {"runtime_s", "forward_passes", "params", "extras"} <= set(record)


def test_explain_runs_the_default_panel_unless_told_otherwise(capsys, model_dirs) -> None:
    clf_dir, _ = model_dirs
    out = run_json(capsys, "explain", "--model", str(clf_dir), "--text", "the plot was bad", "--json")
    assert list(out["attributions"]) == list(explainers.DEFAULT_PANEL)
    assert explainers.resolve("default") == explainers.resolve("panel") == list(explainers.DEFAULT_PANEL)
    assert explainers.resolve("default", "saliency,random") == ["saliency", "random"]
    assert set(explainers.DEFAULT_PANEL) < set(explainers.REGISTRY)
    assert not any(explainers.get(key).needs_mlm for key in explainers.DEFAULT_PANEL)


def test_explain_prints_every_score_to_three_significant_digits(capsys, model_dirs) -> None:
    clf_dir, _ = model_dirs
    argv = ["explain", "--model", str(clf_dir), "--text", "the plot was bad", "--methods", "saliency,loo_empty"]
    out = run_json(capsys, *argv, "--json")
    scores = {k: a["scores"] for k, a in out["attributions"].items()}
    assert main(argv) == 0
    prediction, coverage, *lines = capsys.readouterr().out.splitlines()
    names, predicted = out["label_names"], out["predicted"]
    assert prediction == (
        f"predicted {names[predicted]!r} (p = {out['probabilities'][predicted]:.3f}); explaining {names[predicted]!r}"
    )
    assert coverage == "explained all 4 words"
    printed = {
        line.split(": ")[0]: [float(pair.rsplit(":", 1)[1]) for pair in line.split(": ")[1].split()] for line in lines
    }
    assert set(printed) == {"saliency", "loo_empty"}
    for key, values in printed.items():
        assert values == pytest.approx(scores[key], rel=5e-3, abs=0), key  # small gradients keep their digits


def test_explain_pair_and_target(capsys, model_dirs) -> None:
    clf_dir, _ = model_dirs
    out = run_json(
        capsys,
        "explain",
        "--model",
        str(clf_dir),
        "--text",
        "a man runs",
        "--text-b",
        "a man sleeps",
        "--methods",
        "loo_empty,saliency",
        "--target",
        "0",
        "--json",
    )
    assert out["segment_ids"] == [0, 0, 0, 1, 1, 1] and out["target"] == 0
    argv = ["explain", "--model", str(clf_dir), "--text", "a man runs", "--text-b", "a man sleeps", "--target", "0"]
    assert main([*argv, "--methods", "loo_empty"]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line.endswith(f"explaining {out['label_names'][0]!r}"), first_line
    named = [*argv[:-1], f" {out['label_names'][1].upper()}", "--methods", "loo_empty", "--json"]  # by name
    assert main(named) == 0 and json.loads(capsys.readouterr().out)["target"] == 1
    assert out["attributions"]["loo_empty"]["forward_passes"] <= 7


def test_predict_texts_file(capsys, model_dirs, tmp_path) -> None:
    clf_dir, _ = model_dirs
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "the movie was great"}\n{"text": "awful", "text_b": "a dog runs"}\n')
    out = run_json(capsys, "predict", "--model", str(clf_dir), "--texts", str(texts), "--json")
    assert out["label_names"] == ["negative", "positive"] and len(out["examples"]) == 2
    assert [row["id"] for row in out["examples"]] == [f"{texts}:1", f"{texts}:2"]  # rows said nothing of which line
    assert "accuracy" not in out


def test_fill_returns_sorted_probabilities(capsys, model_dirs) -> None:
    _, mlm_dir = model_dirs
    out = run_json(capsys, "fill", "--model", str(mlm_dir), "--text", "the [MASK] was great", "--k", "5", "--json")
    probs = [f["probability"] for f in out["examples"][0]["fills"]]
    assert len(probs) == 5 and probs == sorted(probs, reverse=True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["explain", "--model", "/nonexistent/folder", "--text", "hi"], "cannot load"),
        (["explain", "--model", "MLM", "--text", "hi"], "not a sequence classifier"),
        (["explain", "--model", "CLF", "--text", "hi", "--methods", "nope"], "unknown method"),
        (
            ["explain", "--model", "CLF", "--text", "hi", "--param", "saliency.bogus=1", "--methods", "saliency"],
            "unknown parameter",
        ),
        (["explain", "--model", "CLF", "--text", "   "], "empty"),
        (["fill", "--model", "MLM", "--text", "no mask here"], "exactly one"),
    ],
)
def test_bad_input_gives_a_clear_error(capsys, model_dirs, argv, message) -> None:
    clf_dir, mlm_dir = model_dirs
    argv = [str(clf_dir) if a == "CLF" else str(mlm_dir) if a == "MLM" else a for a in argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


# Each command with --methods and the arguments it requires.
METHODS_COMMANDS = {
    "explain": ["--model", "m", "--text", "t"],
    "evaluate": ["--model", "m", "--dataset", "d", "--split", "s"],
    "run": ["--model", "m", "--dataset", "d", "--split", "s"],
    "bench": ["--model", "m"],
    "randomize": ["--model", "m", "--text", "t"],
    "attack": ["--model", "m", "--text", "t"],
    "roar": [],
    "import": ["f.json", "--model", "m"],
}


@pytest.mark.parametrize("command", list(METHODS_COMMANDS))
def test_methods_default_means_leaving_the_option_out_in_every_command(command, capsys) -> None:
    """``--methods default`` was the heatmap page's seven methods in every command, whatever the
    command ran without ``--methods``; ``panel`` names the seven, ``all`` every method."""
    parser = build_parser()

    def keys(*methods: str) -> list[str]:
        args = parser.parse_args([command, *METHODS_COMMANDS[command], *methods])
        return method_keys(args) if command != "import" else explainers.resolve(args.methods, args.methods_default)

    assert keys("--methods", "default") == keys()
    assert keys("--methods", "panel") == list(explainers.DEFAULT_PANEL)
    assert keys("--methods", "all") == list(explainers.REGISTRY)
    assert keys("--methods", "saliency") == ["saliency"]
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--help"])
    assert "'panel' (the heatmap page's seven fast methods)" in " ".join(capsys.readouterr().out.split())


def test_datasets_counts_local_splits_and_lists_the_hubs_without_loading_them(capsys, monkeypatch) -> None:
    """Online, the hub versions are listed by their splits only: counting them would download
    every split (e-SNLI's train split is 550,000 pairs)."""
    import core.datasets as datasets_module
    from core.datasets import available_datasets, load_examples

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    loaded = []
    original = datasets_module.load_examples

    def counted(name, split, *args, **kwargs):
        assert not name.startswith("hub:"), f"{name}/{split} was loaded"
        loaded.append((name, split))
        return original(name, split, *args, **kwargs)

    monkeypatch.setattr(datasets_module, "load_examples", counted)
    listed = run_json(capsys, "datasets", "--json")["datasets"]
    assert listed["hub:sst2"] == {"train": None, "validation": None, "test": None}
    assert listed["examples"]["sst2"] == len(load_examples("examples", "sst2")) > 0
    assert {name for name, _ in loaded} == {n for n in available_datasets() if not n.startswith("hub:")}
    assert main(["datasets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "hub:sst2: train, validation, test (downloaded when first used)" in lines
    assert any(line.startswith("examples: all (") for line in lines)


def test_the_randomisation_table_prints_a_correlation_that_rounds_to_zero_without_a_minus(capsys):
    """A mean Spearman of -0.0002 printed "-0.000"; it reads +0.000, and -0.0006 still -0.001."""
    from types import SimpleNamespace

    from cli.randomize import _print_table

    per_method = [{"saliency": {"spearman": (-0.0002,)}, "lime": {"spearman": (-0.0006,)}}]
    result = SimpleNamespace(
        mode="cascading",
        seed=0,
        scheme="init",
        examples=[object()],
        steps=[SimpleNamespace(name="classifier")],
        methods=("saliency", "lime"),
        summary=lambda pooled=False: per_method,
        runtime_s=1.0,
        forward_passes=2,
        backward_passes=1,
    )
    _print_table(result)
    row = capsys.readouterr().out.splitlines()[2].split()
    assert row == ["classifier", "+0.000", "-0.001"]


def test_listing_the_commands_and_reading_the_store_import_no_torch(tmp_path) -> None:
    """``--help`` built every command's options, which imported torch and every method: 5 s on 2
    cores before a word; ``--help``, ``runs`` and ``reproduce --list`` (2.5-3.6 s when it imported
    every reproduction's metrics) now load none of it (0.2-0.3 s)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules, 'explainers' in sys.modules, file=sys.stderr)\n"
    )
    for argv in (["--help"], ["runs", "--results-dir", str(tmp_path)], ["reproduce", "--list"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], check=True, capture_output=True, text=True, timeout=120
        )
        assert done.stderr.strip().splitlines()[-1] == "False False", (argv, done.stderr)
    listed = subprocess.run(
        [sys.executable, "-m", "cli", "--help"], check=True, capture_output=True, text=True, timeout=120
    )
    assert "remove and retrain (ROAR," in listed.stdout  # roar's one line of help
