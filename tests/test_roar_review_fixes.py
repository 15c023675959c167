"""Review fixes of the ROAR part: levels that mix token counts with 100% refused up front, the
classifier's own mask token, the Ray executor explaining each (method, seed) once, scores of a cut
sentence pair mapped per segment, one job whatever the place of ``random``, the masked-LM fills the
estimate counts, and the page and command line showing what they read (a lost data file, a job on
a model, removed words escaped for Markdown, the t-tests)."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.roar.job_data import JobData
from engine.roar.recipe import Recipe
from engine.roar.report import command_of
from experiments.roar.job import RoarJob, Unit
from experiments.roar.removal import FULL, Level, removed_views
from experiments.roar.scores import SHARED

RECIPE = Recipe("sst2", "train", "dev", 1e-3, 4, 64, None)


def job(**changes) -> RoarJob:
    settings = {"methods": ("loo_empty",), "task": "sst2", "levels": (Level(10), Level(20)), "seeds": 1}
    return RoarJob(**(settings | {"train_size": 10, "eval_size": 5, "train_steps": 2} | changes))


def test_token_levels_that_end_at_100_percent_are_refused_when_the_job_is_made():
    """``--levels 1t,2t,100%`` ran every unit and then failed in the summary ("levels must increase")."""
    with pytest.raises(ValueError, match=re.escape("token levels cannot end at 100% (a share, not a count)")):
        job(levels=(Level(1, "tokens"), Level(2, "tokens"), Level(100)))
    assert job(levels=(Level(0), Level(1, "tokens"), Level(2, "tokens"))).middle_levels[-1] == Level(2, "tokens")
    assert job(levels=(Level(10), Level(100))).curve_levels == (Level(0), Level(10), Level(100))


def test_the_mask_removal_writes_the_classifiers_own_mask_token(tmp_path):
    """Madsen et al. 2022 mask with the classifier's token: RoBERTa's is ``<mask>``, not ``[MASK]``."""
    from engine.roar.unit import _views
    from tests.toy import toy_tokenizer

    tokenizer = toy_tokenizer()
    tokenizer.mask_token = "<mask>"
    tokenizer.save_pretrained(tmp_path / "encoder")
    from core.types import Example

    examples = [Example((("the", "movie", "was", "great"),), label=1, id="x")]
    data = JobData(job(removal="mask"), [], examples, {"base_model": str(tmp_path / "encoder")}, tmp_path, RECIPE)
    [view] = _views(data, [np.array([False, False, False, True])], "eval")
    assert view.shown[3] == "<mask>" and view.example.words == ("the", "movie", "was", "<mask>")


def test_the_ray_executor_waits_for_the_step0_scores_of_plain_roar(tmp_path):
    """Every plain level depends on the seed's 0% model only; without waiting, each level of a
    method would explain the whole data again once that model was committed."""
    from engine.roar.run import ready
    from engine.roar.unit import scores_path

    plain = job(seeds=1)
    index = {unit: i for i, unit in enumerate(plain.units)}
    zero, full = index[Unit(SHARED, Level(0), 0)], index[Unit(SHARED, FULL, 0)]
    first, second = index[Unit("loo_empty", Level(10), 0)], index[Unit("loo_empty", Level(20), 0)]
    random_second = index[Unit("random", Level(20), 0)]
    assert not ready(plain, first, {full}, tmp_path)  # its 0% model is not committed yet
    assert ready(plain, first, {zero, full}, tmp_path)
    assert not ready(plain, second, {zero, full}, tmp_path)  # nobody has kept the scores yet
    for split in ("train", "eval"):  # the first level explained and kept them (it still retrains)
        path = scores_path(tmp_path, "loo_empty", 0, split)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[]")
    assert ready(plain, second, {zero, full}, tmp_path)
    assert not ready(plain, random_second, {zero, full}, tmp_path)
    assert ready(plain, random_second, {zero, full, index[Unit("random", Level(10), 0)]}, tmp_path)
    recursive = job(recursive=True)
    rindex = {unit: i for i, unit in enumerate(recursive.units)}
    assert not ready(recursive, rindex[Unit("loo_empty", Level(20), 0)], {zero, full}, tmp_path)
    assert ready(recursive, rindex[Unit("loo_empty", Level(20), 0)], {zero, full, first}, tmp_path)


def test_scores_of_a_cut_pair_are_padded_in_each_segment():
    from engine.roar.unit import _pad_scores

    padded = _pad_scores(np.array([4.0, 3.0, 9.0, 8.0]), [4, 2], [2, 2], "signed")
    assert padded.tolist() == [4.0, 3.0, 2.0, 2.0, 9.0, 8.0]
    assert _pad_scores(np.array([1.0, -2.0]), [3], [2], "absolute").tolist() == [1.0, -2.0, 0.0]


def test_a_pair_whose_first_segment_is_cut_keeps_its_second_segments_scores(tmp_path):
    """The classifier reads ``seg0[:k] + seg1``: the scores of seg1's words are seg1's, not the
    padding appended at the end of the whole vector."""
    from core.classifier import Classifier
    from core.types import Example
    from engine.roar.unit import explain_views
    from tests.toy import toy_linear

    clf = Classifier(toy_linear())
    first = ("the", "movie", "was", "bad") + ("the",) * 70
    example = Example((first, ("it", "was", "great")), label=1, id="pair")
    assert clf.fit_example(example)[1] > 0 and len(clf.fit_example(example)[0].segments[1]) == 3
    data = JobData(job(scope="all"), [], [example], {}, tmp_path, RECIPE)
    none = [np.zeros(len(example.words), dtype=bool)]
    [scores], count = explain_views(data, clf, removed_views([example], none, "delete"), FULL, none, "loo_empty", 0)
    great = len(first) + 2
    assert count == 1 and scores[great] == scores.max() > 0  # "great" for the positive class
    assert scores[3] < 0  # "bad", read in the cut first segment


def test_random_first_or_last_is_the_same_job_and_command():
    """``methods=("random", "loo_empty")`` printed ``--methods loo_empty``, another job's command."""
    first, last = job(methods=("random", "loo_empty")), job(methods=("loo_empty",))
    assert first == last and first.methods == ("loo_empty", "random")
    assert command_of(first) == command_of(last)
    for bundled in sorted((Path(__file__).resolve().parents[1] / "assets" / "roar").glob("*.json")):
        stored = json.loads(bundled.read_text())["job"]
        assert list(RoarJob.from_json(stored).methods) == stored["methods"]  # the bundled jobs' ids hold


