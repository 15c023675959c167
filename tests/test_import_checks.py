"""An imported ``explanation/1`` record (``api.explain(...).to_json()``) or ``explain --json``
summary is checked as ``api.ExplanationResult.from_json`` checks it, with the same words; a file
made with another model than the one it is imported for says so on stderr."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import api
from cli.main import main
from engine.imports import formats, import_bytes
from engine.imports.explanations import same_model
from engine.runs.store import RunStore
from tests.test_imports import refused_by_the_command_line

TEXT = "a fine film"


@pytest.fixture(scope="module")
def record(toy_bert_folder) -> dict:
    """A saved result of the toy BERT model: two methods over the words of ``TEXT``."""
    return api.explain(toy_bert_folder, TEXT, ["loo_empty", "random"], seed=0).to_json()


def from_json_refusal(record: dict) -> str:
    with pytest.raises(ValueError) as caught:
        api.ExplanationResult.from_json(record)
    return str(caught.value)


def shifted_words(record: dict) -> dict:
    changed = {**record["attributions"]["loo_empty"], "words": ["a", "bad", "film"]}
    return {**record, "attributions": {**record["attributions"], "loo_empty": changed}}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (shifted_words, "the loo_empty attribution scores other words than the example"),
        (lambda r: {**r, "target": 5}, "target 5 is not one of the model's classes (0 to 1)"),
        (
            lambda r: {**r, "probabilities": [0.5, 0.7]},
            "the probabilities of a single-label head sum to 1, these to 1.2",
        ),
    ],
)
def test_a_record_from_json_refuses_is_refused_with_its_words(record, toy_bert_folder, tmp_path, capsys, change, said):
    """Each was imported: other words as a second example with the same id, a target of no class
    and probabilities no softmax gives stored as they were."""
    bad = change(record)
    assert from_json_refusal(bad) == said
    assert (
        refused_by_the_command_line(tmp_path / "x.json", json.dumps(bad).encode(), toy_bert_folder, capsys)
        == f"x.json: not a valid explanation/1 file (ValueError: {said})"
    )


def test_an_explain_summary_is_checked_the_same_way(toy_bert_folder, tmp_path, capsys):
    assert main(["explain", "--model", toy_bert_folder, "--text", TEXT, "--methods", "random", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [r.words for r in formats.read_bytes(json.dumps(summary).encode(), "s.json")[1]] == [("a", "fine", "film")]
    bad = {**summary, "probabilities": [0.5, 0.7]}
    assert refused_by_the_command_line(tmp_path / "s.json", json.dumps(bad).encode(), toy_bert_folder, capsys) == (
        "s.json: not a valid explain --json summary file "
        "(ValueError: the probabilities of a single-label head sum to 1, these to 1.2)"
    )
    moved = {**summary, "words": ["a", "bad", "film"]}
    with pytest.raises(ValueError, match=re.escape("the random attribution scores other words than the example")):
        formats.read_bytes(json.dumps(moved).encode(), "s.json")


def test_multi_label_and_regression_outputs_need_not_sum_to_one(record):
    """A multi-label head's sigmoids and a regression head's scores are read as from_json reads them."""
    multi = {**record, "head": "multi_label", "probabilities": [0.9, 0.8]}
    one = {k: {**a, "target": 0} for k, a in record["attributions"].items()}
    regression = {**record, "head": "regression", "probabilities": [3.5], "label_names": ["score"], "target": 0,
                  "predicted": 0, "attributions": one}  # fmt: skip
    for fine in (multi, regression):
        api.ExplanationResult.from_json(fine)
        found, read = formats.read_bytes(json.dumps(fine).encode(), "ok.json")
        assert found == "json" and [r.method for r in read] == ["json.loo_empty", "json.random"]
    with pytest.raises(ValueError, match="single-label head sum to 1, these to 1.7"):
        formats.read_bytes(json.dumps({**multi, "head": "single_label"}).encode(), "ok.json")


def test_a_file_made_with_another_model_says_so_on_stderr(record, toy_bert_folder, tmp_path, capsys):
    """A file naming minilm-sst2 was imported for another model without a word."""
    results = str(tmp_path / "results")
    path = tmp_path / "other.json"
    path.write_text(json.dumps({**record, "model": "minilm-sst2"}))
    options = ["--model", toy_bert_folder, "--metrics", "deletion", "--results-dir", results, "--quiet"]
    assert main(["import", str(path), *options]) == 0
    err = capsys.readouterr().err
    assert err == (
        f"warning: other.json was made with the model 'minilm-sst2', not {toy_bert_folder!r}: its scores are stored"
        " as that model's\n"
    )
    assert main(["import", str(path), *options]) == 0  # found stored: said again
    assert capsys.readouterr().err == err
    same = tmp_path / "same.json"
    same.write_text(json.dumps(record))
    assert main(["import", str(same), *options]) == 0
    assert capsys.readouterr().err == ""
    outcome = import_bytes(json.dumps(record).encode(), "same.json", RunStore(results), model=toy_bert_folder)
    assert outcome.notes == ()


def test_the_same_model_under_another_spelling_is_not_another_model(tmp_path):
    assert same_model("minilm-sst2 [head: multi_label] [autocast: bfloat16]", "minilm-sst2")
    assert same_model(str(tmp_path), str(tmp_path / "." / ""))
    assert not same_model("minilm-sst2", "minilm-movies")
    assert not same_model("a\0b", str(Path("a")))


def test_a_pairs_two_texts_stay_two_texts(toy_bert_folder, tmp_path):
    """The words of an explanation/1 record were imported as one text: a model of sentence pairs
    refused them ("classifies sentence pairs: give a premise and a hypothesis"), another model
    scored one text it was never given."""
    from engine.runs.executor import read_evaluation

    pair = api.explain(toy_bert_folder, ["a fine film", "it is"], ["random"], seed=0).to_json()
    store = RunStore(tmp_path)
    outcome = import_bytes(json.dumps(pair).encode(), "pair.json", store, model=toy_bert_folder, metrics=["deletion"])
    (result,) = read_evaluation(store, outcome.info.run_id)[1].results
    assert result.example.segments == (("a", "fine", "film"), ("it", "is"))


def test_the_apps_upload_passes_the_warning_on(record, toy_bert_folder, tmp_path, monkeypatch):
    """The Dataset explorer's import box shows the same line (``ui.imports`` as a warning)."""
    from services.imports import import_upload

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    data = json.dumps({**record, "model": "minilm-sst2"}).encode()
    run_id, notes = import_upload(data, "other.json", model=toy_bert_folder, dataset=None, split=None)
    assert RunStore(tmp_path).get(run_id).rows_done == 1
    said = f"other.json was made with the model 'minilm-sst2', not {toy_bert_folder!r}: its scores are stored as that model's"
    assert notes == (said,)


