"""Input Marginalization on the toy linear classifier with a fake masked LM of fixed fill-ins.

The toy model's positive probability is ``sigmoid(2 * (x0 - x1))`` with ``x`` the summed
embeddings: [CLS] adds 0.2 to x0, ``great`` 3, ``good`` 1; ``bad`` adds 1 to x1, ``awful`` 3;
every other word nothing. So every IM expectation can be computed by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import explainers
from core.masked_lm import Fill, MaskedLM
from core.types import Example
from explainers.input_marginalization import fill_converter
from tests.toy import VOCAB, toy_masked_lm, toy_tokenizer

POSITIVE = 1


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def log2_odds(p: float) -> float:
    return math.log2(p / (1.0 - p))


def positive(*words: str) -> float:
    """The toy model's positive probability for a text of these words."""
    x0 = 0.2 + sum({"great": 3.0, "good": 1.0}.get(w, 0.0) for w in words)
    x1 = sum({"awful": 3.0, "bad": 1.0}.get(w, 0.0) for w in words)
    return sigmoid(2.0 * (x0 - x1))


class FakeMLM:
    """A masked LM stand-in: a fixed fill-in distribution per original word (``default`` for
    the others) in the toy vocabulary, and ``fill_word`` for every mask of ``fill_masks``."""

    def __init__(
        self,
        table: dict[str, list[tuple[str, float]]],
        default: list[tuple[str, float]],
        fill_word: str = "film",
        tokenizer=None,
    ) -> None:
        self.table = table
        self.default = default
        self.fill_word = fill_word
        self.tokenizer = tokenizer or toy_tokenizer()
        self.name = "fake-mlm"
        self.forward_passes = 0
        self.mask_rows: list[tuple[tuple[str, ...], ...]] = []

    def fill_words(self, segments, positions, k=10, batch_size=64):
        words = [w for segment in segments for w in segment]
        out = []
        for position in positions:
            distribution = self.table.get(words[position], self.default)
            self.forward_passes += 1
            fills = [Fill(token, VOCAB[token], p) for token, p in distribution[:k]]
            out.append((fills, dict(distribution).get(words[position], 0.0)))
        return out

    def fill_masks(self, rows, batch_size=64):
        self.forward_passes += len(rows)
        self.mask_rows.extend(rows)
        mask = self.tokenizer.mask_token
        return [[Fill(self.fill_word, VOCAB[self.fill_word], 0.9) for s in row for w in s if w == mask] for row in rows]

    def token_text(self, token: str) -> str:
        return token


NEUTRAL = [("film", 0.6), ("movie", 0.3), ("it", 0.1)]
GREAT = [("great", 0.5), ("good", 0.3), ("bad", 0.1), ("fun", 0.05), ("dog", 0.02)]


@pytest.fixture
def fake_mlm() -> FakeMLM:
    return FakeMLM({"great": GREAT, "bad": [("good", 0.7), ("bad", 0.2), ("awful", 0.1)]}, NEUTRAL)


@pytest.fixture
def short_example() -> Example:
    return Example(segments=(("the", "movie", "was", "great", "but", "bad"),), id="toy/im")


def run_im(clf, example, mlm, target=POSITIVE, **overrides):
    spec = explainers.get("im")
    return explainers.run_explainer(spec, clf, example, target, spec.make_params(overrides), mlm=mlm)


