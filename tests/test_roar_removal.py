"""ROAR removal: the rounding rules, cumulative and recursive removal, and the three removal modes,
checked by hand on Madsen et al.'s Figure 1 and 2 sentence."""

from __future__ import annotations

import re

import numpy as np
import pytest

from core.masked_lm import Fill
from core.types import Example
from experiments.roar.removal import (
    MADSEN_2022_LEVELS,
    ONE_TOKEN_LEVELS,
    PHAM_2022_LEVELS,
    Level,
    default_order,
    default_rounding,
    n_to_remove,
    remove_top,
    removed_views,
)

WORDS = ("the", "movie", "is", "great", ".", "i", "really", "liked", "it", ".")
FIGURE = Example(segments=(WORDS,), label=1, rationale=(0, 0, 0, 1, 0, 0, 0, 1, 0, 0), id="fig")
# step-0 importance: "great" first, then "movie", then "liked"
STEP0 = np.array([0.0, 0.5, 0.1, 0.9, 0.0, 0.0, 0.2, 0.3, 0.0, 0.0])


def text(view) -> str:
    return " ".join(view.example.words)


@pytest.mark.parametrize(
    ("n", "percent", "pham2022", "madsen2022"),
    [
        (20, 10, 2, 2),  # ceil(19 * 0.1) = 2; floor(2.0) = 2
        (20, 20, 4, 4),  # ceil(3.8) = 4
        (20, 30, 6, 6),  # ceil(5.7) = 6
        (10, 10, 1, 1),  # ceil(0.9) = 1
        (10, 30, 3, 3),  # ceil(2.7) = 3
        (9, 30, 3, 2),  # ceil(2.4) = 3; floor(2.7) = 2
        (4, 10, 1, 0),  # at least one word under Pham et al.'s rule; floor(0.4) = 0
        (4, 30, 1, 1),  # ceil(0.9) = 1; floor(1.2) = 1
        (1, 10, 1, 0),
        (0, 30, 0, 0),
        (7, 0, 0, 0),  # 0% removes nothing
        (7, 100, 7, 7),  # 100% removes everything (Pham et al.'s formula alone would give 6)
        (7, 90, 6, 6),  # ceil(5.4) = 6; floor(6.3) = 6
    ],
)
def test_rounding_rules(n, percent, pham2022, madsen2022):
    assert n_to_remove(n, Level(percent), "pham2022") == pham2022
    assert n_to_remove(n, Level(percent), "madsen2022") == madsen2022