def test_the_estimate_counts_the_fills_the_units_make():
    """Per seed the shared 100% unit fills every example; a recursive level past the first also
    fills the previous level's views it explains."""
    plain = job(removal="mlm", levels=(Level(10), Level(20), Level(30)), seeds=2)
    assert plain.estimate(0, 0, n_train=10, n_eval=5).fills == 15 * 2 * (2 * 3 + 1)
    recursive = job(removal="mlm", levels=(Level(10), Level(20), Level(30)), seeds=2, recursive=True)
    assert recursive.estimate(0, 0, n_train=10, n_eval=5).fills == 15 * 2 * (2 * 3 + 1 + 2 * 2)


def test_removed_words_are_escaped_for_markdown():
    from ui.roar import removal_html

    shown = removal_html(["$x$", "*a*", ":smile:", "a<b", "it's"], {"1": "", "2": "_y_"})
    assert r"\$x\$" in shown and r"\*a\*" in shown and r"\_y\_" in shown and r"a\<b" in shown
    assert ":smile:" not in shown and "it's" in shown


def test_the_command_line_prints_the_t_tests(capsys):
    from cli.roar import print_summary
    from engine.roar.report import summarize
    from tests.test_roar_reading import LEVELS, rows

    result = {"run_id": "run-x", "status": "done", "units_done": 1, "units_total": 1, "wall_s": 1.0,
              "command": "python -m cli roar", **summarize(rows(), LEVELS, (Level(50),))}  # fmt: skip
    print_summary(result)
    out = capsys.readouterr().out
    test = next(t for t in result["t_tests"] if {t["a"], t["b"]} == {"loo", "random"})
    assert f"t-test {test['a']} vs {test['b']} at 50%: t = {test['t']:.2f}, p = {test['p']:.4f}" in out
    assert re.search(r"random  0%: 0\.900 \[0\.900, 0\.900\]  50%: 0\.700", out)  # metrics.base.interval_text


def open_page(monkeypatch, tmp_path, report=None, error=None):
    from types import SimpleNamespace

    from services import roar
    from tests.test_roar_page import open_page as opened

    info = SimpleNamespace(
        run_id="run-job", status="done", shown_status="done", units_done=4, units_total=4, fraction=1.0,
        writer_gone=False, being_written=False, rows_done=4, rows_total=4, wall_s=1.0,
    )  # fmt: skip

    def stored_report(run_id):
        if error is not None:
            raise error
        return {**report, "run_id": run_id}

    monkeypatch.setattr(roar, "stored_jobs", lambda uploads=(): [info])
    monkeypatch.setattr(roar, "info", lambda run_id: info)
    monkeypatch.setattr(roar, "stored_report", stored_report)
    at = opened(monkeypatch, tmp_path)
    at.selectbox(key="roar.source").select("stored:run-job").run()
    return at


