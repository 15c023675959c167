"""ERASER's two-document convention (issue 18, item 4) against a hand-computed e-SNLI-style pair.

Premise ``p0 p1 p2 p3`` (documents: segment 0) and hypothesis ``h0 h1 h2`` (segment 1). Humans
marked p0, p1, p3 and h2; the map's top four words (k = the human count) are p0, p1, h0, h1.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import metrics
import services
from core.types import Attribution, Example
from metrics.eraser_documents import document_summary
from tests import test_plausibility
from tests.test_plausibility import DATA_DIR, page

toy_folder = test_plausibility.toy_folder  # the tiny BERT saved as a folder (a fixture)

HUMAN = (1, 1, 0, 1, 0, 0, 1)
PAIR = Example(segments=(("p0", "p1", "p2", "p3"), ("h0", "h1", "h2")), id="pair", rationales=(HUMAN,), rationale=HUMAN)
SCORES = np.array([0.9, 0.8, 0.1, 0.0, 0.7, 0.6, 0.2], dtype=np.float32)
SINGLE = Example(segments=(("a", "b", "c"),), id="single", rationales=((1, 0, 0),), rationale=(1, 0, 0))


def score(key: str, example: Example, scores, convention: str):
    spec = metrics.get(key)
    attribution = Attribution("m", example.id, 0, example.words, np.asarray(scores, dtype=np.float32))
    return spec.compute(None, example, attribution, spec.params_cls(convention=convention))


def test_token_f1_by_document() -> None:
    # Ours: selected {p0, p1, h0, h1}, human {p0, p1, p3, h2}: 2 of 4 and 2 of 4 -> F1 1/2.
    assert score("token_f1", PAIR, SCORES, "ours").value == pytest.approx(0.5)
    # ERASER: premise P 2/2, R 2/3 -> F1 0.8; hypothesis P 0, R 0 -> 0; mean over documents 0.4.
    result = score("token_f1", PAIR, SCORES, "eraser")
    assert result.value == pytest.approx(0.4)
    assert [d["value"] for d in result.extras["documents"]] == pytest.approx([0.8, 0.0])
    assert result.extras["convention"] == "eraser"
    assert score("token_f1", PAIR, SCORES, "ours").extras["convention"] == "ours"


def test_iou_f1_by_document() -> None:
    # Predicted spans p0-p1 and h0-h1; human spans p0-p1, p3, h2. Only p0-p1 matches (IoU 1).
    # Ours: precision 1/2, recall 1/3 -> F1 0.4.
    assert score("iou_f1", PAIR, SCORES, "ours").value == pytest.approx(0.4)
    # ERASER: premise P 1/1, R 1/2; hypothesis P 0/1, R 0/1; mean P 1/2, mean R 1/4 -> F1 1/3.
    result = score("iou_f1", PAIR, SCORES, "eraser")
    assert result.value == pytest.approx(1 / 3)
    assert [(d["precision"], d["recall"]) for d in result.extras["documents"]] == [(1.0, 0.5), (0.0, 0.0)]


def test_auprc_by_document() -> None:
    # Ours, the seven words ranked: (recall, precision) steps (0,1) (1/4,1) (1/2,1) (1/2,2/3)
    # (1/2,1/2) (3/4,3/5) (3/4,1/2) (1,4/7): trapezoid area 1/4 + 1/4 + 0.1375 + 0.25 x (1/2 + 4/7) / 2.
    assert score("auprc", PAIR, SCORES, "ours").value == pytest.approx(0.5 + 0.1375 + 0.25 * (0.5 + 4 / 7) / 2)
    # ERASER: premise (0,1) (1/3,1) (2/3,1) (2/3,2/3) (1,3/4) -> 2/3 + 1/3 x (2/3 + 3/4) / 2 = 65/72;
    # hypothesis (0,1) (0,0) (0,0) (1,1/3) -> 1/6; mean 77/144.
    result = score("auprc", PAIR, SCORES, "eraser")
    assert [d["value"] for d in result.extras["documents"]] == pytest.approx([65 / 72, 1 / 6])
    assert result.value == pytest.approx(77 / 144)


def test_a_single_text_is_one_document_in_both_conventions() -> None:
    for key in ("token_f1", "iou_f1", "auprc"):
        scores = [0.5, 0.9, 0.1]
        assert score(key, SINGLE, scores, "eraser").value == pytest.approx(score(key, SINGLE, scores, "ours").value)


def test_a_slice_pools_documents_not_examples() -> None:
    # Token F1: the pair's documents 0.8 and 0, the single text's 0 (its top-1 word is b, humans marked a).
    results = [score("token_f1", PAIR, SCORES, "eraser"), score("token_f1", SINGLE, [0.5, 0.9, 0.1], "eraser")]
    summary = document_summary("token_f1", results)
    assert summary.mean == pytest.approx(0.8 / 3) and summary.n == 3
    assert np.mean([r.value for r in results]) == pytest.approx(0.2)  # the per-example mean differs
    # IOU-F1: precisions 1, 0 (pair) and 0 (single); recalls 1/2, 0 and 0 -> F1 of 1/3 and 1/6.
    spans = [score("iou_f1", PAIR, SCORES, "eraser"), score("iou_f1", SINGLE, [0.5, 0.9, 0.1], "eraser")]
    assert document_summary("iou_f1", spans).mean == pytest.approx(2 * (1 / 3) * (1 / 6) / (1 / 2))
    # Our convention has no document figure: the slice keeps the per-example mean.
    assert document_summary("token_f1", [score("token_f1", PAIR, SCORES, "ours")]) is None


def test_convention_is_a_checked_parameter() -> None:
    from core.params import params_from

    with pytest.raises(ValueError, match="convention='documents' is not one of"):
        params_from(metrics.get("auprc").params_cls, {"convention": "documents"})


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="shared data folder missing")
def test_page_offers_the_convention_and_counts_documents(toy_folder, monkeypatch) -> None:
    app = page("esnli", "dev_highlighted", 0, toy_folder, monkeypatch)
    app.radio(key="rationales.convention").set_value("eraser").run()
    app.multiselect(key="rationales.methods").set_value(["loo_empty", "random"]).run()
    app.segmented_control(key="rationales.view").set_value("Dataset slice").run()
    app.number_input(key="rationales.slice_n").set_value(3).run()
    words = [len(services.dataset_example("esnli", "dev_highlighted", i).words) for i in range(3)]
    captions = " ".join(c.value for c in app.caption)  # leave-one-out: the original and one per word
    assert f"(at most {sum(n + 1 for n in words):,} classifier forward passes over 3 examples" in captions, captions
    app.button(key="rationales.slice_run").click().run()
    assert not app.exception and not app.error, [e.value for e in app.exception]
    table = app.dataframe[0].value
    assert table.loc["random", "n"] == 3  # the pairs; token F1 and AUPRC count their documents in their cells
    assert table.loc["random", "AUPRC ↑"].endswith(" n=6")  # three pairs, two documents each
    assert "nan" not in table.loc["random", "IOU-F1 ↑"]  # its figure has no interval: the mean alone
    assert any("ERASER's convention" in c.value for c in app.caption)


@pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="shared data folder missing")
@pytest.mark.parametrize(
    ("dataset", "split", "labels"),
    [
        ("esnli", "dev_highlighted", ["a pair is one document", "ERASER: premise and hypothesis are two documents"]),
        ("hatexplain", "test", ["mean of the examples' scores", "ERASER: pooled over documents"]),
    ],
)
def test_the_convention_speaks_of_pairs_only_for_pairs(toy_folder, monkeypatch, dataset, split, labels) -> None:
    """A single text has no premise and hypothesis: there the two conventions differ only in how
    the slice averages (over examples, or pooled over documents as ERASER's scorer does)."""
    app = page(dataset, split, 0, toy_folder, monkeypatch)
    key = "rationales.convention" if dataset == "esnli" else "rationales.convention_single"
    assert app.radio(key=key).options == labels and app.radio(key=key).value == "ours"
