"""Plausibility metrics against hand computations, ERASER's scoring rules and the real datasets."""

from __future__ import annotations

import itertools
import math
import os
import re

import numpy as np
import pytest

import metrics
from core.params import params_from
from core.types import Attribution, Example
from metrics import plausibility as pl
from tests.page_text import one_layout

DATA_DIR = "/work/shared/data"


def make_example(mask, segments=None, rationales=None, example_id="t/0") -> Example:
    """Words w0, w1, ... (or ``segments``); ``mask`` is the majority and, unless given, the only annotator."""
    segments = segments or (tuple(f"w{i}" for i in range(len(mask))),)
    rationales = rationales if rationales is not None else ((tuple(mask),) if mask is not None else ())
    return Example(
        segments=segments, rationales=rationales, rationale=tuple(mask) if mask is not None else None, id=example_id
    )


def attribution_for(example: Example, scores, method: str = "m") -> Attribution:
    return Attribution(method, example.id, 0, example.words, np.asarray(scores, dtype=np.float32))


def score(key: str, example: Example, scores, **params):
    spec = metrics.get(key)
    return spec.compute(None, example, attribution_for(example, scores), params_from(spec.params_cls, params))


MASK = (0, 1, 1, 0, 0, 1, 0, 0)


# --------------------------------------------------------------------------- registry


def test_registered_with_the_expected_keys_and_flags():
    keys = ("iou", "precision", "recall", "f1", "token_f1", "iou_f1", "auprc", "gt_overlap", "mean_rank", "coverage")
    keys += ("contiguity",)
    for key in keys:
        spec = metrics.get(key)
        assert spec.family == "plausibility" and spec.needs_rationale and not spec.needs_classifier
    assert metrics.get("mean_rank").higher_is_better is False


# --------------------------------------------------------------------------- perfect and reversed maps


@pytest.mark.parametrize("key", ["iou", "precision", "recall", "f1", "token_f1", "iou_f1", "auprc", "gt_overlap"])
def test_scores_equal_to_the_human_mask_score_one(key):
    assert score(key, make_example(MASK), MASK).value == pytest.approx(1.0)


@pytest.mark.parametrize("threshold", [0.05, 0.5, 0.95])
@pytest.mark.parametrize("key", ["iou", "precision", "recall", "f1"])
def test_reversed_map_scores_zero_at_every_threshold(key, threshold):
    reversed_scores = [1 - m for m in MASK]
    assert score(key, make_example(MASK), reversed_scores, threshold=threshold).value == 0.0


def test_reversed_map_gets_the_minimum_of_the_ranking_metrics():
    example = make_example(MASK)
    reversed_scores = [2.0 - 0.1 * i if m == 0 else 0.1 * i for i, m in enumerate(MASK)]  # every human word last
    assert score("token_f1", example, reversed_scores).value == 0.0
    assert score("iou_f1", example, reversed_scores).value == 0.0
    assert score("gt_overlap", example, reversed_scores).value == 0.0
    assert score("mean_rank", example, reversed_scores).value == 1.0
    worst = score("auprc", example, reversed_scores)
    # every placement of the three human words in a ranking of eight: none scores lower
    n, k = len(MASK), sum(MASK)
    placements = []
    for ranks in itertools.combinations(range(n), k):
        truth = np.zeros(n, dtype=bool)
        truth[list(ranks)] = True
        placements.append(pl.auprc(np.arange(n, 0, -1, dtype=float), truth))
    assert worst.value == pytest.approx(min(p["auprc"] for p in placements))
    assert worst.extras["average_precision"] == pytest.approx(min(p["average_precision"] for p in placements))
    assert sum(p["auprc"] == pytest.approx(worst.value) for p in placements) == 1  # and only it


def test_mean_rank_of_a_perfect_map_is_the_human_share():
    assert score("mean_rank", make_example(MASK), MASK).value == pytest.approx(3 / 8)


# --------------------------------------------------------------------------- hand computations


def test_binarize_zeroes_negatives_and_scales_by_the_maximum():
    np.testing.assert_array_equal(pl.binarize(np.array([-3.0, 0.4, 2.0, 1.2]), 0.5), [False, False, True, True])
    np.testing.assert_array_equal(pl.binarize(np.array([-3.0, -1.0]), 0.05), [False, False])