def test_a_stored_job_whose_data_file_is_gone_shows_an_error_not_a_traceback(monkeypatch, tmp_path):
    gone = FileNotFoundError("'file:/data/films.csv': no file /data/films.csv")
    at = open_page(monkeypatch, tmp_path, error=gone)
    assert not at.exception, at.exception
    assert any("cannot be read" in e.value and "no file" in e.value and "films" in e.value for e in at.error)


def test_a_job_on_a_model_and_dataset_names_them_in_its_caption(monkeypatch, tmp_path):
    from engine.roar.report import load_report
    from services.roar import BUNDLED_DIR

    report = load_report(min(BUNDLED_DIR.glob("*.json")))
    report = {**report, "job": {**report["job"], "task": None, "model": "my_model", "dataset": "hub:imdb"}}
    at = open_page(monkeypatch, tmp_path, report=report)
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "task `None`" not in text and r"model my\_model on hub:" in text


def test_a_job_started_from_the_app_runs_a_command_the_cli_accepts(started, monkeypatch, tmp_path):
    """The app's Start ran ``python -m cli roar roar --task ...``: the job's command already says
    ``roar`` and it was said again, so the background process stopped at once on a usage error."""
    from cli.main import build_parser
    from services import roar

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    settings = {"methods": ["loo_empty"], "levels": ["10%"], "seeds": 2, "task": "sst2"}
    run_id = roar.start_job({**settings, "train_size": 8, "eval_size": 8, "train_steps": 2})
    (process,) = started
    command = process.command
    assert command[:4] == [sys.executable, "-m", "cli", "roar"] and run_id.startswith("run-")
    args = build_parser().parse_args(command[3:])
    assert (args.command, args.task, args.methods, args.seeds, args.train_size) == ("roar", "sst2", "loo_empty", 2, 8)


def test_a_units_model_reads_at_most_the_recipes_length(tmp_path, monkeypatch):
    """Each model is retrained on the first ``max_length`` tokens (64 for SST-2); it was then
    explained and scored on up to 512, words it never saw in training."""
    import core.loaded
    from core.types import Example
    from tests.toy import toy_linear

    monkeypatch.setattr(core.loaded, "load_classifier", lambda name: toy_linear())
    data = JobData(job(), [], [], {}, tmp_path, dataclasses.replace(RECIPE, max_length=16))
    data.model_folder(0).mkdir(parents=True)
    (data.model_folder(0) / "adapter_config.json").write_text("{}")
    clf = data.classifier(0)
    assert toy_linear().max_length == 64 and clf.loaded.max_length == 16
    fitted, cut = clf.fit_example(Example((("good",) * 100,)))
    assert len(fitted.words) == 14 and cut == 86  # 16 tokens with [CLS] and [SEP]


def test_a_job_sent_sigterm_is_stopped_not_failed(tmp_path, monkeypatch, capsys):
    """SIGTERM killed a ROAR job with no word, its row left ``running`` for a dead writer; it now
    ends as Ctrl-C does (as ``cli run`` and ``cli import`` do): ``stopped``, exit 143, the handler
    that was there put back."""
    import signal

    import engine.roar.run
    from cli.main import main
    from engine.runs.store import RunStore

    def terminated(*args, **kwargs):
        signal.raise_signal(signal.SIGTERM)

    monkeypatch.setattr(engine.roar.run, "run_unit", terminated)
    before = signal.getsignal(signal.SIGTERM)
    argv = ["roar", "--task", "sst2", "--methods", "loo_empty", "--levels", "10", "--seeds", "2", "--train-size", "8"]
    argv += ["--eval-size", "8", "--train-steps", "2", "--no-estimate", "--quiet", "--results-dir", str(tmp_path)]
    assert main(argv) == 143
    assert signal.getsignal(signal.SIGTERM) is before
    (stopped,) = RunStore(tmp_path).infos()
    assert (stopped.status, stopped.units_done, stopped.error) == ("stopped", 0, None)
    assert f"{stopped.run_id} stopped after 0 of 8 units" in capsys.readouterr().err
    # resumed with settings of its own, which --resume ignores: it said nothing of them
    resume = ["roar", "--resume", stopped.run_id, "--seeds", "5", "--no-estimate", "--results-dir", str(tmp_path)]
    assert main([*resume, "--quiet"]) == 143
    assert "--resume uses the job's own settings: --seeds ignored" in capsys.readouterr().err