def test_an_import_sent_sigterm_is_stopped_and_the_same_command_goes_on(toy_bert_folder, tmp_path, monkeypatch, capsys):
    """SIGTERM ended an import with exit 143 and no word, the run marked killed; now it stops as
    Ctrl-C does (``cli run`` too), and the handler that was there is put back."""
    import signal

    import engine.imports
    from engine import evaluate
    from tests.test_imports import FIXTURES

    monkeypatch.setattr(engine.imports, "UNIT_ROWS", 1)  # the file's two records: two units
    original, calls = evaluate.evaluate_slice, []

    def terminated_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGTERM)
        return original(*args, **kwargs)

    monkeypatch.setattr(evaluate, "evaluate_slice", terminated_on_second)
    before = signal.getsignal(signal.SIGTERM)
    argv = ["import", str(FIXTURES / "thermostat.jsonl"), "--model", toy_bert_folder, "--metrics", "deletion"]
    argv += ["--results-dir", str(tmp_path), "--quiet"]
    assert main(argv) == 143
    assert signal.getsignal(signal.SIGTERM) is before
    assert capsys.readouterr().err.endswith("stopped; the same command goes on where it stopped\n")
    (stopped,) = RunStore(tmp_path).infos()
    assert (stopped.status, stopped.units_done) == ("stopped", 1)
    assert main(argv) == 0
    (done,) = RunStore(tmp_path).infos()
    assert (done.run_id, done.status, done.units_done) == (stopped.run_id, "done", 2)