def test_threshold_metrics_by_hand():
    # scaled scores 0.2, 1, 0.6, 0.4, 0, 0.8, 0, 0 -> tau 0.5 selects words 1, 2, 5 (exactly the mask)
    # tau 0.3 adds word 3: IoU 3/4, precision 3/4, recall 1, F1 6/7, coverage 4/8
    example = make_example(MASK)
    scores = [0.5, 2.5, 1.5, 1.0, -2.0, 2.0, 0.0, -0.1]
    assert score("iou", example, scores, threshold=0.5).value == pytest.approx(1.0)
    result = score("iou", example, scores, threshold=0.3)
    assert result.value == pytest.approx(0.75)
    assert result.extras["precision"] == pytest.approx(0.75)
    assert score("recall", example, scores, threshold=0.3).value == pytest.approx(1.0)
    assert score("f1", example, scores, threshold=0.3).value == pytest.approx(6 / 7)
    coverage = score("coverage", example, scores, threshold=0.3)
    assert coverage.value == pytest.approx(0.5)
    assert coverage.extras["human_coverage"] == pytest.approx(3 / 8)


def test_token_f1_top_k_by_hand():
    example = make_example(MASK)
    scores = [0.9, 0.8, 0.1, 0.0, 0.0, 0.7, 0.0, 0.0]
    # k = 3 (human length): words 0, 1, 5 -> 2 of 3 right: P = R = F1 = 2/3
    assert score("token_f1", example, scores).value == pytest.approx(2 / 3)
    # k = 2: words 0, 1 -> P 1/2, R 1/3, F1 0.4
    assert score("token_f1", example, scores, k=2).value == pytest.approx(0.4)
    assert score("token_f1", example, scores, selection="threshold", threshold=0.9).value == 0.0  # word 0 only


def test_auprc_and_average_precision_by_hand():
    # ranking: word 0 (human), word 1 (not), word 2 (human). PR points (R, P): (0, 1), (.5, 1), (.5, .5), (1, 2/3)
    values = pl.auprc(np.array([0.9, 0.8, 0.1]), np.array([True, False, True]))
    assert values["auprc"] == pytest.approx(0.5 + 0.5 * (0.5 + 2 / 3) / 2)
    assert values["average_precision"] == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)


def test_gt_overlap_and_mean_rank_by_hand():
    example = make_example((1, 0, 1, 0))
    result = score("mean_rank", example, [0.1, 0.9, 0.5, 0.2])
    # ranking 1, 2, 3, 0: the human word 0 comes last
    assert result.value == 1.0 and result.extras["rank"] == 4
    overlap = score("gt_overlap", example, [0.1, 0.9, 0.5, 0.2])
    assert overlap.value == 0.5 and overlap.extras["exact_match"] == 0.0


def test_best_threshold_matches_a_hand_computation():
    # A: human {0, 1}; tau <= .2 selects {0,1,2} (IoU 2/3), .25-.3 {0,1} (1), >= .35 {0} (1/2)
    # B: human {1, 2}; tau <= .45 selects {0,1,2} (2/3), .5 {0,1} (1/3), >= .55 {1} (1/2)
    # mean IoU: .667 up to .2, .833 at .25 and .3, .583 at .35-.45, .417 at .5, .5 above -> best .25
    a = make_example((1, 1, 0, 0), example_id="a")
    b = make_example((0, 1, 1, 0), example_id="b")
    empty = make_example(None, segments=(("x", "y"),), rationales=(), example_id="c")
    pairs = [
        (a, attribution_for(a, [1.0, 0.32, 0.22, 0.0])),
        (b, attribution_for(b, [0.52, 1.0, 0.47, -1.0])),
        (empty, attribution_for(empty, [1.0, 0.0])),
    ]
    search = pl.best_threshold(pairs)
    assert search.best == 0.25
    assert search.means[0.25] == pytest.approx(5 / 6) and search.means[0.5] == pytest.approx(5 / 12)
    assert (search.n, search.skipped) == (2, 1)
    # F1: .8 up to .2, .9 at .25-.3, .733 at .35-.45, .583 at .5, .667 above
    assert pl.best_threshold(pairs, objective="f1").best == 0.25
    assert pl.best_threshold(pairs, objective="recall").best == 0.05
    with pytest.raises(ValueError, match="objective"):
        pl.best_threshold(pairs, objective="auprc")
    with pytest.raises(ValueError, match="non-empty"):
        pl.best_threshold(pairs[2:])


# --------------------------------------------------------------------------- ERASER IOU-F1


