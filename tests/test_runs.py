"""The run store and its executor (issue 15): resume after an interruption and after SIGKILL
gives the rows of an uninterrupted run, readers in other processes see whole units while a
writer writes, Ray and serial give identical rows, a run's key finds the stored run and a
changed model file makes a new one, and ``show`` prints what ``evaluate`` prints."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import torch

from cli.main import main
from engine.runs import rows as run_rows
from engine.runs.executor import execute, open_run, read_evaluation, resume_spec
from engine.runs.model_identity import model_fingerprint
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore
from engine.runs.worker import UnitWorker
from tests.kill import kill_once_done
from tests.toy import toy_bert

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("loo_empty", "saliency", "random")
METRICS = ("deletion", "comprehensiveness", "iou")


def toy_spec(model: str, **changes) -> RunSpec:
    fields = {
        "model": model,
        "dataset": "examples",
        "split": "sst2",
        "limit": 6,
        "methods": METHODS,
        "metrics": METRICS,
        "seed": 3,
        "chunk_size": 2,
    }
    return RunSpec(**{**fields, **changes})


def comparable(table: pa.Table) -> list[dict]:
    """Rows with the attributions' run times removed (the only field that may differ)."""
    out = []
    for row in sorted(table.to_pylist(), key=lambda r: r["position"]):
        for key, value in row.items():
            if key.startswith("attribution/") and value is not None:
                meta = json.loads(value)
                meta.pop("runtime_s")
                row[key] = meta
        out.append(row)
    return out


def assert_close(got, expected, where: str = "rows") -> None:
    """``got == expected`` with floats compared to float32 rounding (relative 1e-5)."""
    if isinstance(expected, float) and isinstance(got, float):
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-7, nan_ok=True), where
    elif isinstance(expected, dict) and isinstance(got, dict):
        assert got.keys() == expected.keys(), where
        for key in expected:
            assert_close(got[key], expected[key], f"{where}/{key}")
    elif isinstance(expected, list) and isinstance(got, list):
        assert len(got) == len(expected), where
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert_close(a, b, f"{where}/{i}")
    elif isinstance(expected, str) and isinstance(got, str) and expected.startswith(("[{", '{"')):
        assert_close(json.loads(got), json.loads(expected), where)  # an attribution or metric record
    else:
        assert got == expected, where


class Interrupted(Exception):
    pass


def test_rows_round_trip_and_resume_after_an_interruption(toy_bert_folder, tmp_path, capsys):
    spec = toy_spec(toy_bert_folder)
    reference_store = RunStore(tmp_path / "a")
    reference = execute(open_run(spec, reference_store), reference_store, executor="serial")
    assert (reference.info.status, reference.info.rows_done, reference.info.units_done) == ("done", 6, 3)
    expected = comparable(reference_store.read_table(reference.info.run_id))
    assert [r["position"] for r in expected] == list(range(6))

    store = RunStore(tmp_path / "b")
    committed = []

    def stop_after_two_units(fraction: float, message: str) -> None:
        if message.endswith(" examples") and message.split()[0].isdigit():
            committed.append(message)
            if len(committed) == 2:
                raise Interrupted

    with pytest.raises(Interrupted):
        execute(open_run(spec, store), store, executor="serial", progress=stop_after_two_units)
    run_id = reference.info.run_id  # same key, other store: same id
    info = store.get(run_id)
    assert (info.status, info.rows_done, info.units_done) == ("failed", 4, 2)
    assert info.error.startswith("Interrupted")
    from cli.main import main

    assert main(["show", run_id, "--results-dir", str(tmp_path / "b")]) == 0  # the rows stored so far
    assert f"{run_id} failed (Interrupted" in capsys.readouterr().err  # why, not only "is failed"
    # The units group examples of similar length: the two handed out first hold the four shortest
    # (two full units of the three: ``spread`` hands them out in length order).
    from transformers import AutoTokenizer

    tokenizer, order = AutoTokenizer.from_pretrained(toy_bert_folder), store.row_order(run_id)
    lengths = [len(tokenizer(*[" ".join(s) for s in e.segments])["input_ids"]) for e in open_examples(spec)]
    assert sorted(order) == list(range(6)) and [lengths[i] for i in order] == sorted(lengths)
    assert sorted(store.read_table(run_id).column("position").to_pylist()) == sorted(order[:4])
    assert [store.example(run_id, i)[0].words for i in order[:4]] == [open_examples(spec)[i].words for i in order[:4]]
    with pytest.raises(ValueError, match=f"row {order[4]} of {run_id} is not stored"):
        store.example(run_id, order[4])

    resumed = execute(open_run(resume_spec(store, run_id), store, resume=run_id), store, executor="serial")
    assert resumed.computed_units == 1 and not resumed.created
    assert (resumed.info.status, resumed.info.rows_done, resumed.info.forward_passes) == (
        "done",
        6,
        reference.info.forward_passes,
    )
    assert comparable(store.read_table(run_id)) == expected

    # Stored rows come back as the records evaluate_slice returned.
    _, evaluation = read_evaluation(store, run_id)
    first = evaluation.results[0]
    example, attributions = store.example(run_id, 0)
    assert example == first.example and set(attributions) == set(METHODS)
    assert attributions["saliency"].scores.tolist() == expected[0]["score/saliency"]
    assert attributions["saliency"].subword_scores is not None
    frame = store.rows(run_id)
    assert list(frame["position"]) == list(range(6))
    assert frame["value/loo_empty/deletion"].tolist() == [r["value/loo_empty/deletion"] for r in expected]