def test_a_list_of_explanations_round_trips_and_imports_every_example(toy_bert_folder, tmp_path):
    """``ExplanationResults`` had no ``to_json``, and a list of ``explanation/1`` records was
    refused by ``import`` ("record 0: expected an 'attribution/1' record")."""
    from engine.runs.executor import read_evaluation

    results = api.explain_many(
        toy_bert_folder, ["a fine film", "a dull plot", "it is"], ["loo_empty", "random"], seed=0
    )
    written = json.dumps(results.to_json())
    restored = api.ExplanationResults.from_json(written)
    assert [r.to_json() for r in restored] == json.loads(written)
    store = RunStore(tmp_path)
    outcome = import_bytes(written.encode(), "many.json", store, model=toy_bert_folder, metrics=["deletion"])
    stored = {r.example.id: r for r in read_evaluation(store, outcome.info.run_id)[1].results}
    assert list(stored) == ["text/0", "text/1", "text/2"]
    for result in results:
        for method in ("loo_empty", "random"):
            assert (
                stored[result.example.id].attributions[f"json.{method}"].scores.tolist()
                == result[method].scores.tolist()
            )
    with pytest.raises(ValueError, match=re.escape("record 1: expected a 'explanation/1' record, got schema None")):
        api.ExplanationResults.from_json([results[0].to_json(), {}])


def test_two_texts_of_one_id_get_ids_of_their_own(record, toy_bert_folder, tmp_path):
    """Two records of one id and other words (two downloads of the heatmap page, both "text")
    were stored as two rows of the same id; records of the same id and words stay one example."""
    from engine.runs.executor import read_evaluation

    other = api.explain(toy_bert_folder, "a dull plot", ["loo_empty", "random"], seed=0).to_json()
    third = api.explain(toy_bert_folder, "it is", ["loo_empty"], seed=0).to_json()
    again = {**record, "attributions": {"mine": {**record["attributions"]["random"], "method": "mine"}}}
    data = json.dumps([record, other, again, third]).encode()
    store = RunStore(tmp_path)
    outcome = import_bytes(data, "many.json", store, model=toy_bert_folder, metrics=["deletion"])
    results = read_evaluation(store, outcome.info.run_id)[1].results
    assert [(r.example.id, r.example.words) for r in results] == [
        ("text", ("a", "fine", "film")),
        ("text (2)", ("a", "dull", "plot")),
        ("text (3)", ("it", "is")),
    ]
    first = results[0].attributions
    assert first["json.mine"].scores.tolist() == first["json.random"].scores.tolist()
    assert results[1].attributions["json.loo_empty"].scores.tolist() == other["attributions"]["loo_empty"]["scores"]


