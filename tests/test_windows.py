"""Sliding windows for long documents (engine/windows.py) on the toy models, with known answers."""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pytest

from cli.main import main
from core.classifier import Classifier
from core.types import Example
from engine.explain import explain_example
from engine.windows import Windows, plan, stitch
from tests.toy import PLANTED, WEIGHT

FILLER = ["the", "movie", "was", "and", "it", "is", "a", "plot", "."]


def long_example(n_words: int = 150) -> Example:
    """A text far longer than the toy models' 64 tokens, with planted words spread over it."""
    words = [FILLER[i % len(FILLER)] for i in range(n_words)]
    for position, word in ((3, "great"), (70, "awful"), (120, "good"), (148, "bad")):
        words[position] = word
    return Example(segments=(tuple(words),), id="long")


def contribution(word: str, target: int) -> float:
    """A word's share of the toy linear model's log2-odds of ``target``: with two classes the
    log-odds is the logit difference, which is additive over words, so it is the same in every
    window and leave-one-out (deletion, log2-odds) must equal it exactly."""
    row = np.asarray(PLANTED.get(word, [0.0] * 4)) @ np.asarray(WEIGHT)
    return float(row[target] - row[1 - target]) / math.log(2)


def test_windows_cover_the_document_and_each_fits(linear_clf: Classifier) -> None:
    example = long_example()
    assert linear_clf.fit_example(example)[1] > 80  # without windows most of it is dropped
    spans = plan(linear_clf, example, overlap=0.5)
    assert spans[0][0] == 0 and spans[-1][1] == len(example.words)
    for (start, end), (next_start, _) in itertools.pairwise(spans):
        assert start < next_start < end  # consecutive windows overlap
        assert next_start - start == int((end - start) * 0.5)
    for start, end in spans:
        part = Example(segments=(example.words[start:end],))
        assert linear_clf.fit_example(part)[1] == 0
        if end < len(example.words):  # as long as the model allows: one more word would not fit
            assert linear_clf.fit_example(Example(segments=(example.words[start : end + 1],)))[1] == 1


def test_windowed_leave_one_out_equals_each_words_contribution(linear_clf: Classifier) -> None:
    example = long_example()
    result = explain_example(linear_clf, example, ["loo_empty"], target=1, windows=Windows())
    assert result.dropped_words == 0 and len(result.windows) >= 3
    attribution = result.attributions["loo_empty"]
    assert attribution.words == example.words
    expected = [contribution(word, 1) for word in example.words]
    np.testing.assert_allclose(attribution.scores, expected, atol=1e-4)
    assert attribution.extras["windows"] == [list(span) for span in result.windows]
    # one pass per window for the prediction is not counted; each window costs its words + 1
    assert attribution.forward_passes == sum(end - start + 1 for start, end in result.windows)


def test_document_prediction_is_the_mean_of_the_windows(linear_clf: Classifier) -> None:
    example = long_example()
    result = explain_example(linear_clf, example, ["random"], windows=Windows())
    parts = [Example(segments=(example.words[s:e],)) for s, e in result.windows]
    probabilities = linear_clf.predict_proba([linear_clf.encode(p).variant for p in parts]).mean(axis=0)
    np.testing.assert_allclose(result.prediction.probabilities, probabilities, atol=1e-6)
    assert result.target == int(np.argmax(probabilities))


def test_stitch_rules_by_hand() -> None:
    spans = [(0, 4), (2, 6)]
    scores = [np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 20.0, 30.0, 40.0])]
    # central: word 2 has context 1 in both windows (the first keeps it), word 3 has 0 in the
    # first and 1 in the second
    np.testing.assert_allclose(stitch(scores, spans, 6, "central"), [1, 2, 3, 20, 30, 40])
    np.testing.assert_allclose(stitch(scores, spans, 6, "mean"), [1, 2, 6.5, 12, 30, 40])


def test_methods_over_the_whole_input_are_refused(linear_clf: Classifier) -> None:
    with pytest.raises(ValueError, match="lime cannot be explained in sliding windows"):
        explain_example(linear_clf, long_example(), ["lime"], windows=Windows())
    with pytest.raises(ValueError, match="overlap"):
        Windows(overlap=1.0)
    with pytest.raises(ValueError, match="stitch"):
        Windows(stitch="max")