def test_token_levels_and_presets():
    assert n_to_remove(20, Level(3, "tokens"), "pham2022") == 3
    assert n_to_remove(2, Level(3, "tokens"), "madsen2022") == 2
    assert [level.amount for level in PHAM_2022_LEVELS] == [10, 20, 30]
    assert [level.amount for level in MADSEN_2022_LEVELS] == list(range(0, 101, 10))
    assert [level.label for level in ONE_TOKEN_LEVELS[:3]] == ["0%", "1 token", "2 tokens"]
    assert Level.parse("30%") == Level(30) and Level.parse("4t") == Level(4, "tokens")
    assert Level.parse(" 7 tokens ") == Level(7, "tokens") and Level(30).x == 0.3
    assert Level(0, "tokens") == Level(0) and ONE_TOKEN_LEVELS[0].is_zero
    assert (default_rounding("delete"), default_rounding("mlm"), default_rounding("mask")) == (
        "pham2022",
        "pham2022",
        "madsen2022",
    )
    assert default_order("mask") == "absolute" and default_order("delete") == "signed"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Level(120), "0..100, got 120"),
        (lambda: Level(5, "words"), "unknown level unit 'words'; choose one of percent, tokens"),
        (lambda: Level.parse("ten"), "cannot read 'ten' as a level"),
        (lambda: n_to_remove(5, Level(10), "smith2023"), "unknown rounding 'smith2023'"),
        (lambda: default_rounding("erase"), "unknown removal 'erase'; choose one of delete, mask, mlm"),
        (lambda: remove_top(FIGURE, STEP0[:5], Level(10)), "5 scores for 10 words in 'fig'"),
        (lambda: remove_top(FIGURE, STEP0, Level(10), order="top"), "unknown order 'top'"),
    ],
)
def test_errors_name_the_bad_value(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_plain_roar_reproduces_figure_1():
    """Madsen et al. 2022, Fig. 1: plain ROAR masks "great" at 10%, then "movie" at 20% (step-0 scores)."""
    at10 = remove_top(FIGURE, STEP0, Level(10), rounding="madsen2022")
    at20 = remove_top(FIGURE, STEP0, Level(20), rounding="madsen2022")
    views = removed_views([FIGURE, FIGURE], [at10, at20], "mask")
    assert text(views[0]) == "the movie is [MASK] . i really liked it ."
    assert text(views[1]) == "the [MASK] is [MASK] . i really liked it ."
    # nested: plain ROAR's 20% set contains its 10% set
    assert np.all(at20[at10])


def test_recursive_roar_reproduces_figure_2_and_keeps_removed_words():
    """Madsen et al. 2022, Fig. 2: the retrained model now finds "liked" most important; "great" stays
    masked although its new score is the lowest."""
    at10 = remove_top(FIGURE, STEP0, Level(10), rounding="madsen2022")
    view = removed_views([FIGURE], [at10], "mask")[0]
    step1 = np.array([0.0, 0.2, 0.0, -5.0, 0.0, 0.0, 0.1, 0.8, 0.0, 0.0])  # scores on the masked view
    at20 = remove_top(FIGURE, view.original_scores(step1), Level(20), removed=at10, rounding="madsen2022")
    assert text(removed_views([FIGURE], [at20], "mask")[0]) == "the movie is [MASK] . i really [MASK] it ."
    # the count includes words already removed: 20% of 10 words is 2 in all
    assert at20.sum() == 2
    # a level already reached removes nothing more
    assert np.array_equal(remove_top(FIGURE, step1, Level(10), removed=at20, rounding="madsen2022"), at20)


def test_signed_and_absolute_order_and_ties():
    scores = np.array([0.1, -0.9, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    signed = remove_top(FIGURE, scores, Level(20), rounding="madsen2022", order="signed")
    absolute = remove_top(FIGURE, scores, Level(20), rounding="madsen2022", order="absolute")
    assert np.flatnonzero(signed).tolist() == [2, 3]  # tie 0.5/0.5 broken by position
    assert np.flatnonzero(absolute).tolist() == [1, 2]  # |-0.9| first, then the earlier 0.5


def test_non_finite_scores_are_refused_unless_removed():
    scores = STEP0.copy()
    scores[3] = np.nan
    with pytest.raises(ValueError, match=r"score nan for word 3 \('great'\) of 'fig'"):
        remove_top(FIGURE, scores, Level(10))
    removed = np.zeros(10, dtype=bool)
    removed[3] = True
    out = remove_top(FIGURE, scores, Level(20), removed=removed, rounding="madsen2022")
    assert np.flatnonzero(out).tolist() == [1, 3]


def test_delete_view_maps_scores_back_and_keeps_rationale_aligned():
    at30 = remove_top(FIGURE, STEP0, Level(30))  # Pham et al. 2022: ceil(9 * 0.3) = 3 words
    view = removed_views([FIGURE], [at30], "delete")[0]
    assert text(view) == "the is . i really it ."
    assert view.positions == (0, 2, 4, 5, 6, 8, 9)
    assert view.example.rationale == (0, 0, 0, 0, 0, 0, 0)  # both rationale words were removed
    assert view.shown[3] == "" and view.shown[0] is None
    back = view.original_scores(np.arange(7.0))
    assert np.isnan(back[[1, 3, 7]]).all()
    assert back[[0, 2, 4, 5, 6, 8, 9]].tolist() == [0, 1, 2, 3, 4, 5, 6]
    # recursive delete: the next step ranks only the words still there
    at40 = remove_top(FIGURE, back, Level(40), removed=at30)
    assert np.flatnonzero(at40).tolist() == [1, 3, 7, 9]  # ceil(3.6) = 4: the highest remaining, word 9


def test_pairs_remove_from_the_main_segment_by_default():
    pair = Example(segments=(("a", "man", "sleeps"), ("nobody", "sleeps")), label=2, id="pair")
    scores = np.array([0.0, 0.1, 0.2, 0.9, 0.8])
    main = remove_top(pair, scores, Level(30), rounding="madsen2022", scope="main")  # floor(0.9) = 0
    assert not main.any()
    main = remove_top(pair, scores, Level(50), rounding="madsen2022", scope="main")  # floor(1.5) = 1
    assert np.flatnonzero(main).tolist() == [2]
    both = remove_top(pair, scores, Level(50), rounding="madsen2022", scope="all")  # floor(2.5) = 2
    assert np.flatnonzero(both).tolist() == [3, 4]
    view = removed_views([pair], [both], "delete")[0]
    assert view.example.segments == (("a", "man", "sleeps"), ())
    full = remove_top(pair, scores, Level(100))
    assert removed_views([pair], [full], "mask", mask_token="<mask>")[0].example.segments == (
        ("<mask>",) * 3,
        ("nobody", "sleeps"),
    )


class PositionMLM:
    """A masked-LM stand-in whose top-1 fill-in names the mask's place in its row (m0, m1, ...),
    with a word piece for the second mask; it records the rows it was given."""

    class tokenizer:  # mimics MaskedLM.tokenizer
        mask_token = "<mlm-mask>"

    def __init__(self) -> None:
        self.rows = []

    def fill_masks(self, rows, batch_size=64):
        self.rows.extend(rows)
        out = []
        for row in rows:
            n = sum(word == self.tokenizer.mask_token for segment in row for word in segment)
            out.append([Fill("##m1" if j == 1 else f"m{j}", 0, 0.5) for j in range(n)])
        return out

    def token_text(self, token: str) -> str:
        return token


def test_mlm_view_fills_every_removed_word_in_one_pass():
    mlm = PositionMLM()
    at30 = remove_top(FIGURE, STEP0, Level(30))
    nothing = np.zeros(10, dtype=bool)
    views = removed_views([FIGURE, FIGURE], [at30, nothing], "mlm", mlm=mlm)
    # one row for the example with removed words, its three masks in one pass; none for the other
    assert mlm.rows == [(("the", "<mlm-mask>", "is", "<mlm-mask>", ".", "i", "really", "<mlm-mask>", "it", "."),)]
    assert text(views[0]) == "the m0 is m1 . i really m2 it ."  # the piece ##m1 becomes the word m1
    assert views[0].shown[7] == "m2" and views[0].positions == tuple(range(10))
    assert text(views[1]) == " ".join(WORDS)
    with pytest.raises(ValueError, match="removal 'mlm' needs a masked language model"):
        removed_views([FIGURE], [at30], "mlm")


def test_mlm_view_with_the_bundled_masked_lm():
    """ROAR_BERT with the bundled masked LM: removed words become its top-1 words, the others
    stay, and the fill-ins are what ``fill_masks`` gives for the masked row."""
    from core.masked_lm import MaskedLM

    mlm = MaskedLM.load("minilm-mlm")
    example = Example(segments=(("the", "acting", "is", "wonderful", "and", "the", "story", "is", "moving", "."),))
    scores = np.array([0, 0.2, 0, 0.9, 0, 0, 0, 0, 0.8, 0])
    removed = remove_top(example, scores, Level(20))  # ceil(9 * 0.2) = 2: "wonderful", "moving"
    view = removed_views([example], [removed], "mlm", mlm=mlm)[0]
    masked = tuple("[MASK]" if i in (3, 8) else w for i, w in enumerate(example.words))
    expected = [mlm.token_text(f.token).removeprefix("##") for f in mlm.fill_masks([(masked,)])[0]]
    words = view.example.words
    assert len(words) == 10 and [words[3], words[8]] == expected
    assert all(w and w != "[MASK]" for w in expected)
    assert [w for i, w in enumerate(words) if i not in (3, 8)] == [
        w for i, w in enumerate(example.words) if i not in (3, 8)
    ]