def test_from_json_reads_the_summary_explain_json_prints(toy_bert_folder, capsys):
    assert main(["explain", "--model", toy_bert_folder, "--text", TEXT, "--methods", "random,loo_empty", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    result = api.ExplanationResult.from_json(json.dumps(summary))
    assert result.words == tuple(TEXT.split()) and result.example.id == "cli" and result.model == toy_bert_folder
    assert result["loo_empty"].scores.tolist() == summary["attributions"]["loo_empty"]["scores"]
    assert (result.probabilities, result.target) == (tuple(summary["probabilities"]), summary["target"])
    with pytest.raises(ValueError, match="the record: not a valid explain --json summary file"):
        api.ExplanationResult.from_json({**summary, "words": ["other", "words", "here"]})


def test_a_name_with_a_line_break_is_compared_as_written():
    """``core.model_refs`` reads names from files, which may hold any character."""
    assert same_model("a\nb [head: regression]", "a\nb")
    assert not same_model("a\nb", "a")


def test_an_attribution_of_another_class_than_the_records_is_refused(record, toy_bert_folder, tmp_path, capsys):
    """``open`` showed such a bundle as it was; ``import`` refused it naming the wrong method."""
    other = 1 - record["target"]
    changed = {**record["attributions"]["loo_empty"], "target": other}
    bad = {**record, "attributions": {**record["attributions"], "loo_empty": changed}}
    said = f"the loo_empty attribution explains class {other}, not the target {record['target']}"
    assert from_json_refusal(bad) == said
    assert (
        refused_by_the_command_line(tmp_path / "x.json", json.dumps(bad).encode(), toy_bert_folder, capsys)
        == f"x.json: not a valid explanation/1 file (ValueError: {said})"
    )


def pair_model(toy_bert_folder):
    """The toy BERT model as a model of sentence pairs (what ``minilm-mnli`` says it reads)."""
    import dataclasses

    from core.classifier import Classifier
    from core.loaded import load_classifier

    return Classifier(dataclasses.replace(load_classifier(toy_bert_folder), pair=True))


def test_the_heatmap_pages_download_of_a_pair_imports_and_one_without_its_split_says_so(toy_bert_folder, tmp_path):
    """The page's ``{method: attribution/1}`` download had no segments: a pair model refused it
    as "classifies sentence pairs: give a premise and a hypothesis", blaming the user."""
    from engine.runs.executor import read_evaluation

    pair = api.explain(toy_bert_folder, ["a fine film", "it is"], ["random"], seed=0).to_json()
    page = {m: {**a, "segment_ids": [0, 0, 0, 1, 1]} for m, a in pair["attributions"].items()}  # as the page writes
    store, options = RunStore(tmp_path), {"model": toy_bert_folder, "metrics": ["deletion"]}
    clf = pair_model(toy_bert_folder)
    outcome = import_bytes(json.dumps(page).encode(), "heatmap.json", store, clf=clf, **options)
    (result,) = read_evaluation(store, outcome.info.run_id)[1].results
    assert result.example.segments == (("a", "fine", "film"), ("it", "is"))
    split_lost = {m: {k: v for k, v in a.items() if k != "segment_ids"} for m, a in page.items()}
    said = (
        f"old.json: example 'text': {clf.name} classifies sentence pairs, but the file does not say which words are"
        " the premise and which the hypothesis: import it with a dataset and split (--dataset, --split), or import"
        " the page's session bundle"
    )
    with pytest.raises(ValueError, match=re.escape(said)):
        import_bytes(json.dumps(split_lost).encode(), "old.json", RunStore(tmp_path / "old"), clf=clf, **options)


def test_an_explanations_gold_label_rationales_and_subword_scores_are_imported(toy_bert_folder, tmp_path):
    """Without a dataset, an explanation/1 record's example was rebuilt from its words (no gold
    label, no rationales) and its subword scores were dropped."""
    from engine.runs.executor import read_evaluation

    record = api.explain(toy_bert_folder, TEXT, ["saliency"], seed=0).to_json()
    record["example"] |= {"label": 1, "rationales": [[0, 1, 1], [0, 1, 0]], "rationale": [0, 1, 1]}
    store = RunStore(tmp_path)
    outcome = import_bytes(json.dumps(record).encode(), "gold.json", store, model=toy_bert_folder, metrics=["deletion"])
    (result,) = read_evaluation(store, outcome.info.run_id)[1].results
    assert (result.example.label, result.example.rationales) == (1, ((0, 1, 1), (0, 1, 0)))
    assert result.example.rationale == (0, 1, 1)
    written, imported = record["attributions"]["saliency"], result.attributions["json.saliency"]
    assert imported.subwords == tuple(written["subwords"]) and written["subwords"]
    assert imported.subword_word_ids == tuple(written["subword_word_ids"])
    np.testing.assert_array_equal(imported.subword_scores, np.float32(written["subword_scores"]))


def test_several_explainers_of_one_text_without_ids_are_one_example(toy_bert_folder, tmp_path):
    """A ferret file of Partition SHAP and LIME on one text (no ids) was stored as two examples of
    one method each."""
    from tests.test_imports import FIXTURES, stored

    first, other = json.loads((FIXTURES / "ferret.json").read_text())
    lime = {**first, "explainer": "LIME"}
    data = json.dumps([first, lime, other]).encode()
    outcome = import_bytes(data, "two.json", RunStore(tmp_path), model=toy_bert_folder, metrics=["deletion"])
    found = stored(RunStore(tmp_path), outcome.info.run_id)
    assert {k: sorted(v) for k, v in found.items()} == {
        "import:two/0": ["ferret.lime", "ferret.partition_shap"],
        "import:two/1": ["ferret.partition_shap"],
    }


def test_a_files_import_hashes_the_bytes_it_read_without_reading_it_again(toy_bert_folder, tmp_path, monkeypatch):
    import hashlib

    from engine.imports import import_file
    from tests.test_imports import FIXTURES

    path, file_digest = FIXTURES / "ours.json", hashlib.file_digest

    def read_again(handle, digest):
        assert Path(handle.name) != path, "the file was read a second time to hash it"
        return file_digest(handle, digest)

    monkeypatch.setattr(hashlib, "file_digest", read_again)
    outcome = import_file(path, RunStore(tmp_path), model=toy_bert_folder, metrics=["deletion"])
    assert outcome.info.selection["import"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