@pytest.mark.parametrize(
    ("predicted", "human", "f1"),
    [
        ([(3, 5)], [(2, 5)], 1.0),  # IoU 2/3
        ([(2, 4)], [(2, 6)], 1.0),  # IoU exactly 0.5 counts
        ([(3, 4)], [(2, 5)], 0.0),  # IoU 1/3
        ([(0, 4)], [(2, 5)], 0.0),  # partial overlap: 2 / 5
        ([(0, 2), (6, 8), (10, 12)], [(0, 2), (5, 9)], 0.8),  # 2 hits: P 2/3, R 1
        ([(0, 3)], [(0, 1), (2, 3)], 0.0),  # one long span over two short ones: IoU 1/3 each
        ([], [(0, 2)], 0.0),
    ],
)
def test_span_f1_hand_cases(predicted, human, f1):
    assert pl.span_f1(predicted, human)["f1"] == pytest.approx(f1)


def test_iou_f1_metric_builds_spans_from_top_k_and_segments():
    example = make_example((0, 0, 1, 1, 1, 0, 0, 0, 0, 0))
    # top-3 = words 3, 4, 5: span (3, 6) against (2, 5): IoU 2/4 = 0.5 -> match
    result = score("iou_f1", example, [0, 0, 0, 0.9, 0.8, 0.7, 0, 0, 0, 0])
    assert result.value == 1.0 and result.extras["predicted_spans"] == [(3, 6)]
    # top-3 = words 4, 5, 6: span (4, 7): IoU 1/5 -> no match
    assert score("iou_f1", example, [0, 0, 0, 0, 0.8, 0.7, 0.9, 0, 0, 0]).value == 0.0
    # a pair: the run of selected words 1-3 crosses the premise/hypothesis border -> two spans
    pair = make_example((0, 1, 1, 0, 0), segments=(("a", "b", "c"), ("d", "e")))
    result = score("iou_f1", pair, [0, 0.9, 0.8, 0.7, 0], selection="threshold", threshold=0.5)
    assert result.extras["predicted_spans"] == [(1, 3), (3, 4)]
    assert result.value == pytest.approx(2 * 0.5 * 1 / 1.5)  # P 1/2, R 1


def test_contiguity_counts_words_per_span_at_the_human_size():
    # MASK has 3 human words in 2 spans (w1 w2 | w5); the top-3 words w3 w4 w5 form one span
    phrase = score("contiguity", make_example(MASK), [0, 0.1, 0.2, 0.9, 0.8, 0.7, 0, 0])
    assert phrase.value == pytest.approx(3.0) and phrase.extras["spans"] == 1
    assert phrase.extras["share_in_phrases"] == pytest.approx(1.0)
    assert phrase.extras["human_words_per_span"] == pytest.approx(1.5)
    scattered = score("contiguity", make_example(MASK), [0.9, 0, 0.8, 0, 0.7, 0, 0, 0])
    assert scattered.value == pytest.approx(1.0) and scattered.extras["share_in_phrases"] == 0.0


# --------------------------------------------------------------------------- empty rationales and annotators


@pytest.mark.parametrize("key", pl.KEYS)
def test_empty_rationales_give_nan_with_a_reason(key):
    none = make_example(None, segments=(("a", "b", "c"),), rationales=())
    zeros = make_example((0, 0, 0))
    for example, reason in ((none, "no human rationale"), (zeros, "empty rationale")):
        result = score(key, example, [0.1, 0.5, 0.2])
        assert math.isnan(result.value) and result.extras["skipped"] == reason
    missing = score(key, zeros, [0.1, 0.5, 0.2], annotator="3")
    assert "annotator 3 gave no rationale" in missing.extras["skipped"]


def test_summaries_count_skipped_examples():
    example, empty = make_example(MASK), make_example((0,) * len(MASK))
    results = [score("iou", e, MASK) for e in (example, empty, example)]
    summary = pl.summarize(results)
    assert (summary.mean, summary.n, summary.skipped) == (1.0, 2, 1)


def test_annotator_modes():
    rationales = ((1, 1, 0, 0), (0, 1, 1, 0), (0, 1, 0, 0))
    example = make_example((0, 1, 0, 0), rationales=rationales)
    scores = rationales[0]
    assert score("iou", example, scores, annotator="0").value == 1.0
    assert score("iou", example, scores, annotator="1").value == pytest.approx(1 / 3)
    assert score("iou", example, scores).value == pytest.approx(1 / 2)  # majority {1}
    assert score("iou", example, scores, annotator="any").value == pytest.approx(2 / 3)  # union {0, 1, 2}
    with pytest.raises(ValueError, match="annotator"):
        score("iou", example, scores, annotator="first")