def test_im_equals_hand_computation(linear_clf, short_example, fake_mlm):
    attribution = run_im(linear_clf, short_example, fake_mlm, k=3)
    f_x = positive("great", "bad")
    # 'great': top-3 great 0.5, good 0.3, bad 0.1, renormalised over 0.9.
    e_great = (0.5 * f_x + 0.3 * positive("good", "bad") + 0.1 * positive("bad", "bad")) / 0.9
    # 'bad': good 0.7, bad 0.2, awful 0.1 (mass 1).
    e_bad = 0.7 * positive("great", "good") + 0.2 * f_x + 0.1 * positive("great", "awful")
    expected = [0.0, 0.0, 0.0, log2_odds(f_x) - log2_odds(e_great), 0.0, log2_odds(f_x) - log2_odds(e_bad)]
    np.testing.assert_allclose(attribution.scores, expected, atol=1e-5)
    # 'bad' comes out positive: its fill-in 'awful' would hurt the positive class even more.
    assert attribution.scores[3] > 1.0 and attribution.scores[5] > 0.0
    extras = attribution.extras
    assert extras["expectations"][3] == pytest.approx(e_great, abs=1e-6)
    assert extras["mass"][3] == pytest.approx(0.9)
    table = extras["candidates"][3]
    assert [row["text"] for row in table] == ["great", "good", "bad"]
    assert [row["is_original"] for row in table] == [True, False, False]
    assert table[1]["probability"] == pytest.approx(positive("good", "bad"), abs=1e-6)
    assert table[1]["weight"] == pytest.approx(0.3 / 0.9)
    assert table[1]["contribution"] == pytest.approx(0.3 / 0.9 * positive("good", "bad"), abs=1e-6)
    assert sum(row["contribution"] for row in table) == pytest.approx(e_great, abs=1e-6)
    assert table[2]["predicted"] == 0 and table[0]["predicted"] == 1
    assert extras["top1"][3] == "great" and extras["top1_is_original"][3] is True
    assert extras["top1_is_original"][0] is False and extras["original_likelihood"][3] == 0.5
    # One masked-LM pass per word; 1 + 3 x 6 classifier variants, of which the three that
    # restore the original word ('movie', 'great', 'bad') duplicate the original: scored once.
    assert extras["mlm_forward_passes"] == 6
    assert attribution.forward_passes == 16


def test_im_options(linear_clf, short_example, fake_mlm):
    f_x = positive("great", "bad")
    raw = run_im(linear_clf, short_example, fake_mlm, k=3, renormalize=False, output="probability")
    e_raw = 0.5 * f_x + 0.3 * positive("good", "bad") + 0.1 * positive("bad", "bad")
    assert raw.scores[3] == pytest.approx(f_x - e_raw, abs=1e-6)

    excluded = run_im(linear_clf, short_example, fake_mlm, k=3, include_original=False, output="probability")
    table = excluded.extras["candidates"][3]
    assert [row["text"] for row in table] == ["good", "bad", "fun"]
    e_excluded = (0.3 * positive("good", "bad") + 0.1 * positive("bad", "bad") + 0.05 * positive("fun", "bad")) / 0.45
    assert excluded.scores[3] == pytest.approx(f_x - e_excluded, abs=1e-6)
    assert excluded.extras["top1_is_original"][3] is True  # the flag describes the masked LM, not the selection

    thresholded = run_im(linear_clf, short_example, fake_mlm, selection="threshold", threshold=0.2)
    assert [row["text"] for row in thresholded.extras["candidates"][3]] == ["great", "good"]
    assert thresholded.extras["cap_reached"] == [False] * 6
    capped = run_im(linear_clf, short_example, fake_mlm, selection="threshold", threshold=0.01, max_candidates=3)
    assert capped.extras["cap_reached"][3] is True
    certain = FakeMLM({"great": [("great", 1.0)]}, NEUTRAL)
    with pytest.raises(ValueError, match="no fill-in of 'great'"):
        run_im(linear_clf, short_example, certain, include_original=False)
    nothing_above = run_im(linear_clf, short_example, fake_mlm, selection="threshold", threshold=0.99)
    assert [len(table) for table in nothing_above.extras["candidates"]] == [1] * 6


@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
@pytest.mark.parametrize("renormalize", [True, False])
def test_probability_im_bounded_by_original_likelihood(linear_clf, p, renormalize):
    """With likelihood p on the original word, f(x) - E <= (1 - p) f(x), however important the
    word is to the classifier ('great' carries almost all of the positive evidence)."""
    example = Example(segments=(("the", "film", "was", "great"),), id="toy/bound")
    rest = 1.0 - p
    mlm = FakeMLM({"great": [("great", p), ("awful", 0.5 * rest), ("bad", 0.3 * rest)]}, NEUTRAL)
    attribution = run_im(linear_clf, example, mlm, output="probability", renormalize=renormalize)
    weights = np.array([p, 0.5 * rest, 0.3 * rest])
    weights = weights / weights.sum() if renormalize else weights
    f_x = positive("great")
    score = float(attribution.scores[3])
    assert score == pytest.approx(f_x - weights @ [f_x, positive("awful"), positive("bad")], abs=1e-6)
    assert 0.0 < score <= (1.0 - p) * f_x


