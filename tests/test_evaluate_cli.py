"""``python -m cli evaluate`` on a tiny slice: JSON keys, values that match the metrics computed
directly, rationale metrics that skip examples without a rationale, and argument errors."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from core.classifier import Classifier
from core.datasets import available_splits, load_examples
from core.loaded import load_classifier
from core.masked_lm import MaskedLM
from core.models import bundled_names
from engine.evaluate import select_examples
from explainers.base import make_attribution
from metrics import faithfulness as F
from tests.toy import save_toy_masked_lm


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["evaluate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_evaluate_gives_the_same_values_whatever_the_group(toy_bert_folder, capsys):
    common = ["--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "5",
              "--methods", "loo_empty,saliency", "--metrics", "deletion,sufficiency", "--per-example", "--json"]  # fmt: skip
    payloads = []
    for group in ("1", "4"):
        code, out, err = run_cli(capsys, *common, "--group", group)
        assert code == 0, err
        payloads.append(json.loads(out))
    one, grouped = ([(e["id"], e["metrics"]) for e in p["examples"]] for p in payloads)
    assert [i for i, _ in grouped] == [i for i, _ in one]  # slice order
    for (_, first), (_, second) in zip(one, grouped, strict=True):
        for method, values in first.items():
            for metric, value in values.items():
                assert second[method][metric] == pytest.approx(value, rel=1e-5, abs=1e-6)
    with pytest.raises(SystemExit):
        run_cli(capsys, *common, "--group", "0")
    assert "--group: expected a number of at least 1" in capsys.readouterr().err


def test_evaluate_json_keys_and_values(toy_bert_folder, capsys):
    code, out, err = run_cli(
        capsys,
        "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "3",
        "--methods", "loo_empty,random", "--metrics", "deletion,comprehensiveness,sufficiency,iou",
        "--param", "deletion.fraction=1.0", "--param", "comprehensiveness.bins=marc",
        "--per-example", "--seed", "3", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert "3 examples done" in err
    payload = json.loads(out)
    assert payload["n_examples"] == 3
    assert payload["metrics"]["deletion"]["params"] == {
        "removal": "delete",
        "fraction": 1.0,
        "convention": "ours",
        "correct_only": False,
    }
    assert payload["metrics"]["comprehensiveness"]["params"]["bins"] == "marc"
    assert payload["metrics"]["deletion"]["higher_is_better"] is False
    summary = payload["results"]["loo_empty"]["deletion"]
    assert set(summary) == {"mean", "interval", "n", "skipped"}
    assert summary["n"] == 3 and summary["interval"][0] <= summary["mean"] <= summary["interval"][1]
    examples = payload["examples"]
    assert len(examples) == 3
    keys = {
        "id", "words", "segment_ids", "label", "target", "probabilities", "rationale", "rationales", "scores",
        "metrics", "selected",
    }  # fmt: skip
    assert set(examples[0]) == keys
    assert set(examples[0]["scores"]) == {"loo_empty", "random"}

    # The command's per-example values equal the metrics computed directly from its scores.
    clf = Classifier(load_classifier(toy_bert_folder))
    originals = load_examples("examples", "sst2", limit=3)
    params = {
        "deletion": F.CurveParams(fraction=1.0),
        "comprehensiveness": F.BinParams(bins="marc"),
        "sufficiency": F.BinParams(),
    }
    for record, example in zip(examples, originals):
        assert record["words"] == list(example.words)
        assert record["target"] == int(np.argmax(record["probabilities"]))
        for method, scores in record["scores"].items():
            attribution = make_attribution(example, record["target"], scores)
            direct = F.score_many(clf, example, attribution, params)
            for key, result in direct.items():
                assert record["metrics"][method][key] == pytest.approx(result.value, abs=1e-9)
    mean = np.mean([r["metrics"]["random"]["sufficiency"] for r in examples])
    assert payload["results"]["random"]["sufficiency"]["mean"] == pytest.approx(mean, abs=1e-12)
    assert payload["results"]["random"]["iou"]["n"] == 3


def test_target_gold_explains_the_label_not_the_prediction(toy_bert_folder, capsys):
    common = ["--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "6"]
    common += ["--methods", "loo_empty", "--metrics", "comprehensiveness", "--per-example", "--json"]
    runs = {}
    for target in ("predicted", "gold"):
        code, out, err = run_cli(capsys, *common, "--target", target)
        assert code == 0, err
        runs[target] = json.loads(out)
    assert runs["gold"]["target"] == "gold"
    for predicted, gold in zip(runs["predicted"]["examples"], runs["gold"]["examples"]):
        assert gold["target"] == gold["label"]
        assert predicted["target"] == int(np.argmax(predicted["probabilities"]))
        if gold["label"] != predicted["target"]:  # explaining the other class mirrors the scores
            assert gold["scores"]["loo_empty"] != predicted["scores"]["loo_empty"]


def test_target_gold_on_a_split_without_labels_is_refused(toy_bert_folder, capsys):
    """SST-2's test split has no labels: ``--target gold`` explained the predicted class while the
    report said gold."""
    common = ["--model", toy_bert_folder, "--dataset", "sst2", "--split", "test", "--limit", "3"]
    code, _, err = run_cli(capsys, *common, "--methods", "random", "--metrics", "deletion", "--target", "gold")
    assert code == 2 and "target 'gold' needs gold labels and these examples have none" in err


def test_rationale_metrics_skip_examples_without_one(toy_bert_folder, capsys):
    # The bundled examples all carry a highlight; SST-2 sentences carry none.
    code, out, err = run_cli(
        capsys,
        "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2",
        "--methods", "random", "--metrics", "iou,deletion", "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert err == ""
    result = json.loads(out)["results"]["random"]
    assert (result["iou"]["n"], result["iou"]["skipped"]) == (2, 0)
    if "dev" not in available_splits("sst2"):
        pytest.skip("no SST-2 data folder")
    code, out, err = run_cli(
        capsys,
        "--model", toy_bert_folder, "--dataset", "sst2", "--split", "dev", "--limit", "2",
        "--methods", "random", "--metrics", "iou,deletion", "--json", "--quiet", "--per-example",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    result = payload["results"]["random"]
    assert result["iou"] == {
        "mean": None, "interval": [None, None], "n": 0, "skipped": 2, "skipped_because": {"no human rationale": 2}
    }  # fmt: skip
    assert (result["deletion"]["n"], result["deletion"]["skipped"]) == (2, 0)
    assert "skipped_because" not in result["deletion"]
    assert payload["examples"][0]["rationale"] is None
    assert set(payload["examples"][0]["metrics"]["random"]) == {"deletion"}
    code, out, err = run_cli(
        capsys,
        "--model", toy_bert_folder, "--dataset", "sst2", "--split", "dev", "--limit", "2",
        "--methods", "random,saliency", "--metrics", "token_f1,deletion", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert out.count("— (2 skipped)") == 2  # one cell per method, with why below the table
    assert out.rstrip().endswith("token_f1 scored no example: no human rationale (2 examples)")


def test_masked_lm_removal_through_the_command(toy_bert_folder, tmp_path, capsys):
    save_toy_masked_lm(tmp_path)
    code, out, err = run_cli(
        capsys,
        "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2",
        "--methods", "loo_empty", "--metrics", "deletion", "--param", "deletion.removal=mlm",
        "--mlm", str(tmp_path), "--per-example", "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["metrics"]["deletion"]["params"]["removal"] == "mlm"
    clf = Classifier(load_classifier(toy_bert_folder))
    mlm = MaskedLM.load(str(tmp_path))
    for record, example in zip(payload["examples"], load_examples("examples", "sst2", limit=2)):
        attribution = make_attribution(example, record["target"], record["scores"]["loo_empty"])
        direct = F.score_many(clf, example, attribution, {"deletion": F.CurveParams(removal="mlm")}, mlm=mlm)
        assert record["metrics"]["loo_empty"]["deletion"] == pytest.approx(direct["deletion"].value, abs=1e-9)


def test_random_selection_is_seeded_and_ordered():
    items = list(range(50))
    first = select_examples(items, 5, seed=7)
    assert first == select_examples(items, 5, seed=7)
    assert first == sorted(first) and len(set(first)) == 5
    assert first != select_examples(items, 5, seed=8)
    assert select_examples(items, None, seed=None) == items
    with pytest.raises(ValueError, match="outside"):
        select_examples(items, 51, seed=0)


def test_the_json_names_the_seed_random_examples_were_drawn_with(toy_bert_folder, capsys):
    """``--random`` without ``--seed`` draws with seed 0; the JSON said ``"seed": null``."""
    code, out, err = run_cli(
        capsys, "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--random", "2",
        "--methods", "random", "--metrics", "deletion", "--json", "--quiet", "--per-example",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    drawn = select_examples(load_examples("examples", "sst2"), 2, seed=0)
    assert payload["selection"]["seed"] == 0 and [e["id"] for e in payload["examples"]] == [e.id for e in drawn]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--limit", "2", "--random", "2"], "not both"),
        (["--limit", "100000"], "a limit of 100000 is more than the"),  # not the whole split under a slice's name
        (["--param", "lime.n_samples=5"], "not requested"),
        (["--metrics", "nonsense"], "unknown metric"),
        (["--param", "deletion.removal=erase"], "not one of"),
    ],
)
def test_argument_errors(toy_bert_folder, capsys, extra, message):
    code, _, err = run_cli(
        capsys, "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--methods", "random", *extra
    )
    assert code == 2
    assert message in err


def test_text_table(toy_bert_folder, capsys):
    code, out, _ = run_cli(
        capsys, "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2",
        "--methods", "random", "--metrics", "deletion,insertion", "--quiet",
    )  # fmt: skip
    assert code == 0
    assert "deletion↓" in out and "insertion↑" in out and "2 examples" in out
    assert "scored no example" not in out and "skipped" not in out


@pytest.mark.slow
@pytest.mark.skipif("minilm-sst2" not in bundled_names(), reason="the bundled SST-2 model is not trained yet")
def test_evaluate_bundled_sst2(capsys):
    code, out, err = run_cli(
        capsys, "--model", "minilm-sst2", "--dataset", "sst2", "--split", "dev", "--limit", "3",
        "--methods", "loo_empty,random", "--per-example", "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    clf = Classifier(load_classifier("minilm-sst2"))
    for record in payload["examples"]:
        example = load_examples("sst2", "dev", limit=3)[[r["id"] for r in payload["examples"]].index(record["id"])]
        attribution = make_attribution(example, record["target"], record["scores"]["loo_empty"])
        direct = F.score_many(clf, example, attribution, {k: None for k in F.METRIC_KEYS})
        for key, result in direct.items():
            assert math.isclose(record["metrics"]["loo_empty"][key], result.value, abs_tol=1e-6)


@pytest.fixture
def random_refused(monkeypatch) -> None:
    """The random baseline fails on every example ("refused for the test"); the others run."""
    import explainers

    real = explainers.run_explainers

    def refuse_random(spec, *args, **kwargs):
        if spec.key == "random":
            raise ValueError("refused for the test")
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(explainers, "run_explainers", refuse_random)


def test_a_failing_method_is_recorded_and_the_run_goes_on(toy_bert_folder, capsys, random_refused):
    code, out, err = run_cli(
        capsys, "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2",
        "--methods", "random,loo_empty", "--metrics", "deletion", "--json", "--quiet", "--per-example",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert [e["error"] for e in payload["errors"]["random"]] == ["refused for the test"] * 2
    assert payload["results"]["random"]["deletion"]["n"] == 0
    assert payload["results"]["loo_empty"]["deletion"]["n"] == 2
    assert set(payload["examples"][0]["scores"]) == {"loo_empty"}


def test_a_slice_where_every_method_failed_exits_with_status_1(toy_bert_folder, capsys, random_refused, tmp_path):
    """``evaluate``, ``run`` and ``show`` printed every example's failure and exited 0, so a
    script went on with an empty result; ``explain`` already exits 1 when every method failed."""
    from cli.main import main

    slice_args = ["--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    slice_args += ["--metrics", "deletion", "--quiet"]
    assert main(["evaluate", *slice_args, "--methods", "random"]) == 1
    assert "random failed on 2 examples, first: refused for the test" in capsys.readouterr().out
    assert main(["evaluate", *slice_args, "--methods", "random,loo_empty"]) == 0  # one method scored
    capsys.readouterr()
    stored = ["--executor", "serial", "--results-dir", str(tmp_path), "--json"]
    assert main(["run", *slice_args, "--methods", "random", *stored]) == 1
    run_id = json.loads(capsys.readouterr().out)["run"]["run_id"]
    assert main(["show", run_id, "--results-dir", str(tmp_path)]) == 1


@pytest.mark.skipif("minilm-hatexplain" not in bundled_names(), reason="the bundled HateXplain model is missing")
def test_human_ceiling_and_best_threshold_match_direct_computation(capsys):
    from metrics import plausibility

    if "test" not in available_splits("hatexplain"):
        pytest.skip("ATTRIBUTION_DATA_DIR has no HateXplain data: this check needs the real annotator masks")
    code, out, err = run_cli(
        capsys, "--model", "minilm-hatexplain", "--dataset", "hatexplain", "--split", "test", "--limit", "12",
        "--methods", "loo_empty", "--metrics", "iou,token_f1", "--json", "--quiet", "--per-example",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    examples = load_examples("hatexplain", "test", limit=12)
    records = payload["examples"]
    assert [r["rationales"] for r in records] == [[list(m) for m in e.rationales] for e in examples]
    for key in ("iou", "token_f1"):
        direct = plausibility.summarize(plausibility.human_ceiling(e, key) for e in examples)
        reported = payload["human_ceiling"][key]
        assert (reported["n"], reported["skipped"]) == (direct.n, direct.skipped)
        assert reported["n"] > 0 and reported["skipped"] > 0  # normal posts carry no rationale
        assert reported["mean"] == pytest.approx(direct.mean)
    for example, record in zip(examples, records):  # token F1 from the reported selection
        if "token_f1" in record["metrics"]["loo_empty"]:
            chosen = set(record["selected"]["loo_empty"]["token_f1"])
            human = {i for i, m in enumerate(example.rationale) if m}
            assert len(chosen) == len(human)  # top-k with k = the rationale's size
            hits = len(chosen & human)
            f1 = 0.0 if not hits else 2 * hits / (len(chosen) + len(human))
            assert record["metrics"]["loo_empty"]["token_f1"] == pytest.approx(f1)
            order = np.argsort(-np.array(record["scores"]["loo_empty"]), kind="stable")
            assert chosen == set(order[: len(human)].tolist())
    pairs = [(e, make_attribution(e, r["target"], r["scores"]["loo_empty"])) for e, r in zip(examples, records)]
    search = plausibility.best_threshold(pairs, "iou")
    best = payload["best_threshold"]["loo_empty"]
    assert best["threshold"] == search.best
    assert best["iou"]["mean"] == pytest.approx(search.means[search.best])


def test_the_app_and_the_command_line_give_the_same_slice_numbers(toy_bert_folder, capsys):
    """One implementation of dataset evaluation: the app's dataset view (services.evaluate_slice)
    and ``evaluate --json`` agree on every mean, interval and mean curve, gold-class targets included."""
    import services

    code, out, err = run_cli(
        capsys,
        "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "3",
        "--methods", "loo_empty,grad_x_input", "--metrics", "deletion,comprehensiveness",
        "--target", "gold", "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    examples = load_examples("examples", "sst2", limit=3)
    app = services.evaluate_slice(
        toy_bert_folder,
        examples,
        ["loo_empty", "grad_x_input"],
        {"deletion": {}, "comprehensiveness": {}},
        target="gold",
    )
    for method in ("loo_empty", "grad_x_input"):
        for metric in ("deletion", "comprehensiveness"):
            cli_summary = payload["results"][method][metric]
            app_summary = app.summary[method][metric]
            assert cli_summary["n"] == app_summary.n == 3
            assert cli_summary["mean"] == pytest.approx(app_summary.mean, abs=1e-12)
            assert cli_summary["interval"] == pytest.approx([app_summary.low, app_summary.high], abs=1e-12)
            for key, values in app.mean_curves[method][metric].items():
                assert payload["mean_curves"][method][metric][key] == pytest.approx(values, abs=1e-12)
    assert payload["mean_curves"]["loo_empty"]["deletion"]["x"][0] == 0.0


def test_ctrl_c_stops_evaluate_with_one_line_and_exit_130(toy_bert_folder):
    """Ctrl-C printed a 40-line KeyboardInterrupt traceback; now it says how far it got, as ``run``
    and ``roar`` do, and exits 130."""
    argv = ["-m", "cli", "evaluate", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2"]
    # 20,000 samples: a tenth of a second or more an example on the toy model (2,000 took under 0.1 s), so the signal
    # comes well before the slice's end
    argv += ["--methods", "lime", "--param", "lime.n_samples=20000", "--group", "1"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, *argv], cwd=Path(__file__).resolve().parents[1], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    err = bytearray()
    started = threading.Event()

    def read() -> None:  # until the bar shows a finished example, then on to the end
        while chunk := process.stderr.read1(4096):  # type: ignore[union-attr]
            err.extend(chunk)
            if re.search(rb"\b[1-9]\d*/12\b", err):
                started.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert started.wait(120), err.decode()
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=120)
    reader.join()
    text = err.decode()
    assert code == 130 and "Traceback" not in text, text
    stopped = re.search(r"^evaluate stopped after (\d+) of 12 examples; nothing is kept .*$", text, re.MULTILINE)
    assert stopped and 1 <= int(stopped.group(1)) < 12, text
    # the bar is closed before the line, which ends the output (tqdm drew an open bar again below it at exit)
    assert text.endswith(stopped.group(0) + "\n"), repr(text[-400:])


def test_methods_default_is_what_leaving_the_option_out_runs(toy_bert_folder, capsys):
    """``--methods default`` ran the heatmap page's seven methods, leaving the option out the five
    of ``DEFAULT_METHODS``; ``panel`` names the seven."""
    from engine.evaluate import DEFAULT_METHODS
    from explainers import DEFAULT_PANEL

    common = ["--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "1",
              "--metrics", "deletion", "--seed", "0", "--json"]  # fmt: skip
    methods = []
    for extra in ([], ["--methods", "default"], ["--methods", "panel"]):
        code, out, err = run_cli(capsys, *common, *extra)
        assert code == 0, err
        methods.append(list(json.loads(out)["methods"]))
    assert methods[0] == methods[1] == DEFAULT_METHODS.split(",")
    assert methods[2] == list(DEFAULT_PANEL)