def test_a_text_that_fits_or_a_pair_is_explained_as_before(linear_clf: Classifier, toy_example: Example) -> None:
    short = explain_example(linear_clf, toy_example, ["loo_empty"], windows=Windows())
    plain = explain_example(linear_clf, toy_example, ["loo_empty"])
    assert short.windows == ()
    np.testing.assert_array_equal(short.attributions["loo_empty"].scores, plain.attributions["loo_empty"].scores)
    pair = Example(segments=(long_example().words, ("the", "movie")))
    cut = explain_example(linear_clf, pair, ["random"], windows=Windows())
    assert cut.windows == () and cut.dropped_words > 0


def test_cli_explains_every_word_with_windows(model_dirs, capsys) -> None:
    text = " ".join(long_example().words)
    clf, _ = model_dirs
    base = ["explain", "--model", str(clf), "--text", text, "--methods", "loo_empty,saliency"]
    assert main([*base, "--windows", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["words"]) == 150 and payload["dropped_words"] == 0 and len(payload["windows"]) >= 3
    assert all(len(a["scores"]) == 150 for a in payload["attributions"].values())
    assert main(base) == 0
    coverage = capsys.readouterr().out.splitlines()[1]  # under the prediction's line
    assert coverage.startswith("explained the first ") and "of 150 words" in coverage


def test_heatmap_page_explains_a_long_text_in_windows() -> None:
    from tests.test_app_heatmaps import rows, run_app

    text = " ".join(["a", "dull", "film", "with", "a", "great", "cast", "."] * 90)  # 720 words
    state = {"sidebar.dataset": "free text", "sidebar.text": text}
    cut = run_app(state, methods="saliency,random")
    assert not cut.exception
    warning = " ".join(w.value for w in cut.warning)
    assert "the first" in warning and "of 720 words are explained" in warning
    assert [t.label for t in cut.toggle if "sliding windows" in t.label]
    whole = run_app({**state, "runs.windows": True}, methods="saliency,random,lime")
    assert not whole.exception
    assert any("All 720 words explained in" in i.value for i in whole.info)
    cells = rows(whole)
    assert set(cells) == {"saliency", "random"} and all(len(c) == 720 for c in cells.values())
    assert any("lime cannot be explained in sliding windows" in e.value for e in whole.error)


def test_an_estimate_in_windows_counts_every_window_and_no_refused_method(monkeypatch) -> None:
    """The page estimated the cut text only (its first window) and counted LIME, which windows
    refuse: in windows each method that takes them is now estimated once a window, LIME not at
    all."""
    from tests.test_app_heatmaps import rows, run_app

    monkeypatch.setattr("services.estimates.measured_rate", lambda model, example: 10.0)  # runs wait for a click
    text = " ".join(["a", "dull", "film", "with", "a", "great", "cast", "."] * 90)  # 720 words
    state = {"sidebar.dataset": "free text", "sidebar.text": text}
    cut = run_app(state, methods="loo_empty,lime")
    assert not cut.exception
    captions = " ".join(c.value for c in cut.caption)
    assert "Estimated time for **loo_empty**: about 51.1 s (at most 511 classifier forward passes)." in captions
    assert "Estimated time for **lime**: about 100.0 s" in captions
    assert "Press **Run the chosen methods (≈ 2 min 31 s)**" in " ".join(i.value for i in cut.info)
    whole = run_app({**state, "runs.windows": True}, methods="loo_empty,lime")
    assert not whole.exception and not rows(whole)  # waits for its click
    captions = " ".join(c.value for c in whole.caption)
    found = re.search(
        r"\*\*loo_empty\*\*: about ([0-9.]+) s \(at most 511 classifier forward passes in each of (\d+) windows\)",
        captions,
    )
    assert found and float(found[1]) == pytest.approx(51.1 * int(found[2]), abs=0.1) and int(found[2]) >= 2
    assert "**lime**" not in captions