def test_fill_converter_shared_and_foreign_vocabulary(linear_clf):
    fill = Fill("unbelievable", 7, 0.5)
    shared = FakeMLM({}, NEUTRAL)
    assert fill_converter(linear_clf, shared)(fill) == (7,)

    class ForeignVocabulary:
        mask_token = "[MASK]"

        def get_vocab(self) -> dict[str, int]:
            return {"[MASK]": 0, "unbelievable": 7}

    foreign = FakeMLM({}, NEUTRAL, tokenizer=ForeignVocabulary())
    assert fill_converter(linear_clf, foreign)(fill) == (VOCAB["un"], VOCAB["##believ"], VOCAB["##able"])


def tiny_masked_lm() -> MaskedLM:
    return toy_masked_lm()


def test_im_with_a_real_masked_lm_matches_independent_computation(linear_clf, short_example):
    """IM through the real MaskedLM wrapper equals the expectation recomputed from its fill-ins."""
    mlm = tiny_masked_lm()
    attribution = run_im(linear_clf, short_example, mlm, k=5)
    encoded = linear_clf.encode(short_example)
    filled = mlm.fill_words(short_example.segments, list(range(6)), k=5)
    f_x = linear_clf.predict_proba([encoded.variant])[0, POSITIVE]
    for i, (fills, _) in enumerate(filled):
        probs = linear_clf.predict_proba([encoded.perturb({i: (f.token_id,)}) for f in fills])[:, POSITIVE]
        likelihoods = np.array([f.probability for f in fills])
        expectation = likelihoods @ probs / likelihoods.sum()
        assert attribution.scores[i] == pytest.approx(log2_odds(f_x) - log2_odds(expectation), abs=1e-4)
    assert attribution.extras["mlm_forward_passes"] == 6


def test_fill_masks_agrees_with_fill_words():
    """One mask per row: the top-1 of ``fill_masks`` is the top-1 of ``fill_words``; several
    masks are filled left to right in one pass per row."""
    mlm = tiny_masked_lm()
    words = ("the", "movie", "was", "great")
    rows = [(tuple("[MASK]" if j == i else w for j, w in enumerate(words)),) for i in range(4)]
    single = mlm.fill_masks(rows)
    expected = mlm.fill_words((words,), [0, 1, 2, 3], k=1)
    assert [row[0].token_id for row in single] == [fills[0].token_id for fills, _ in expected]
    assert [row[0].probability for row in single] == pytest.approx(
        [fills[0].probability for fills, _ in expected], abs=1e-6
    )
    several = mlm.fill_masks([(("[MASK]", "movie", "[MASK]", "[MASK]"),), (("the", "movie", "was", "great"),)])
    assert [len(row) for row in several] == [3, 0]


def table_with(app, *columns: str):
    """The first dataframe on the page holding these columns (AppTest keeps no dataframe keys)."""
    return next(d.value for d in app.dataframe if set(columns) <= set(d.value.columns))


def table_with_any(app, *columns: str) -> bool:
    return any(set(columns) <= set(d.value.columns) for d in app.dataframe)


