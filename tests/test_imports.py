"""Imports (issue 19 item 4): hand-written files in ferret's, inseq's, Thermostat's, CSV and our
own formats land in the run store with the known word scores (subwords summed into words, as
our own methods do); a computed run exported as JSON or CSV and imported back gives the same
scores bit for bit and the same metric values; hostile files fail with one line naming the
record and the problem."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from engine.imports import formats, import_bytes, import_file, records
from engine.runs.executor import execute, open_run, read_evaluation
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore
from tests.toy import save_toy_masked_lm

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
METRICS = ["deletion", "comprehensiveness"]


def stored(store: RunStore, run_id: str) -> dict[str, dict[str, list[float]]]:
    """{example id: {method: word scores}} of a stored run."""
    _, evaluation = read_evaluation(store, run_id)
    return {r.example.id: {m: a.scores.tolist() for m, a in r.attributions.items()} for r in evaluation.results}


def test_ferret_tokens_are_summed_into_words_and_kept_as_subwords(toy_bert_folder, tmp_path):
    store = RunStore(tmp_path)
    outcome = import_file(FIXTURES / "ferret.json", store, model=toy_bert_folder, metrics=METRICS)
    info, evaluation = read_evaluation(store, outcome.info.run_id)
    assert info.kind == "import" and info.status == "done"
    assert info.methods == ("ferret.partition_shap",)
    assert info.selection["import"]["format"] == "ferret" and info.selection["import"]["file"] == "ferret.json"
    first, second = evaluation.results
    attribution = first.attributions["ferret.partition_shap"]
    assert attribution.words == ("the", "movie", "was", "unbelievable")
    np.testing.assert_array_equal(attribution.scores, np.float32([0.1, -0.2, 0.05, 0.5 + 0.25 + 0.125]))
    assert attribution.subwords == ("the", "movie", "was", "un", "##believ", "##able")
    assert attribution.subword_word_ids == (0, 1, 2, 3, 3, 3)
    assert first.target == 1 and second.target == 0  # ferret's target_pos_idx is the class explained
    assert set(first.metrics["ferret.partition_shap"]) == set(METRICS)


def test_inseq_thermostat_csv_and_our_json(toy_bert_folder, tmp_path):
    store = RunStore(tmp_path)
    inseq = import_file(FIXTURES / "inseq.json", store, model=toy_bert_folder, metrics=METRICS)
    assert stored(store, inseq.info.run_id) == {
        "import:inseq/0": {"inseq.integrated_gradients": [0.125, 0.25, -0.0625, 0.5, 1.0]}
    }
    thermostat = import_file(FIXTURES / "thermostat.jsonl", store, model=toy_bert_folder, metrics=METRICS)
    scores = stored(store, thermostat.info.run_id)
    np.testing.assert_allclose(scores["0"]["thermostat.layerintegratedgradients"], [0.1, 0.2, 0.3, -0.75, 0.05])
    np.testing.assert_allclose(scores["1"]["thermostat.layerintegratedgradients"], [0.5, 0.25, 1.0])
    _, evaluation = read_evaluation(store, thermostat.info.run_id)
    assert [r.target for r in evaluation.results] == [0, 1]  # argmax of Thermostat's predictions
    assert [r.example.words for r in evaluation.results] == [
        ("the", "movie", "was", "boring", "."),
        ("it", "is", "fun"),
    ]
    ours = import_file(FIXTURES / "ours.json", store, model=toy_bert_folder, metrics=METRICS)
    assert stored(store, ours.info.run_id) == {"free/0": {"json.handmade": [0.0, 0.25, -0.5, 2.0, 0.5]}}
    csv = import_file(
        FIXTURES / "scores.csv", store, model=toy_bert_folder, dataset="examples", split="sst2", methods=["random"],
        metrics=METRICS,
    )  # fmt: skip
    info = csv.info
    assert info.methods == ("random", "csv.mine") and info.selection["indices"] == [3, 11]
    scores = stored(store, info.run_id)
    assert scores["examples/sst2/11"]["csv.mine"] == [0.0, 0.0, 0.5, 0.5] + [0.0] * 15
    assert len(scores["examples/sst2/3"]["random"]) == 20  # a built-in method beside the imported one
    again = import_file(
        FIXTURES / "scores.csv", store, model=toy_bert_folder, dataset="examples", split="sst2", methods=["random"],
        metrics=METRICS,
    )  # fmt: skip
    assert not again.created and again.info.run_id == info.run_id


def test_a_computed_run_exported_and_imported_back_has_the_same_scores_and_metrics(tmp_path):
    """The bundled SST-2 model on SST-2 examples: JSON (the heatmap page's download) and CSV."""
    store = RunStore(tmp_path)
    spec = RunSpec(
        model="minilm-sst2", dataset="examples", split="sst2", limit=3, methods=("loo_empty", "saliency"),
        metrics=tuple(METRICS), chunk_size=3,
    )  # fmt: skip
    computed = execute(open_run(spec, store), store, executor="serial").info
    _, original = read_evaluation(store, computed.run_id)
    exported = [a.to_json() for r in original.results for a in r.attributions.values()]
    rows = ["example_id,word_index,score,method"] + [
        f"{r.example.id},{i},{float(s)!r},{m}"
        for r in original.results
        for m, a in r.attributions.items()
        for i, s in enumerate(a.scores)
    ]
    for name, data in (("run.json", json.dumps(exported).encode()), ("run.csv", "\n".join(rows).encode())):
        outcome = import_bytes(
            data, name, store, model="minilm-sst2", dataset="examples", split="sst2", metrics=METRICS
        )
        source = name.rsplit(".", 1)[1]
        _, back = read_evaluation(store, outcome.info.run_id)
        assert outcome.info.selection["indices"] == [0, 1, 2]
        for before, after in zip(original.results, back.results, strict=True):
            assert after.probabilities == before.probabilities and after.target == before.target
            for method in ("loo_empty", "saliency"):
                mine, theirs = before.attributions[method], after.attributions[f"{source}.{method}"]
                assert theirs.scores.tobytes() == mine.scores.tobytes()
                for key in METRICS:
                    assert after.metrics[f"{source}.{method}"][key].value == before.metrics[method][key].value


def test_a_csv_import_keyed_to_a_data_file_takes_its_rows_without_a_split(toy_bert_folder, tmp_path, capsys):
    """A data file's split is ``all`` when none is given, in ``import`` as in every command."""
    data = tmp_path / "reviews.csv"
    data.write_text("text,label\na fine movie,1\n")
    scores = tmp_path / "scores.csv"
    scores.write_text(
        "example_id,word_index,score\n" + "".join(f"reviews/0,{i},{s}\n" for i, s in enumerate([1, 2, 3]))
    )
    assert main(["import", str(scores), "--model", toy_bert_folder, "--dataset", f"file:{data}", "--metrics", "deletion",
                 "--results-dir", str(tmp_path / "results"), "--quiet", "--json"]) == 0, capsys.readouterr().err  # fmt: skip
    run = json.loads(capsys.readouterr().out)["run"]
    assert (run["dataset"], run["split"], run["rows_done"]) == (f"file:{data.resolve()}", "all", 1)


def test_the_command_line_imports_lists_and_shows(toy_bert_folder, tmp_path, capsys):
    assert main(["import", str(FIXTURES / "ferret.json"), "--model", toy_bert_folder, "--metrics", "deletion",
                 "--results-dir", str(tmp_path), "--quiet", "--json"]) == 0  # fmt: skip
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["kind"] == "import" and shown["run"]["imported"]["format"] == "ferret"
    assert list(shown["results"]) == ["ferret.partition_shap"]
    assert main(["runs", "--results-dir", str(tmp_path)]) == 0
    assert "imported from ferret.json, ferret" in capsys.readouterr().out
    assert main(["show", shown["run"]["run_id"], "--results-dir", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == shown["results"]


# ---------------------------------------------------------------------------------- hostile files


def refused(data: bytes, name: str = "upload.json", fmt: str | None = None) -> str:
    with pytest.raises(ValueError) as caught:
        formats.read_bytes(data, name, fmt)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_truncated_wrong_types_nested_and_pickled_files_are_refused():
    ferret = (FIXTURES / "ferret.json").read_bytes()
    assert "not valid JSON" in refused(ferret[: len(ferret) // 2])
    assert "nested too deeply" in refused(b"[" * 200_000 + b"]" * 200_000)
    assert "not UTF-8" in refused(b"\x80\x04\x95pickle")  # a pickle is never unpickled
    assert "not UTF-8" in refused(b"\xff\xfe{}")
    assert "explanation 0 scores, score 1: expected a number, got str" in refused(
        json.dumps([{"text": "a", "tokens": ["a", "b"], "scores": [0.1, "0.2"], "explainer": "x"}]).encode()
    )
    assert "2 scores for 3 tokens" in refused(
        json.dumps({"tokens": ["a", "b", "c"], "scores": [0.1, 0.2], "explainer": "x"}).encode()
    )
    assert refused(b'{"tokens": ["a"], "scores": [NaN]}') == "upload.json holds NaN, which is not a JSON number"
    assert "not a known attribution format" in refused(b'{"hello": 1}')
    assert "record 0: not a valid attribution/1 record" in refused(b'{"schema": "attribution/1", "method": "x"}')


def test_size_limits(tmp_path, monkeypatch):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    monkeypatch.setattr(records, "MAX_BYTES", 1024)
    with pytest.raises(ValueError, match=r"big.json is 2,048 bytes, more than the 1,024 allowed"):
        records.read_limited(big, records.MAX_BYTES)
    many = json.dumps({"tokens": ["a"] * 9000, "scores": [0.0] * 9000}).encode()
    assert "more than the 8192 allowed" in refused(many)
    huge_array = {
        "sequence_attributions": [{"source": [], "source_attributions": {"__ndarray__": "b64:AAAA", "dtype": "float32",
                                                                       "shape": [100000, 100]}}]
    }  # fmt: skip
    assert "too large" in refused(json.dumps(huge_array).encode())
    wrong_bytes = {"sequence_attributions": [{"source": [{"token": "a", "id": 5}],
                   "source_attributions": {"__ndarray__": "b64:AAAA", "dtype": "float32", "shape": [1, 2]}}]}  # fmt: skip
    assert "3 bytes for shape [1, 2]" in refused(json.dumps(wrong_bytes).encode())
    assert "dtype 'object' is not read" in refused(
        json.dumps(
            {
                "sequence_attributions": [
                    {"source": [], "source_attributions": {"__ndarray__": [], "dtype": "object", "shape": [0]}}
                ]
            }
        ).encode()
    )


def test_csv_errors_name_the_line_and_example():
    assert "header needs example_id" in refused(b"a,b,c\n1,2,3\n", "x.csv")
    assert "x.csv line 3: example 'e' word 0 is given twice" in refused(
        b"example_id,word_index,score\ne,0,0.1\ne,0,0.2\n", "x.csv"
    )
    assert "example 'e' has a score for word 2 but none for word 1" in refused(
        b"id,word_index,score\ne,0,0.1\ne,2,0.2\n", "x.csv"
    )
    assert "x.csv line 2: word_index must be a whole number" in refused(b"id,word_index,score\ne,one,0.1\n", "x.csv")
    assert "x.csv line 3: word_index -1 is negative (words count from 0)" in refused(
        b"id,word_index,score\ne,0,0.1\ne,-1,0.2\n", "x.csv"
    )
    for value in ("inf", "nan"):  # one message, not the file and line twice
        assert refused(f"id,word_index,score\ne,0,{value}\n".encode(), "x.csv").endswith(
            f"x.csv line 2: the score {float(value)!r} is not finite"
        )
    for target in ("one", "\u00b2", "--1"):  # a label name to match later ("²" is a digit to str.isdigit, not to int)
        row = f"id,word_index,score,target\ne,0,0.1,{target}\n".encode()
        assert [r.target for r in formats.read_bytes(row, "x.csv")[1]] == [target]


def test_an_import_that_does_not_line_up_names_the_example_and_position(toy_bert_folder, tmp_path):
    store = RunStore(tmp_path)
    other = [
        {"text": "the movie", "tokens": ["[CLS]", "the", "film", "[SEP]"], "scores": [0, 1, 2, 0], "explainer": "x"}
    ]
    with pytest.raises(ValueError, match=r"token 1 of example 'import:bad/0' is 'film' in the file but 'movie'"):
        import_bytes(json.dumps(other).encode(), "bad.json", store, model=toy_bert_folder, metrics=METRICS)
    with pytest.raises(ValueError, match=r"example 'nope' is not in the dataset split"):
        import_bytes(b"id,word_index,score\nnope,0,1\n", "x.csv", store, model=toy_bert_folder, dataset="examples",
                     split="sst2", metrics=METRICS)  # fmt: skip
    with pytest.raises(ValueError, match=r"1 scores for the 20 words of example 'examples/sst2/3'"):
        import_bytes(b"id,word_index,score\nexamples/sst2/3,0,1\n", "x.csv", store, model=toy_bert_folder,
                     dataset="examples", split="sst2", metrics=METRICS)  # fmt: skip
    two = "id,word_index,score,method,target\n" + "".join(
        f"examples/sst2/3,{i},1,{m},{t}\n" for m, t in (("a", 0), ("b", 1)) for i in range(20)
    )
    with pytest.raises(ValueError, match=r"example 'examples/sst2/3' is explained for two classes \[0, 1\]"):
        import_bytes(
            two.encode(), "two.csv", store, model=toy_bert_folder, dataset="examples", split="sst2", metrics=METRICS
        )
    assert store.list_runs().empty  # nothing half-imported


# ---------------------------------------------------------------------------------- in the app


def test_imported_runs_show_on_the_explorer_and_open_on_the_heatmap_page(toy_bert_folder, tmp_path, monkeypatch):
    """A CSV matched to dataset examples opens on the heatmap page with the file's scores; a
    ferret file's own texts show on the explorer but are not dataset examples to open."""
    from streamlit.testing.v1 import AppTest

    store = RunStore(tmp_path)
    ferret = import_file(FIXTURES / "ferret.json", store, model=toy_bert_folder, metrics=METRICS).info.run_id
    csv = import_file(FIXTURES / "scores.csv", store, model=toy_bert_folder, dataset="examples", split="sst2",
                      metrics=METRICS).info.run_id  # fmt: skip
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    app = Path(__file__).resolve().parents[1] / "app.py"
    at = AppTest.from_file(str(app), default_timeout=300)
    at.session_state["sidebar.model_path"] = toy_bert_folder
    at.session_state["heatmaps.methods"] = []
    at.session_state["explorer.run"] = ferret
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="explorer.run_picker")
    assert picker.value == ferret and "imported" in picker.format_func(ferret)
    assert 'data-method="ferret.partition_shap"' in "".join(h.value for h in at.html)
    assert at.button(key="explorer.open").disabled
    assert at.expander and any("Import attributions" in e.label for e in at.expander)
    picker.set_value(csv).run()
    at.selectbox(key="explorer.position").set_value(1).run()  # the second row: dataset example 11
    assert not at.button(key="explorer.open").disabled
    at.button(key="explorer.open").click().run()
    assert not at.exception, at.exception
    assert any(csv in info.value for info in at.info), [i.value for i in at.info]
    shown = "".join(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    assert 'data-method="csv.mine"' in shown and 'title="joyful: +0.5"' in shown


def test_the_apps_upload_path_stores_a_run_and_refuses_oversized_files(toy_bert_folder, tmp_path, monkeypatch):
    from services import imports as upload

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    data = (FIXTURES / "ferret.json").read_bytes()
    run_id, notes = upload.import_upload(
        data, "ferret.json", model=toy_bert_folder, dataset=None, split=None, methods=["random"]
    )
    assert notes == ()  # a ferret file names no model
    info = RunStore(tmp_path, read_only=True).get(run_id)
    assert info.methods == ("random", "ferret.partition_shap") and info.rows_done == 2
    monkeypatch.setattr(upload, "UPLOAD_MB", 0)
    with pytest.raises(ValueError, match="larger than the 0 MB an upload may be"):
        upload.import_upload(data, "ferret.json", model=toy_bert_folder, dataset=None, split=None)


def test_an_import_scored_with_fill_ins_is_keyed_by_its_masked_lm_and_goes_on_where_it_stopped(
    model_dirs, tmp_path, monkeypatch
):
    """The masked LM makes the numbers of a fill-in removal, so another one is another import
    (the first import's results came back); a stopped import keeps its finished units and is
    marked stopped, not failed."""
    clf, mlm = model_dirs
    store = RunStore(tmp_path)
    other = tmp_path / "other-mlm"
    save_toy_masked_lm(other, seed=4)
    options = {"model": str(clf), "metrics": ["deletion"], "overrides": {"deletion": {"removal": "mlm"}}}
    first = import_file(FIXTURES / "thermostat.jsonl", store, mlm=str(mlm), **options)
    second = import_file(FIXTURES / "thermostat.jsonl", store, mlm=str(other), **options)
    assert second.created and second.info.run_id != first.info.run_id
    plain = {"model": str(clf), "metrics": ["deletion"]}
    assert (
        import_file(FIXTURES / "thermostat.jsonl", store, mlm=str(other), **plain).info.run_id
        == import_file(FIXTURES / "thermostat.jsonl", store, mlm=str(mlm), **plain).info.run_id
    )  # a deletion needs no masked LM: not keyed

    import engine.imports
    from engine import evaluate

    monkeypatch.setattr(engine.imports, "UNIT_ROWS", 1)  # the file's two records: two units
    calls = []
    original = evaluate.evaluate_slice

    def stop_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(evaluate, "evaluate_slice", stop_on_second)
    with pytest.raises(KeyboardInterrupt):
        import_file(FIXTURES / "thermostat.jsonl", store, model=str(clf), metrics=["comprehensiveness"])
    stopped = next(i for i in store.infos() if i.metrics == ("comprehensiveness",))
    assert stopped.status == "stopped" and stopped.units_done == 1
    calls.clear()
    monkeypatch.setattr(evaluate, "evaluate_slice", original)
    done = import_file(FIXTURES / "thermostat.jsonl", store, model=str(clf), metrics=["comprehensiveness"])
    assert done.info.run_id == stopped.run_id and done.info.status == "done" and done.info.units_done == 2


def test_non_finite_scores_in_our_json_are_refused_and_no_half_json_is_printed(capsys):
    """The CSV reader refused NaN and infinity; our JSON (``$float``) let them in, and a later
    ``show --json`` then wrote half a document before failing."""
    from cli.common import print_json
    from core.types import Attribution

    attribution = Attribution("loo_empty", "e", 1, ("a", "b"), np.array([0.5, np.inf], dtype=np.float32))
    assert "record 0, score 1: the score inf is not finite" in refused(json.dumps([attribution.to_json()]).encode())
    with pytest.raises(ValueError):
        print_json({"fine": 1.0, "bad": float("nan")})
    assert capsys.readouterr().out == ""


def test_a_row_number_matches_the_splits_example_at_that_row(toy_bert_folder):
    """Thermostat writes a dataset's row number as ``idx``; only our own ids matched before."""
    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.imports.align import align
    from engine.imports.records import BadFile, Imported

    clf = Classifier(load_classifier(toy_bert_folder))
    split = load_examples("examples", "sst2")
    words = clf.fit_example(split[3])[0].words
    record = Imported("thermostat.lig", tuple(0.1 * i for i in range(len(words))), "word", "row 0", example_id="3")
    (aligned,) = align(clf, [record], split)
    assert aligned.index == 3 and aligned.example.id == split[3].id
    with pytest.raises(BadFile, match=f"or a row number below {len(split)}"):
        align(clf, [dataclasses.replace(record, example_id=str(len(split)))], split)


def test_an_import_the_model_cannot_score_leaves_no_run(tmp_path):
    """A single text imported for a model of sentence pairs: refused before anything is stored,
    naming the example (a failed run stayed behind)."""
    store = RunStore(tmp_path)
    with pytest.raises(ValueError, match=r"ours.json: example 'free/0': minilm-esnli classifies sentence pairs"):
        import_file(FIXTURES / "ours.json", store, model="minilm-esnli", metrics=METRICS)
    assert store.infos() == []


def test_a_run_of_an_unknown_model_lists_the_bundled_ones(tmp_path, capsys):
    args = ["run", "--model", "no-such-model", "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    assert main([*args, "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "'no-such-model' is not a bundled model (minilm-" in err and "\n" not in err.strip()


_CORRUPTED_TABLES = """
import io, json, random, sys
import pyarrow as pa, pyarrow.parquet as pq
from engine.imports.arrow_reader import Refusal, read_checked

table = pa.table({"input_ids": [[101, 2023, 102]] * 20, "attributions": [[0.1, 0.2, 0.3]] * 20,
                  "idx": list(range(20)), "explainer": ["lig"] * 20})
parquet, stream, file = io.BytesIO(), pa.BufferOutputStream(), pa.BufferOutputStream()
pq.write_table(table, parquet)
for sink, new in ((stream, pa.ipc.new_stream), (file, pa.ipc.new_file)):
    with new(sink, table.schema) as writer:
        writer.write_table(table)
originals = {"parquet": parquet.getvalue(), "stream": stream.getvalue().to_pybytes(), "file": file.getvalue().to_pybytes()}
outcomes = {}
for kind, seed in json.loads(sys.argv[1]):
    data, draw = bytearray(originals[kind]), random.Random(seed)
    for _ in range(draw.randint(1, 8)):
        data[draw.randrange(len(data))] = draw.randrange(256)
    try:
        outcomes[f"{kind} {seed}"] = len(read_checked(bytes(data)).to_pylist())
    except (Refusal, pa.ArrowException, OSError, ValueError, TypeError):  # the child reader's refusals
        outcomes[f"{kind} {seed}"] = "refused"
print(json.dumps(outcomes))
"""


def test_corrupted_parquet_and_arrow_files_are_refused_without_crashing_the_process():
    """Damaged bytes (seeds that made pyarrow segfault while converting an Arrow stream, abort in
    read_table's reader threads on a Parquet file, or raise UnicodeDecodeError on a field name)
    are refused by the child reader's own checks, or read when the damage hit no data, without
    the reader itself crashing (it runs in a child process so that a crash costs only the file;
    here the reading runs in one child for all the cases and must exit cleanly)."""
    import subprocess
    import sys

    cases = [["stream", 5], ["stream", 13], ["stream", 98], ["file", 25], ["parquet", 127], ["parquet", 141]]
    cases += [[kind, seed] for kind in ("parquet", "stream", "file") for seed in range(200, 240)]
    done = subprocess.run(
        [sys.executable, "-c", _CORRUPTED_TABLES, json.dumps(cases)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = json.loads(done.stdout)
    assert len(outcomes) == len(cases)
    assert set(outcomes.values()) <= {"refused", 20}
    assert outcomes["stream 5"] == outcomes["parquet 127"] == "refused"


def test_imports_of_an_earlier_version_of_the_model_are_not_offered_for_the_current_one(toy_bert_folder, tmp_path):
    """The pages offer an import beside the built-in methods only for the model it was scored on:
    once the folder's files change (a retrained model under the same name), its imports drop out."""
    import shutil

    from engine.imports.stored import imported_methods
    from engine.runs.model_identity import model_fingerprint

    model = shutil.copytree(toy_bert_folder, tmp_path / "model")
    store = RunStore(tmp_path / "results")
    import_file(FIXTURES / "scores.csv", store, model=str(model), dataset="examples", split="sst2", metrics=METRICS)
    before = model_fingerprint(str(model))
    assert [m.name for m in imported_methods(store, str(model), "examples", "sst2", before)] == ["csv.mine (imported)"]
    (model / "config.json").write_text((model / "config.json").read_text() + "\n")  # another version of the model
    after = model_fingerprint(str(model))
    assert after != before
    assert imported_methods(store, str(model), "examples", "sst2", after) == []
    assert len(imported_methods(store, str(model), "examples", "sst2")) == 1  # without a fingerprint: by name


def _table_bomb(kind: str) -> bytes:
    """A few kilobytes that decode to 2,000 rows of 8,192 zeros (262 MB of Arrow buffers)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    n, per = 2000, 8192
    offsets = pa.array(np.arange(0, (n + 1) * per, per, dtype=np.int32))
    table = pa.table({
        "input_ids": pa.ListArray.from_arrays(offsets, pa.array(np.zeros(n * per, np.int64))),
        "attributions": pa.ListArray.from_arrays(offsets, pa.array(np.zeros(n * per))),
    })  # fmt: skip
    if kind == "parquet":
        sink = io.BytesIO()
        pq.write_table(table, sink, compression="zstd")
        return sink.getvalue()
    stream = pa.BufferOutputStream()
    with pa.ipc.new_stream(stream, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    return stream.getvalue().to_pybytes()


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_a_compressed_table_that_decodes_to_hundreds_of_megabytes_is_refused(kind):
    """A decompression bomb: it once took 1.4-1.65 GB and ten seconds, and was accepted."""
    import time

    data = _table_bomb(kind)
    assert len(data) < 20_000
    start = time.perf_counter()
    assert "decodes to" in refused(data, f"bomb.{kind}")
    assert time.perf_counter() - start < 30


def test_a_table_reader_that_dies_is_a_refusal_not_the_servers_end(monkeypatch):
    """Whatever stops the child reader (here a segfault) refuses the file in one line."""
    import subprocess

    from engine.imports import arrow_reader

    def crashing(*args, **kwargs):
        return subprocess.CompletedProcess(args, -11, b"", b"")

    monkeypatch.setattr(arrow_reader.subprocess, "run", crashing)
    assert "its reader stopped with signal 11" in refused(b"PAR1" + b"\0" * 100, "crash.parquet")


DEEP = "[" * 600 + "]" * 600
HUGE = "1" + "0" * 400
ARRAY = (
    '{"sequence_attributions": [{"source": [], "source_attributions": {"__ndarray__": "b64:AAAA", "dtype": "float32", '
)
HOSTILE = [
    # numbers a float cannot hold
    (f'{{"tokens": ["a"], "scores": [{HUGE}], "explainer": "x"}}', "ferret", "too large to be a number"),
    (f'{{"input_ids": [1], "attributions": [{HUGE}]}}', "thermostat", "too large to be a number"),
    ('{"schema": "attribution/1", "method": "m", "target": 1e400, "words": ["a"], "scores": [0.5]}', "json", ""),
    (
        f'{{"sequence_attributions": [{{"source": [{{"token": "a"}}], "source_attributions": [{HUGE}]}}]}}',
        "inseq",
        "not an array of numbers",
    ),
    # nesting the readers would recurse into
    (f'{{"sequence_attributions": [], "x": {DEEP}}}', "inseq", "nested more than"),
    (
        '{"sequence_attributions": [{"source": [], "source_attributions": {"__ndarray__": '
        + "[" * 600
        + "1"
        + "]" * 600
        + ', "dtype": "float32", "shape": [1]}}]}',
        "inseq",
        "nested more than",
    ),
    (f'{{"schema": "attribution/1", "method": "m", "words": ["a"], "scores": [0.5], "params": {DEEP}}}', "json", ""),
    # wrong types
    ('{"schema": "attribution/1", "method": {"a": 1}, "words": ["a"], "scores": [0.5]}', "json", ""),
    (
        '{"sequence_attributions": [{"target": [{"token": "a"}], "target_attributions": [[0.5]], "attr_pos_start": [1]}]}',
        "inseq",
        "attr_pos_start: expected a whole number",
    ),
    (ARRAY + '"shape": [true, true]}}]}', "inseq", "bad array shape"),
    (ARRAY + '"shape": [3, 6148914691236517206]}}]}', "inseq", "bad array shape"),
    ('{"sequence_attributions": [{"source": [], "source_attributions": []}]}', "inseq", "is empty"),
    # CSV that Python's csv module refuses
    ("example_id,word_index,score\n" + "a" * 200_000 + ",0,1\n", "csv", "field larger than field limit"),
    ("example_id,word_index,score,target\na,0,1," + "9" * 5000 + "\n", "csv", "is too large for a class index"),
]


@pytest.mark.parametrize(("data", "fmt", "said"), HOSTILE)
def test_hostile_files_are_refused_in_one_line(data, fmt, said):
    """Inputs a fuzzer found (they raised OverflowError, RecursionError, csv.Error, AttributeError
    or TypeError out of the import, where every failure must be a one-line ValueError)."""
    message = refused(data.encode(), f"hostile.{fmt}", fmt)
    assert said in message and len(message) < 400


def test_a_csv_with_carriage_returns_alone_ends_its_lines_with_them():
    """Old Mac line ends: a lone CR once raised csv.Error ("new-line character seen in unquoted field")."""
    found, records = formats.read_bytes(b"example_id,word_index,score\ra,0,1\ra,1,-1\r", "mac.csv")
    assert (found, [r.scores for r in records]) == ("csv", [(1.0, -1.0)])


def test_an_import_whose_masked_lm_fails_to_load_is_marked_failed_not_left_held(model_dirs, tmp_path):
    """The masked LM was loaded after the run was claimed but outside the part that marks a run
    failed: a model that would not load left the import "running" by the (long-lived) server
    process, and every later import of that file was refused as being written."""
    clf, _ = model_dirs
    broken = tmp_path / "broken-mlm"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    store = RunStore(tmp_path / "results")
    options = {"model": str(clf), "metrics": ["deletion"], "overrides": {"deletion": {"removal": "mlm"}}}
    with pytest.raises((ValueError, OSError)):
        import_file(FIXTURES / "thermostat.jsonl", store, mlm=str(broken), **options)
    (info,) = store.infos()
    assert info.status == "failed" and "Error" in (info.error or "")


# ---------------------------------------------------------------------------------- the CLI review's values


def refused_by_the_command_line(path: Path, data: bytes, model: str, capsys, *options: str) -> str:
    """The one error line ``python -m cli import`` prints for the file ``path`` holding ``data``
    (exit 2, no numpy warning on the way), after which its store holds no run."""
    path.write_bytes(data)
    results = path.parent / "results"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "RuntimeWarning: overflow encountered in cast" was printed
        code = main(["import", str(path), "--model", model, "--results-dir", str(results), "--quiet", *options])
    error = capsys.readouterr().err
    assert (code, error.count("\n"), error[:7]) == (2, 1, "error: ")
    assert RunStore(results).infos() == []
    return error[7:].strip()


def ours(**changes: object) -> bytes:
    """An attribution/1 record of the two words "a movie", with ``changes``."""
    from core.types import Attribution

    record = Attribution("loo_empty", "e", 1, ("a", "movie"), np.float32([0.5, -0.25])).to_json()
    return json.dumps({**record, **changes}).encode()


TOO_LARGE = "is too large (scores are stored as 32-bit floats, up to 3.4e38)"


def test_a_score_a_float32_cannot_hold_is_refused_by_name_and_nothing_is_stored(toy_bert_folder, tmp_path, capsys):
    """1e308 is finite as a float64 but infinite as the float32 it is stored as: the CSV import
    was stored and ``show --json`` then failed on it; the JSON reader printed numpy's warning and
    named the number as inf."""
    rows = "".join(f"examples/sst2/3,{i},1e308\n" for i in range(20))
    assert refused_by_the_command_line(
        tmp_path / "huge.csv", f"example_id,word_index,score\n{rows}".encode(), toy_bert_folder, capsys,
        "--dataset", "examples", "--split", "sst2",
    ) == f"huge.csv line 2: the score 1e+308 {TOO_LARGE}"  # fmt: skip
    assert (
        refused_by_the_command_line(tmp_path / "huge.json", ours(scores=[0.5, -1e308]), toy_bert_folder, capsys)
        == f"huge.json record 0, score 1: the score -1e+308 {TOO_LARGE}"
    )
    tokens = ["[CLS]", "un", "##believ", "##able", "[SEP]"]
    summed = {"text": "unbelievable", "tokens": tokens, "scores": [0, 3e38, 3e38, 0, 0], "explainer": "x"}
    with warnings.catch_warnings(), pytest.raises(ValueError) as caught:
        warnings.simplefilter("error")
        import_bytes(json.dumps(summed).encode(), "sum.json", RunStore(tmp_path), model=toy_bert_folder)
    assert str(caught.value) == (
        "sum.json explanation 0: the token scores of word 0 of example 'import:sum/0' add up to 6e+38,"
        " too large for a 32-bit float"
    )
    assert RunStore(tmp_path).infos() == []


def test_an_example_id_that_is_not_text_is_refused_by_type(toy_bert_folder, tmp_path, capsys):
    """An object id ended in a traceback (unhashable type: 'dict') once the model was loaded."""
    assert (
        refused_by_the_command_line(tmp_path / "exid.json", ours(example_id={"a": 1}), toy_bert_folder, capsys)
        == "exid.json record 0: example_id must be text, got dict"
    )
    assert refused(ours(example_id=7), "exid.json") == "exid.json record 0: example_id must be text, got int"


def test_a_target_that_is_not_a_whole_number_is_refused(toy_bert_folder, tmp_path, capsys):
    """A target of 1.5 was imported as class 1 (and true as class 1)."""
    assert (
        refused_by_the_command_line(tmp_path / "t.json", ours(target=1.5), toy_bert_folder, capsys)
        == "t.json record 0: not a valid attribution/1 record (ValueError: attribution target must be an integer, got 1.5)"
    )
    assert refused(ours(target=True), "t.json").endswith("attribution target must be an integer, got True)")


def test_a_csv_target_may_be_a_label_name(toy_bert_folder, tmp_path, capsys):
    """A CSV's target column took class indices only: "positive" was refused as not a whole number."""
    from core.classifier import Classifier
    from core.loaded import load_classifier

    clf = Classifier(load_classifier(toy_bert_folder))
    labels = clf.label_names
    rows = "".join(f"examples/sst2/3,{i},{i}\n" for i in range(20))
    for target, index in ((labels[1], 1), (labels[0].upper(), 0)):
        data = f"example_id,word_index,score,target\n{rows.replace(chr(10), ',' + target + chr(10))}".encode()
        imported = import_bytes(data, "named.csv", RunStore(tmp_path / target), model=toy_bert_folder,
                                dataset="examples", split="sst2", metrics=METRICS)  # fmt: skip
        _, evaluation = read_evaluation(RunStore(tmp_path / target), imported.info.run_id)
        assert [r.attributions["csv.scores"].target for r in evaluation.results] == [index]
    unknown = f"example_id,word_index,score,target\n{rows.replace(chr(10), ',nope' + chr(10))}".encode()
    assert refused_by_the_command_line(
        tmp_path / "nope.csv", unknown, toy_bert_folder, capsys, "--dataset", "examples", "--split", "sst2"
    ) == (f"nope.csv example 'examples/sst2/3': unknown class 'nope'; the model's classes: {', '.join(labels)}")


def test_a_session_bundles_zip_imports_its_attributions(linear_clf, toy_example):
    """The zip ``open`` reads was refused as "not UTF-8 text (byte 14)", a damaged zip too."""
    from engine.bundles import write_bundle
    from tests.test_bundles import toy_bundle, zipped

    bundle = toy_bundle(linear_clf, toy_example)
    found, read = formats.read_bytes(write_bundle(bundle, {"heatmap.html": b"<html></html>"}), "view.zip")
    assert found == "json"
    assert {r.method: r.scores for r in read} == {
        f"json.{method}": tuple(attribution.scores.tolist()) for method, attribution in bundle.attributions.items()
    }
    assert (
        refused(write_bundle(bundle)[:200], "cut.zip") == "cut.zip is not a readable zip file (File is not a zip file)"
    )
    assert refused(zipped({"notes.txt": b"x"}), "other.zip") == "other.zip has no bundle.json (not a session bundle)"


def test_refusals_name_the_file_and_the_record_in_plain_words():
    """These said "the JSON constant NaN is not allowed (write non-finite numbers as {'$float':
    ...})" and "a json method name must be text, got list" without the file, passed on Python's
    advice to call sys.set_int_max_str_digits(), or int()'s complaint about None."""
    assert refused(ours().replace(b"0.5", b"NaN"), "nan.json") == "nan.json holds NaN, which is not a JSON number"
    rows = b'{"input_ids": [1], "attributions": [0.5]}\n{"input_ids": [1], "attributions": [-Infinity]}\n'
    assert refused(rows, "t.jsonl") == "t.jsonl line 2 holds -Infinity, which is not a JSON number"
    assert refused(ours(method=["x"]), "m.json") == "m.json record 0: the method name must be text, got list"
    digits = b'{"tokens": ["a"], "scores": [' + b"1" * 5001 + b"]}"
    assert refused(digits, "big.json") == "big.json holds a number of more than 4,300 digits"
    assert (
        refused(b"example_id,word_index,score\n\0\0\0\n", "nul.csv") == "nul.csv line 2: fewer fields than the header"
    )
    long_index = b"id,word_index,score\ne," + b"1" * 5000 + b",0.5\n"
    assert refused(long_index, "x.csv") == f"x.csv line 2: word_index must be a whole number, got '{'1' * 39}"
    assert refused(b"id,word_index,score\ne,0,high\n", "x.csv") == "x.csv line 2: score must be a number, got 'high'"


def test_the_summary_explain_json_prints_imports_its_attributions(toy_bert_folder, capsys):
    """It was refused as "not a known attribution format ... give the format explicitly", and with
    ``--format json`` as "attribution 'model': expected an 'attribution/1' record"."""
    from cli.main import main

    assert main(["explain", "--model", toy_bert_folder, "--text", "a fine film", "--methods", "random,saliency",
                 "--json"]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    data = json.dumps(summary).encode()
    for fmt in (None, "json"):
        found, read = formats.read_bytes(data, "summary.json", fmt)
        assert found == "json" and [r.method for r in read] == ["json.random", "json.saliency"]
        assert [r.scores for r in read] == [tuple(summary["attributions"][m]["scores"]) for m in ("random", "saliency")]
        assert all(r.words == ("a", "fine", "film") for r in read)


@pytest.mark.parametrize("bad", [99999999, -5])
def test_an_input_id_outside_the_vocabulary_is_refused_by_value(toy_bert_folder, tmp_path, capsys, bad):
    """An id the tokenizer does not know ended in a traceback ('NoneType' object has no attribute
    'startswith'; OverflowError for a negative id) once the model was loaded."""
    from transformers import AutoTokenizer

    size = len(AutoTokenizer.from_pretrained(toy_bert_folder))
    row = {"idx": 0, "input_ids": [2, bad, 3], "attributions": [0, 1, 0]}
    assert (
        refused_by_the_command_line(
            tmp_path / "t.jsonl", json.dumps(row).encode(), toy_bert_folder, capsys, "--format", "thermostat"
        )
        == f"t.jsonl row 0: input id {bad} is outside the model's vocabulary (0-{size - 1})"
    )


def test_words_the_model_cannot_read_are_refused_and_nothing_is_stored(toy_bert_folder, tmp_path, capsys):
    """Words of empty strings were stored and scored as an example the model reads no token of; a
    lone surrogate (JSON may escape one) ended in the tokenizer's TypeError."""
    assert (
        refused_by_the_command_line(tmp_path / "e.json", ours(words=["", ""]), toy_bert_folder, capsys)
        == "e.json: example 'e': the text has no token the model reads: give at least one word"
    )
    assert (
        refused_by_the_command_line(tmp_path / "s.json", ours(words=["a", "\udcff"]), toy_bert_folder, capsys)
        == "s.json record 0: example 'e': the text is not valid Unicode: the word '\\udcff' holds a lone surrogate"
    )


def test_a_refused_upload_creates_no_store(toy_bert_folder, tmp_path, monkeypatch):
    """The app's upload made the run store before the file was read, as the command line did."""
    from services import imports as upload

    results = tmp_path / "results"
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    with pytest.raises(ValueError, match="cut.json"):
        upload.import_upload(
            b'{"schema": "attribution/1", ', "cut.json", model=toy_bert_folder, dataset=None, split=None
        )
    assert not results.exists()


def test_a_nan_in_an_inseq_b64_array_is_refused_by_token_as_in_a_list():
    """``np.nansum`` made a NaN of a ``b64:`` array a 0, where the same NaN in a list is refused."""
    import base64

    packed = base64.b64encode(np.float32([[0.5, 0.25], [np.nan, 1.0]]).tobytes()).decode()
    tokens = [{"token": "a", "id": 5}, {"token": "b", "id": 6}]
    array = {"__ndarray__": f"b64:{packed}", "dtype": "float32", "shape": [2, 2]}
    document = {"sequence_attributions": [{"source": tokens, "source_attributions": array}]}
    said = "nan.json sequence 0: the score of token 1 ('b') at step 0 is nan, not a finite number"
    assert refused(json.dumps(document).encode(), "nan.json") == said


def test_attr_pos_start_zero_is_not_read_as_missing():
    """``attr_pos_start or n`` took a 0 for a missing value and scored every target token."""
    document = {
        "sequence_attributions": [{"target": [{"token": "a"}], "target_attributions": [[0.5]], "attr_pos_start": 0}]
    }
    said = "zero.json sequence 0: attr_pos_start 0 leaves no prompt token to score"
    assert refused(json.dumps(document).encode(), "zero.json", "inseq") == said


def test_empty_files_and_our_records_read_as_thermostat_rows_say_what_they_are():
    """An empty file was "not valid JSON (line 1, column 1: Expecting value)", ``[]`` / ``{}`` "not a
    known attribution format", and our records in a .jsonl "expected a list of whole numbers"."""
    assert refused(b"", "empty.json") == "empty.json is empty"
    assert refused(b" \n", "blank.csv") == "blank.csv is empty"
    assert refused(b"[]", "list.json") == "list.json holds no attribution"
    assert refused(b"{ }", "object.json") == "object.json holds no attribution"
    assert refused(ours() + b"\n", "ours.jsonl") == (
        "ours.jsonl row 0: a record of schema 'attribution/1', not a Thermostat row (this project's own JSON is read from"
        " a .json file)"
    )


def test_a_missing_model_offline_says_how_to_download_it(monkeypatch):
    """Offline, the hub's answer to a model missing from the cache is only that it could not
    connect: the line says how to let it download instead; another answer (a cached model that
    cannot be read) is kept, as online."""
    from core.models import missing_model_message

    error = OSError("We couldn't connect to 'https://huggingface.co' to load the files. Check your connection.")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = missing_model_message("org/model", error)
    assert "set HF_HUB_OFFLINE=0 to download it" in offline and "couldn't connect" not in offline
    assert offline.startswith("'org/model' is not a bundled model (minilm-")
    unreadable = missing_model_message("org/model", ValueError("Unrecognized model in org/model. Should have..."))
    assert unreadable.endswith("found in the hub cache (HF_HUB_OFFLINE=1): Unrecognized model in org/model")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    online = missing_model_message("org/model", error)
    assert online.endswith("found on the hub: We couldn't connect to 'https://huggingface.co' to load the files")


def test_an_import_reads_its_dataset_from_data_dir(toy_bert_folder, tmp_path, capsys, monkeypatch):
    """``import`` had no ``--data-dir``: a dataset outside ``$ATTRIBUTION_DATA_DIR`` could not be
    matched (``run`` and ``evaluate`` take it)."""
    import os

    data_dir = os.environ["ATTRIBUTION_DATA_DIR"]  # the Makefile points the tests at ../shared/data
    monkeypatch.delenv("ATTRIBUTION_DATA_DIR")
    rows = "".join(f"sst2/dev/0,{i},{i / 10}\n" for i in range(9))  # "it 's a charming and ..." (9 words)
    scores = tmp_path / "scores.csv"
    scores.write_text(f"example_id,word_index,score\n{rows}")
    argv = ["import", str(scores), "--model", toy_bert_folder, "--dataset", "sst2", "--split", "dev"]
    argv += ["--metrics", "deletion", "--results-dir", str(tmp_path / "results"), "--quiet", "--json"]
    assert main(argv) == 2  # without it the data is not found
    capsys.readouterr()
    assert main([*argv, "--data-dir", data_dir]) == 0
    capsys.readouterr()
    (info,) = RunStore(tmp_path / "results").infos()
    assert (info.dataset, info.split, info.rows_done) == ("sst2", "dev", 1)
    bare = ["import", str(scores), "--model", toy_bert_folder, "--data-dir", data_dir]
    assert main(bare) == 2
    assert "--data-dir is the folder of --dataset" in capsys.readouterr().err