def test_same_key_is_the_same_run_and_a_changed_model_file_is_a_new_one(toy_bert_folder, tmp_path):
    store = RunStore(tmp_path / "results")
    spec = toy_spec(toy_bert_folder, limit=2, methods=("loo_empty",), metrics=("deletion",))
    first = execute(open_run(spec, store), store, executor="serial")
    assert first.created and first.computed_units == 1
    # Spelling a default parameter out is the same run; nothing is recomputed.
    same = toy_spec(toy_bert_folder, limit=2, methods=("loo_empty",), metrics=("deletion",))
    same = RunSpec(**{**same.__dict__, "overrides": {"deletion": {"fraction": "0.2"}}})
    again = execute(open_run(same, store), store, executor="serial")
    assert (again.info.run_id, again.created, again.computed_units) == (first.info.run_id, False, 0)
    other_seed = open_run(
        toy_spec(toy_bert_folder, limit=2, methods=("loo_empty",), metrics=("deletion",), seed=4), store
    )
    assert other_seed.info.run_id != first.info.run_id

    # One weight changed in a copy of the model folder: a new fingerprint, a new run.
    changed = tmp_path / "changed"
    loaded = toy_bert()
    with torch.no_grad():
        loaded.model.classifier.bias[0] += 0.5
    loaded.model.save_pretrained(changed)
    loaded.tokenizer.save_pretrained(changed)
    assert model_fingerprint(str(changed)) != model_fingerprint(toy_bert_folder)
    moved = open_run(toy_spec(str(changed), limit=2, methods=("loo_empty",), metrics=("deletion",)), store)
    assert moved.created and moved.info.run_id != first.info.run_id
    assert len(store.infos()) == 3


def test_a_unit_that_runs_out_of_memory_halves_the_batch(toy_bert_folder, monkeypatch):
    import engine.runs.worker as worker_module

    spec = toy_spec(toy_bert_folder, limit=2, batch_size=8)
    worker = UnitWorker(spec)
    examples = open_examples(spec)
    _, expected = worker.run(0, [0, 1], examples)
    real = worker_module.evaluate_slice
    calls = []

    def flaky(*args, **kwargs):
        calls.append(worker.clf.batch_size)
        if len(calls) < 3:
            kwargs["progress"](0.6, "explaining examples 1-2 of 2: saliency")  # got this far, then failed
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(worker_module, "evaluate_slice", flaky)
    reports: list[tuple[float, str]] = []
    stats, table = worker.run(0, [0, 1], examples, lambda fraction, message: reports.append((fraction, message)))
    assert calls == [8, 4, 2] and worker.halvings == 2
    fractions = [fraction for fraction, _ in reports]
    assert fractions[:2] == [0.6, 0.6] and fractions == sorted(fractions)  # the unit's share never goes back
    assert reports[2][0] == 0.6 and reports[2][1] != reports[1][1]  # the new start's messages, at the share held
    assert fractions[-1] == 1.0
    assert stats.n_rows == 2
    assert_close(comparable(table), comparable(expected))  # other batch sizes: equal to float rounding