def test_wrong_length_or_non_finite_scores_raise():
    example = make_example(MASK)
    with pytest.raises(ValueError, match="7 scores for 8 words"):
        metrics.get("iou").compute(
            None, example, attribution_for(make_example(MASK[:7]), MASK[:7]), pl.ThresholdParams()
        )
    with pytest.raises(ValueError, match="non-finite"):
        score("auprc", example, [np.nan] + list(MASK[1:]))


def test_human_ceiling_by_hand():
    rationales = ((1, 1, 0, 0), (0, 1, 1, 0), (0, 1, 0, 0))
    example = make_example((0, 1, 0, 0), rationales=rationales)
    # IoU: (0,1) = (1,0) = 1/3, (0,2) = (2,0) = 1/2, (1,2) = (2,1) = 1/2
    result = pl.human_ceiling(example, "iou")
    assert result.value == pytest.approx((2 / 3 + 1 + 1) / 6)
    assert result.extras["per_annotator"]["0"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert result.extras["pairs"] == 6
    # precision of a against b is recall of b against a, so over all ordered pairs they agree
    assert pl.human_ceiling(example, "precision").value == pytest.approx(pl.human_ceiling(example, "recall").value)
    # token F1 uses the whole mask, not its top-k: equal to the set F1
    assert pl.human_ceiling(example, "token_f1").value == pytest.approx(pl.human_ceiling(example, "f1").value)
    single = pl.human_ceiling(make_example(MASK), "iou")
    assert math.isnan(single.value) and "skipped" in single.extras
    with pytest.raises(ValueError, match="mean_rank"):
        pl.human_ceiling(example, "mean_rank")


def test_a_readers_agreement_with_the_annotators_by_hand():
    rationales = ((1, 1, 0, 0), (0, 1, 1, 0), (0, 0, 0, 0))
    example = make_example((0, 1, 0, 0), rationales=rationales)
    reader = (0, 1, 1, 1)
    # IoU with annotator 0: {1} / {0, 1, 2, 3} = 1/4; with 1: {1, 2} / {1, 2, 3} = 2/3; 2 marked nothing
    result = pl.reader_agreement(example, reader, "iou")
    assert result.value == pytest.approx((1 / 4 + 2 / 3) / 2)
    assert result.extras["per_annotator"] == {"0": pytest.approx(1 / 4), "1": pytest.approx(2 / 3)}
    # token F1 takes the whole mask (not its top k, k the annotator's count): precision 1/3, recall 1/2
    assert pl.reader_agreement(example, reader, "token_f1").extras["per_annotator"]["0"] == pytest.approx(0.4)
    # a reader who marks what annotator 0 marked agrees with the others as annotator 0 does
    ceiling = pl.human_ceiling(example, "f1").extras["per_annotator"]["0"]
    assert pl.reader_agreement(example, rationales[0], "f1").value == pytest.approx((1 + ceiling) / 2)
    nobody = pl.reader_agreement(make_example((0, 0, 0, 0), rationales=((0, 0, 0, 0),)), reader, "iou")
    assert math.isnan(nobody.value) and nobody.extras["skipped"] == "no annotator marked a word"
    with pytest.raises(ValueError, match="mean_rank"):
        pl.reader_agreement(example, reader, "mean_rank")


# --------------------------------------------------------------------------- independent ERASER scoring on real data


def eraser_token_f1(truth_tokens: set[int], pred_tokens: set[int]) -> float:
    """``score_hard_rationale_predictions`` of the ERASER benchmark for one instance."""
    p = len(truth_tokens & pred_tokens) / len(pred_tokens) if pred_tokens else 0
    r = len(truth_tokens & pred_tokens) / len(truth_tokens) if truth_tokens else 0
    return 0 if p == 0 or r == 0 else 2 * p * r / (p + r)


def eraser_iou_f1(truth: list[tuple[int, int]], pred: list[tuple[int, int]]) -> float:
    """``partial_match_score`` of the ERASER benchmark at threshold 0.5 for one instance, with its
    token-range sets."""
    hits = 0
    for ps, pe in pred:
        best = 0.0
        for ts, te in truth:
            num = len(set(range(ps, pe)) & set(range(ts, te)))
            denom = len(set(range(ps, pe)) | set(range(ts, te)))
            best = max(best, 0 if denom == 0 else num / denom)
        hits += int(best >= 0.5)
    r = hits / len(truth) if truth else 0
    p = hits / len(pred) if pred else 0
    return 0 if p == 0 or r == 0 else 2 * p * r / (p + r)


def runs(flags: list[bool], segment_ids: tuple[int, ...]) -> list[tuple[int, int]]:
    """Maximal runs of marked words inside one segment, written afresh from the ERASER data model."""
    out, i = [], 0
    while i < len(flags):
        if flags[i]:
            j = i
            while j + 1 < len(flags) and flags[j + 1] and segment_ids[j + 1] == segment_ids[i]:
                j += 1
            out.append((i, j + 1))
            i = j + 1
        else:
            i += 1
    return out


@pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="shared data folder missing")
@pytest.mark.parametrize(
    ("dataset", "split"), [("esnli", "dev_highlighted"), ("movies", "test"), ("hatexplain", "test")]
)
def test_matches_an_independent_eraser_implementation_on_real_examples(dataset, split):
    from core.datasets import load_examples

    examples = [e for e in load_examples(dataset, split, DATA_DIR, limit=60) if e.rationale and any(e.rationale)][:20]
    rng = np.random.default_rng(0)
    for example in examples:
        n = len(example.words)
        # smooth random scores, so the top-k words form runs of several words
        scores = np.convolve(rng.normal(size=n + 4), np.ones(5) / 5, mode="valid")[:n].astype(np.float32)
        truth = [bool(m) for m in example.rationale]
        k = sum(truth)
        order = sorted(range(n), key=lambda i: (-float(scores[i]), i))
        pred = set(order[:k])
        expected_token_f1 = eraser_token_f1({i for i in range(n) if truth[i]}, pred)
        expected_iou_f1 = eraser_iou_f1(
            runs(truth, example.segment_ids), runs([i in pred for i in range(n)], example.segment_ids)
        )
        assert score("token_f1", example, scores).value == pytest.approx(expected_token_f1)
        assert score("iou_f1", example, scores).value == pytest.approx(expected_iou_f1)
        from sklearn.metrics import auc, precision_recall_curve

        precision, recall, _ = precision_recall_curve([int(t) for t in truth], scores)
        assert score("auprc", example, scores).value == pytest.approx(auc(recall, precision))