def test_page_shows_candidate_table(monkeypatch, toy_linear_loaded, toy_example):
    """The page on the toy model and a masked LM that restores 'great' with likelihood 0.9."""
    from streamlit.testing.v1 import AppTest

    import services
    from ui.state import Selection

    mlm = FakeMLM({"great": [("great", 0.9), ("good", 0.05), ("awful", 0.03)]}, NEUTRAL)
    monkeypatch.setattr(services.models, "loaded", lambda name: toy_linear_loaded)
    monkeypatch.setattr(services.models, "masked_lm", lambda name=services.DEFAULT_MLM: mlm)
    app = AppTest.from_file("../app_pages/input_marginalization.py", default_timeout=60)
    labels = ("negative", "positive")
    app.session_state["selection"] = Selection(
        model="toy-linear", label_names=labels, example=toy_example, mlm="page-mlm"
    )
    app.run()
    # Runs estimated over 20 s wait for a click: on a busy machine the measured rate may be low.
    if any(button.key == "im.run.IM" for button in app.button):
        app.button(key="im.run.IM").click().run()
    assert not app.exception, app.exception
    assert not table_with_any(app, "words kept")  # LIME ran for its closed tab
    assert not any(b.key == "im.run.LIME" for b in app.button)  # nor waits there for a click
    assert not any("**LIME**" in c.value for c in app.caption)  # no estimate, no measured cost
    assert set(table_with(app, "method", "forward passes")["method"]) == {"loo_empty", "im"}
    app.session_state["im.gallery.tab"] = "LIME"  # the user opens the LIME tab
    app.run()
    if any(button.key == "im.run.LIME" for button in app.button):
        app.button(key="im.run.LIME").click().run()
    assert not app.exception, app.exception
    assert app.selectbox(key="im.word").value == 3  # 'great', the word leave-one-out ranks first
    candidates = table_with(app, "rank", "fill-in")
    assert list(candidates["fill-in"]) == ["great", "good", "awful"]
    assert list(candidates["original word"]) == [True, False, False]
    e_great = (0.9 * positive("great", "bad") + 0.05 * positive("good", "bad") + 0.03 * positive("awful", "bad")) / 0.98
    assert candidates["contribution"].sum() == pytest.approx(e_great, abs=1e-6)
    assert any("exact match" in m.value and "original word “**great**”" in m.value for m in app.markdown)
    assert any("likelihood 0.90" in w.value for w in app.warning)
    words = table_with(app, "IM", "LOO_empty")
    f_x = positive("great", "bad")
    assert words.loc[3, "IM"] == pytest.approx(log2_odds(f_x) - log2_odds(e_great), abs=1e-4)
    assert words.loc[3, "LOO_empty"] == pytest.approx(log2_odds(f_x) - log2_odds(positive("bad")), abs=1e-4)
    assert abs(words.loc[3, "IM"]) < abs(words.loc[3, "LOO_empty"]) / 3
    loo_gallery = table_with(app, "counterfactual", "word", "P(positive)")
    assert loo_gallery.loc[3, "counterfactual"] == "the movie was but the plot was bad ."
    assert loo_gallery.loc[3, "P(positive)"] == pytest.approx(positive("bad"), abs=1e-6)
    assert len(table_with(app, "counterfactual", "fill-in")) == 30
    assert len(table_with(app, "counterfactual", "words kept")) == 50
    assert any(c.value.startswith("Measured for **IM**: ") and "forward passes" in c.value for c in app.caption)
    downloads = {b.key for b in app.download_button}
    for key in ("words", "candidates", "gallery.loo", "gallery.im", "gallery.lime", "costs"):
        assert f"im.{key}.download.table.csv" in downloads

    app.selectbox(key="im.word").set_value(8).run()  # 'bad': the neutral fill-ins, no exact match
    assert not app.exception
    assert list(table_with(app, "rank", "fill-in")["fill-in"]) == ["film", "movie", "it"]
    assert any("top-1 fill-in is “**film**”; the original word" in m.value for m in app.markdown)  # quoted
    assert not app.warning

    # Another text starts at its own most important word: the last text's word 8 was kept.
    other = Example(segments=(("the", "plot", "was", "great", "and", "the", "movie", "was", "fine", "."),), id="toy/1")
    app.session_state["selection"] = Selection(model="toy-linear", label_names=labels, example=other, mlm="page-mlm")
    app.run()
    if any(button.key == "im.run.IM" for button in app.button):
        app.button(key="im.run.IM").click().run()
    assert not app.exception and app.selectbox(key="im.word").value == 3  # 'great'