def open_examples(spec: RunSpec):
    from core.datasets import load_examples

    return load_examples(spec.dataset, spec.split, limit=spec.limit)


def test_units_are_pieces_of_the_length_order_handed_out_across_every_length(toy_bert_folder):
    """A run's units are the selection sorted by tokens and cut into ``chunk_size`` rows (only the
    last, the longest, may hold fewer), and the units handed out first span short, middle and long
    examples: a run stopped part-way has not done only its shortest."""
    import random

    from core.types import Example
    from engine.runs.worker import token_lengths, unit_order, unit_rows

    words = list(range(1, 41))
    random.Random(0).shuffle(words)
    examples = [Example(segments=(("good",) * n,)) for n in words]
    lengths, read = token_lengths(toy_bert_folder, examples)
    assert lengths == read == [n + 2 for n in words]  # one token a word, [CLS] and [SEP]
    units = unit_rows(unit_order(lengths, 3), 3)
    assert sorted(row for unit in units for row in unit) == list(range(40))
    assert [len(unit) for unit in units] == [3] * 13 + [1]
    by_length = sorted(units[:-1], key=lambda unit: min(words[row] for row in unit)) + units[-1:]
    assert [words[row] for unit in by_length for row in unit] == list(range(1, 41))  # pieces of the order
    rank = {tuple(unit): k for k, unit in enumerate(by_length)}
    assert {rank[tuple(unit)] * 3 // 13 for unit in units[:5]} == {0, 1, 2}  # the first five: every third


def test_units_of_long_documents_hold_fewer_examples(toy_bert_folder, tmp_path):
    """A run that names no unit size gets 16 examples per unit where the median example is at
    most 64 tokens, and fewer, about 1,024 tokens a unit, where it is longer; the length read is
    the one the model reads (cut at 512, or the tokenizer's length). The size is stored with the
    run, so the same run asked for with another size keeps its units."""
    from core.models import load_tokenizer
    from core.types import Example
    from engine.runs.executor import prepare
    from engine.runs.worker import token_lengths, unit_size

    assert [unit_size([n] * 5) for n in (10, 64, 65, 100, 200, 512, 2000)] == [16, 16, 15, 10, 5, 2, 1]
    assert unit_size([10, 10, 300, 300, 300]) == 3  # the median, not the mean or the longest
    lengths, read = token_lengths(toy_bert_folder, [Example(segments=(("good",) * 600,))])
    assert load_tokenizer(toy_bert_folder).model_max_length == 64
    assert lengths == [602] and read == [64]  # cut at the toy tokenizer's length

    spec = toy_spec(toy_bert_folder)  # six bundled sentences, a unit size given
    store = RunStore(tmp_path)
    sized = dataclasses.replace(spec, chunk_size=None)
    examples = prepare(sized)[1]
    median = sorted(token_lengths(toy_bert_folder, examples)[1])[3]
    assert median * 16 <= 1024  # sentences: 16 a unit, all six in one
    opened = open_run(sized, store)
    assert opened.info.chunk_size == 16 and opened.info.units_total == 1
    assert open_run(dataclasses.replace(sized, chunk_size=2), store).info.chunk_size == 16  # the same run


@pytest.mark.skipif(not os.environ.get("ATTRIBUTION_DATA_DIR"), reason="needs the shared datasets")
def test_a_run_of_movie_reviews_gets_units_of_a_few_reviews(tmp_path):
    """The bundled model on ERASER movie reviews (hundreds of tokens each, cut at 512): a run
    that names no unit size holds 1,024 tokens' worth of reviews at their median length, a few
    reviews, not 16."""
    from engine.runs.executor import prepare
    from engine.runs.worker import token_lengths

    spec = RunSpec("minilm-sst2", "movie-reviews", "validation", limit=12, methods=("random",), metrics=("deletion",))
    lengths, read = token_lengths("minilm-sst2", prepare(spec)[1])
    median = sorted(read)[6]
    assert 150 <= median <= 512 and max(lengths) > 512  # long reviews, some cut
    opened = open_run(spec, RunStore(tmp_path))
    assert opened.info.chunk_size == 1024 // median and 2 <= opened.info.chunk_size <= 5
    assert opened.info.units_total == -(-12 // opened.info.chunk_size)


def test_a_run_made_before_length_order_resumes_in_consecutive_units(toy_bert_folder, tmp_path):
    """A catalogue written before units were grouped by length has no ``row_orders`` table: its
    runs resume with units of consecutive rows, and their examples are found by row range. The
    rows equal those of a run in length order: how examples are grouped changes no number."""
    from engine.runs.executor import OpenedRun, prepare

    spec = toy_spec(toy_bert_folder)
    ordered_store = RunStore(tmp_path / "ordered")
    ordered = execute(open_run(spec, ordered_store), ordered_store, executor="serial")
    assert ordered_store.row_order(ordered.info.run_id) != list(range(6))  # the bundled examples' lengths differ

    store = RunStore(tmp_path / "old")
    new, examples = prepare(spec)
    new.row_order = None
    info, _ = store.create_or_resume(new)
    with store._connect() as con:
        con.execute("DROP TABLE row_orders")
    assert RunStore(tmp_path / "old", read_only=True).row_order(info.run_id) is None  # no table, no order
    outcome = execute(OpenedRun(spec, info, examples, True), store, executor="serial")
    assert outcome.info.status == "done" and store.row_order(info.run_id) is None
    assert list(store.units(info.run_id)["first_row"]) == [0, 2, 4]
    assert [store.example(info.run_id, i)[0].words for i in range(6)] == [e.words for e in examples]
    assert_close(comparable(store.read_table(info.run_id)), comparable(ordered_store.read_table(info.run_id)))


def test_show_prints_what_evaluate_prints_for_the_same_slice(toy_bert_folder, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "results"))
    common = ["--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "5"]
    common += ["--methods", ",".join(METHODS), "--metrics", ",".join(METRICS), "--seed", "2"]
    common += ["--param", "deletion.fraction=0.5", "--per-example", "--json", "--quiet"]
    assert main(["evaluate", *common]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["run", *common, "--executor", "serial", "--chunk-size", "2"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before  # run's own handler is gone once it returns
    ran = json.loads(capsys.readouterr().out)
    assert main(["show", ran["run"]["run_id"], "--per-example", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    for payload in (ran, shown):
        for key in ("runtime_s", "explain_s", "metrics_s"):
            del payload[key]
        del payload["run"]
    for key in ("runtime_s", "explain_s", "metrics_s"):
        del evaluated[key]
    assert shown == ran
    # evaluate explains the five examples as one group, the run two at a time (--chunk-size 2):
    # other scorer batches, so equal to float rounding.
    assert_close(ran, evaluated)
    assert set(evaluated) >= {"results", "examples", "human_ceiling", "best_threshold", "forward_passes"}

    assert main(["runs", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in listed] == ["done"] and listed[0]["rows_done"] == 5
    assert main(["show", "run-000000000000"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: no run 'run-000000000000' in ")


WRITER = """
import sys, time
import pyarrow as pa
from engine.runs.records import NewRun, UnitStats
from engine.runs.store import RunStore
store = RunStore(sys.argv[1])
new = NewRun({"k": 1}, "test", "m", "f", "d", "s", {}, ["x"], ["y"], {}, {}, None, "predicted", ["a"], 3, 60)
info, _ = store.create_or_resume(new)
print(info.run_id, flush=True)
for unit in range(20):
    positions = list(range(unit * 3, unit * 3 + 3))
    table = pa.table({"position": positions, "value": [float(p) for p in positions]})
    store.commit_unit(info.run_id, UnitStats(unit, unit * 3, 3, 1, 0.0, 0.0), table, 0.1 * unit)
    time.sleep(0.02)
store.finish(info.run_id, "done", 2.0)
"""

READER = """
import sys, time
from engine.runs.store import RunStore
store = RunStore(sys.argv[1], read_only=True, timeout_s=60)
run_id, seen, reads = sys.argv[2], -1, 0
while True:
    info = store.find(run_id)
    if info is None:
        time.sleep(0.01)
        continue
    positions = store.read_table(run_id).column("position").to_pylist() if info.rows_done else []
    assert sorted(positions) == list(range(len(positions))), positions  # whole units, no gap, no duplicate
    assert len(positions) % 3 == 0 and len(positions) >= info.rows_done >= seen, (len(positions), info.rows_done)
    seen, reads = info.rows_done, reads + 1
    if info.status == "done":
        break
print(reads, seen)
"""


def test_two_readers_in_other_processes_while_a_writer_writes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    root = str(tmp_path / "results")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, root], stdout=subprocess.PIPE, text=True, env=env)
    run_id = writer.stdout.readline().strip()
    readers = [
        subprocess.Popen([sys.executable, "-c", READER, root, run_id], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    assert writer.wait(timeout=120) == 0
    for reader in readers:
        out, _ = reader.communicate(timeout=120)
        assert reader.returncode == 0
        reads, seen = map(int, out.split())
        assert seen == 60 and reads >= 2
    assert RunStore(root, read_only=True).get(run_id).units_done == 20


@pytest.mark.slow  # a subprocess that loads torch: 30 s on a quiet machine, 156 s on a busy one
def test_a_run_killed_with_sigkill_resumes_without_loss_or_duplicates(toy_bert_folder, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATTRIBUTION_RESULTS_DIR": str(tmp_path / "results")}
    rows = 40  # SST-2 dev: enough one-row units that the run is still going when 3 are committed
    methods = ("loo_empty", "integrated_gradients")
    spec = toy_spec(toy_bert_folder, dataset="sst2", split="dev", limit=rows, chunk_size=1, methods=methods)
    args = ["--model", toy_bert_folder, "--dataset", "sst2", "--split", "dev", "--limit", str(rows), "--seed", "3"]
    args += ["--methods", ",".join(spec.methods), "--metrics", ",".join(spec.metrics), "--chunk-size", "1"]
    command = [sys.executable, "-m", "cli", "run", *args, "--executor", "serial", "--quiet", "--json"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    store = RunStore(tmp_path / "results", read_only=True)
    run_id = kill_once_done(process, store.catalogue_path, "rows_done", 3, timeout_s=120)
    killed = store.get(run_id)
    assert killed.status == "running" and killed.writer_gone and 3 <= killed.rows_done < rows
    shown = subprocess.run(
        [sys.executable, "-m", "cli", "show", run_id], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert shown.stdout.startswith(f"{run_id}: killed,")  # it said running (`runs` said killed)
    assert f"{run_id} is killed: resume it with `python -m cli run --resume {run_id}`" in shown.stderr

    writer = RunStore(tmp_path / "results")
    resumed = execute(open_run(resume_spec(writer, run_id), writer, resume=run_id), writer, executor="serial")
    assert resumed.computed_units == rows - killed.units_done and resumed.info.status == "done"
    table = writer.read_table(run_id)
    assert sorted(table.column("position").to_pylist()) == list(range(rows))
    reference_store = RunStore(tmp_path / "reference")
    reference = execute(open_run(spec, reference_store), reference_store, executor="serial")
    assert comparable(table) == comparable(reference_store.read_table(reference.info.run_id))


@pytest.mark.slow  # a subprocess that loads torch
def test_a_run_sent_sigterm_is_stopped_not_failed(toy_bert_folder, tmp_path):
    """SIGTERM (``kill``, a service manager) ends a run as Ctrl-C does: marked ``stopped``,
    resumable, exit status 143. On Ray it was ``failed`` with the error "SystemExit: 15", and the
    serial executor died at once, leaving the run to be found ``killed``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATTRIBUTION_RESULTS_DIR": str(tmp_path / "results")}
    args = ["--model", toy_bert_folder, "--dataset", "sst2", "--split", "dev", "--limit", "40", "--chunk-size", "1"]
    args += ["--methods", "loo_empty,integrated_gradients", "--metrics", "comprehensiveness"]
    command = [sys.executable, "-m", "cli", "run", *args, "--executor", "serial", "--quiet", "--json"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    store = RunStore(tmp_path / "results", read_only=True)
    run_id = kill_once_done(process, store.catalogue_path, "rows_done", 3, timeout_s=120, signum=signal.SIGTERM)
    stopped = store.get(run_id)
    assert process.returncode == 143 and stopped.status == "stopped" and stopped.error in (None, "")
    assert 3 <= stopped.rows_done < 40
    assert f"{run_id} stopped after {stopped.rows_done} of 40 examples" in process.stderr.read().decode()


@pytest.mark.slow
def test_ray_and_serial_executors_give_identical_rows(toy_bert_folder, tmp_path):
    spec = toy_spec(toy_bert_folder, limit=6, chunk_size=2)
    serial_store, ray_store = RunStore(tmp_path / "serial"), RunStore(tmp_path / "ray")
    serial = execute(open_run(spec, serial_store), serial_store, executor="serial")
    on_ray = execute(open_run(spec, ray_store), ray_store, executor="ray", actors=2)
    assert on_ray.executor["actors"] == 2 and on_ray.executor["gpus"] == 0
    assert on_ray.info.run_id == serial.info.run_id and on_ray.info.executor == "ray"
    # Ray's actors run one torch thread each and the serial executor the process's threads, so
    # reductions may sum in another order: equal to float32 rounding, everything else identical.
    assert_close(
        comparable(ray_store.read_table(on_ray.info.run_id)), comparable(serial_store.read_table(serial.info.run_id))
    )
    assert on_ray.info.forward_passes == serial.info.forward_passes


def test_row_columns_follow_the_documented_schema():
    schema = run_rows.schema(["m"], ["k"])
    assert schema.names == [
        "position", "id", "words", "segment_ids", "label", "target", "probabilities", "rationale", "rationales",
        "dropped_words", "score/m", "attribution/m", "error/m", "value/m/k", "curve/m/k", "extras/m/k",
    ]  # fmt: skip


def test_a_benchmark_model_runs_in_the_store(tmp_path):
    """``cli run --model random:minilm`` stopped at the model's fingerprint ("not a bundled model
    ... Repo id must use alphanumeric chars") though ``evaluate`` ran the same model: a benchmark
    model has no weight files. Its fingerprint is now its config, seed and vocabulary (one per
    size, the same on every call), and the stored run holds what ``evaluate_slice`` gives."""
    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.evaluate import evaluate_slice, metric_params
    from engine.runs.model_identity import label_names

    minilm = model_fingerprint("random:minilm")
    assert minilm == model_fingerprint("random:minilm") != model_fingerprint("random:bert-base")
    assert label_names("random:bert-base") == ("negative", "positive")
    store = RunStore(tmp_path)
    spec = toy_spec("random:minilm", limit=2, methods=("saliency", "loo_empty"), metrics=("deletion",))
    outcome = execute(open_run(spec, store), store, executor="serial")
    assert (outcome.info.status, outcome.info.rows_done, outcome.info.model_fingerprint) == ("done", 2, minilm)
    examples = load_examples("examples", "sst2", limit=2)
    direct = evaluate_slice(
        Classifier(load_classifier("random:minilm")), examples, ["saliency", "loo_empty"],
        metric_params(["deletion"]), seed=3,
    )  # fmt: skip
    stored = store.rows(outcome.info.run_id)
    for position, result in enumerate(direct.results):
        for method in ("saliency", "loo_empty"):
            assert stored[f"value/{method}/deletion"][position] == pytest.approx(
                result.metrics[method]["deletion"].value, abs=1e-6
            )


def test_a_run_keeps_its_key_across_the_rename_of_a_setting():
    """A run stored before ``paper000`` became ``pham2022`` resumes under its id: the key hashes
    renamed settings under their first names, as the key was computed when the run was stored."""
    import hashlib

    from engine.runs.records import run_key

    def old_key(fields: dict) -> str:  # the key as computed before the rename
        return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    stored = {"kind": "evaluate", "params": {"deletion": {"convention": "paper000", "fraction": 0.2}}}
    renamed = {"kind": "evaluate", "params": {"deletion": {"convention": "pham2022", "fraction": 0.2}}}
    assert run_key(renamed) == run_key(stored) == old_key(stored)
    job = {"kind": "roar", "job": {"rounding": "madsen2022", "levels": ["10%"], "model": "pham2022"}}
    assert run_key(job) == old_key(
        {"kind": "roar", "job": {"rounding": "paper001", "levels": ["10%"], "model": "pham2022"}}
    )
    assert run_key({"kind": "evaluate", "params": {}}) == old_key({"kind": "evaluate", "params": {}})