# --------------------------------------------------------------------------- the page in AppTest

BUNDLED = {"esnli": "minilm-esnli", "movies": "minilm-movies", "hatexplain": "minilm-hatexplain"}


@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory, toy_bert_loaded) -> str:
    """The tiny random BERT saved as a local folder (the sidebar loads any folder by path)."""
    folder = tmp_path_factory.mktemp("toy-bert")
    toy_bert_loaded.model.save_pretrained(folder)
    toy_bert_loaded.tokenizer.save_pretrained(folder)
    return str(folder)


def page(dataset: str, split: str, index: int, toy_folder: str, monkeypatch):
    """AppTest of the rationales page, opened through a shared URL: the dataset's bundled model
    when it exists under assets/models, else the toy BERT."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ATTRIBUTION_DATA_DIR", DATA_DIR)
    root = Path(__file__).resolve().parent.parent
    model = BUNDLED[dataset] if (root / "assets" / "models" / BUNDLED[dataset]).is_dir() else toy_folder
    app = AppTest.from_file(str(root / "app.py"), default_timeout=240)
    app.query_params.update({"model": model, "dataset": dataset, "split": split, "index": str(index)})
    app.run()
    # a browser's page switch clears the query parameters; AppTest keeps the heatmap page's methods
    app.query_params.pop("methods", None)
    app.switch_page("app_pages/rationales.py")
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    return app


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="shared data folder missing")
@pytest.mark.parametrize(
    ("dataset", "split", "index", "human_rows"),
    [
        ("esnli", "dev_highlighted", 0, 1),
        ("movies", "test", 3, 1),
        ("hatexplain", "test", 5, 4),
    ],  # majority + three annotators
)
def test_page_shows_human_and_binarized_maps(dataset, split, index, human_rows, toy_folder, monkeypatch):
    app = page(dataset, split, index, toy_folder, monkeypatch)
    heatmap = next(h.proto.body for h in app.get("html") if 'data-role="heatmap"' in h.proto.body)
    assert heatmap.count('data-method="human · ') // heatmap.count('class="hm-block"') == human_rows
    # the rows select words as token F1 does by default: the top k, k as many as the humans marked
    # (they showed the tau 0.50 selection whatever the selection picked)
    from ui.heatmap import colour

    [shown_k] = {int(k) for k in re.findall(r'data-method="loo_empty · top (\d+)"', heatmap)}
    drawn = one_layout(heatmap)

    def row(label: str) -> str:
        return "".join(re.findall(rf'<tr class="hm-row" data-method="{label}">(.*?)</tr>', drawn))

    assert shown_k == row("human · majority").count("outline:2px") > 0 and "τ 0.50" not in heatmap
    assert row(f"loo_empty · top {shown_k}").count(f"background:{colour(1.0)}") == shown_k
    if dataset == "esnli":
        assert ">Premise</div>" in heatmap and ">Hypothesis</div>" in heatmap
    table = app.dataframe[0].value
    assert list(table.index[:5]) == ["loo_empty", "saliency", "integrated_gradients", "attention_rollout", "random"]
    assert table["IoU ↑"].between(0, 1).all() and table["AUPRC ↑"].between(0, 1).all()
    assert ("humans (each vs the others)" in table.index) == (human_rows > 1)
    downloads = {b.key for b in app.download_button}
    assert {"rationales.example.table.download.table.csv", "rationales.example.costs.download.table.csv"} <= downloads


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="shared data folder missing")
def test_page_says_when_an_example_has_no_rationale(toy_folder, monkeypatch):
    app = page("hatexplain", "test", 0, toy_folder, monkeypatch)  # a post judged normal
    assert any("No human highlighted this example: mark the words" in i.value for i in app.info)
    assert not app.dataframe and app.pills[0].options  # the reader's own highlight (tests/test_own_highlight.py)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="shared data folder missing")
def test_slice_table_ceiling_and_click_through(toy_folder, monkeypatch):
    app = page("hatexplain", "test", 0, toy_folder, monkeypatch)
    app.segmented_control(key="rationales.view").set_value("Dataset slice").run()
    app.number_input(key="rationales.slice_n").set_value(6).run()
    app.button(key="rationales.slice_run").click().run()
    assert not app.exception and not app.error
    table = app.dataframe[0].value
    assert "humans (each vs the others)" in table.index
    assert set(table["skipped"]) == {2}  # posts 0 and 1 were judged normal
    assert table.loc["random", "n"] == 4
    best_tau = next(d.value for d in app.dataframe if "optimal τ" in d.value.columns)
    assert best_tau["optimal τ"].between(0.05, 0.95).all()
    downloads = {b.key for b in app.download_button}
    assert {"rationales.slice.table.download.table.csv", "rationales.slice.tau_curve.download.figure.png"} <= downloads
    micro = next(d.value for d in app.dataframe if list(d.value.columns) == ["precision", "recall", "f1"])
    assert micro["f1"].between(0.0, 1.0).all() and "random" in micro.index.get_level_values("method")
    # a rerun serves the finished slice from the cache (it used to replay the progress bar and fail)
    by = app.selectbox(key="rationales.worst_metric")
    by.set_value(by.options[-1]).run()
    assert not app.exception and app.dataframe[0].value.equals(table)
    opened = next(b for b in app.button if b.key and b.key.startswith("rationales.open.loo_empty."))
    index = int(opened.key.rsplit(".", 1)[1])
    opened.click().run()
    assert app.session_state["sidebar.index"] == index
    assert app.segmented_control(key="rationales.view").value == "This example"
    assert not app.exception


def test_micro_average_sums_counts_over_the_slice_as_eraser_does():
    first = make_example([1, 1, 0, 0, 1, 0], example_id="t/1")  # human spans (0, 2), (4, 5)
    second = make_example([0, 0, 1, 1, 1, 0], example_id="t/2")  # human span (2, 5)
    maps = [(first, [0.9, 0, 0, 0, 0.8, 0.7]), (second, [0.9, 0.8, 0, 0, 0, 0.7])]  # top 3 of each
    spans = [score("iou_f1", e, s) for e, s in maps]
    # first: (0, 1) and (4, 6) each reach IoU 1/2 with a human span; second: no match.
    assert [r.value for r in spans] == [1.0, 0.0]
    micro = pl.micro_f1(spans)
    assert micro["precision"] == pytest.approx(2 / 4) and micro["recall"] == pytest.approx(2 / 3)
    assert micro["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    tokens = pl.micro_f1(score("token_f1", e, s) for e, s in maps)
    assert tokens == pytest.approx({"precision": 2 / 6, "recall": 2 / 6, "f1": 1 / 3})
    empty = score("iou_f1", make_example([0, 0, 0, 0, 0, 0], example_id="t/3"), [1, 0, 0, 0, 0, 0])
    assert pl.micro_f1([*spans, empty]) == micro  # skipped examples add nothing