def test_page_waits_for_a_click_before_a_long_run(monkeypatch, toy_linear_loaded, toy_example):
    from streamlit.testing.v1 import AppTest

    import services
    from ui.state import Selection

    mlm = FakeMLM({"great": GREAT}, NEUTRAL)
    monkeypatch.setattr(services.models, "loaded", lambda name: toy_linear_loaded)
    monkeypatch.setattr(services.models, "masked_lm", lambda name=services.DEFAULT_MLM: mlm)
    monkeypatch.setattr(services, "measured_rate", lambda model, example: 2.0)  # 111 passes: about 56 s
    app = AppTest.from_file("../app_pages/input_marginalization.py", default_timeout=60)
    labels = ("negative", "positive")
    app.session_state["selection"] = Selection(
        model="toy-linear", label_names=labels, example=toy_example, mlm="slow-mlm"
    )
    app.run()
    assert not app.exception
    estimate = "about 55.5 s (at most 101 classifier forward passes and 10 masked-LM passes, at 2 passes/s"
    assert any(f"Estimated time for **IM**: {estimate}" in c.value for c in app.caption)
    assert not any("fill-in" in d.value.columns for d in app.dataframe)
    app.button(key="im.run.IM").click().run()
    assert list(table_with(app, "rank", "fill-in")["fill-in"]) == ["great", "good", "bad", "fun", "dog"]
    app.selectbox(key="im.word").set_value(0).run()  # a rerun keeps the approval
    assert list(table_with(app, "rank", "fill-in")["fill-in"]) == ["film", "movie", "it"]


def test_the_word_table_marks_a_word_without_a_likelihood(monkeypatch, toy_linear_loaded, toy_example):
    """A word that is several tokens of the masked LM's vocabulary has no likelihood of its own:
    the word table showed ``None`` in its cell."""
    from streamlit.testing.v1 import AppTest

    import services
    from tests.page_text import shown_cells
    from ui.state import Selection

    class SplitWords(FakeMLM):
        def fill_words(self, segments, positions, k=10, batch_size=64):
            words = [w for segment in segments for w in segment]
            filled = super().fill_words(segments, positions, k, batch_size)
            return [(fills, None if words[p] == "plot" else p_word) for (fills, p_word), p in zip(filled, positions)]

    mlm = SplitWords({"great": GREAT}, NEUTRAL)
    monkeypatch.setattr(services.models, "loaded", lambda name: toy_linear_loaded)
    monkeypatch.setattr(services.models, "masked_lm", lambda name=services.DEFAULT_MLM: mlm)
    monkeypatch.setattr(services, "measured_rate", lambda model, example: 1e6)  # every run starts at once
    app = AppTest.from_file("../app_pages/input_marginalization.py", default_timeout=60)
    labels = ("negative", "positive")
    app.session_state["selection"] = Selection(model="toy-linear", label_names=labels, example=toy_example, mlm="split")
    app.run()
    assert not app.exception, app.exception
    table = next(d for d in app.dataframe if "likelihood of the word" in d.value.columns)
    cells = shown_cells(table)
    assert cells["likelihood of the word"][6] == "–"  # 'plot'
    assert cells["likelihood of the word"][3] == "0.5000"  # 'great'
    assert not any("None" in column for column in cells.values()), cells
    assert any("– (likelihood of the word): the word is not one token" in c.value for c in app.caption)


def test_a_word_past_the_masked_lms_length_is_refused_not_dropped():
    """``fill_words`` returned fewer fill-in lists than positions when the masked LM cut a row's
    mask off (a classifier longer than its masked LM): IM zipped them and lost words silently."""
    from tests.toy import toy_masked_lm

    mlm = toy_masked_lm()
    words = ("the", "movie", "was", "good") * 25  # 100 words, past the toy masked LM's 64 tokens
    assert len(mlm.fill_words((words,), [2], k=3)) == 1
    with pytest.raises(ValueError, match=r"masks lost to truncation \(\[1, 0\] of \[1, 1\] per row\)"):
        mlm.fill_words((words,), [2, 90], k=3)
