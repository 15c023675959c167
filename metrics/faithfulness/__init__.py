"""Faithfulness metrics: take away the words an explanation ranks highest and watch the prediction.

* ``deletion`` (Arras et al. 2017; Pham et al. 2022, A.2): remove words one at a time in order of
  decreasing attribution, up to ``fraction`` of the words (default 20%, Pham et al. 2022; 1.0 draws
  the full curve). The curve is the probability of the explained class (``attribution.target``)
  after each step, starting with the original input. Lower area is better.
* ``insertion`` (Arras et al. 2017): start from the input with every word removed and put the
  words back in the same order, up to ``fraction`` of them. Higher area is better.
* ``comprehensiveness`` and ``sufficiency`` (DeYoung et al. 2020, ERASER; the thesis "Assessing the
  Interpretability of Large Language Models", Oxford MSc, 2022, section 2.2.3.2): the drop
  ``p(x) - p(x')`` in the explained class's probability when the top-k% words are removed
  (comprehensiveness, higher is better) or are the only ones kept (sufficiency, lower is better),
  averaged over the bins {1, 5, 10, 20, 50}% (ERASER's AOPC, divided by the number of bins; the
  ERASER and AML code divide by |B| + 1, counting an empty 0% bin, which is |B| / (|B| + 1) = 5/6
  of the value here) or over MaRC's 19 bins 5%, 10%, ..., 95% (Brinner & Zarrieß 2023, Eq. 10-11).
* ``log_odds`` (Shrikumar et al. 2017, as used by AML, Barkan et al. 2024): ``ln p(x') - ln p(x)``
  with the top 20% words replaced by [MASK]; lower (more negative) is better.

The explained output is the head's (``core.heads``, through ``Classifier.predict_proba``): the
softmax probability of a class, the sigmoid probability of one label, or a regression head's raw
score, for which the curves and drops measure the change in score (not bounded to [0, 1]) and
``log_odds`` is refused.

Conventions shared by all five:

* Ranking: words are sorted by their signed score, highest first; ties keep word order.
  Sufficiency removes the complement of the top-k words; for the masked-LM mode it removes them
  in the reverse ranking (least important first).
* Rounding: k% of a text of n words is ``min(n, max(1, ceil(k * n)))`` words, so every bin and
  every curve takes away at least one word even on a four-word text (a 1% bin on a 20-word
  SST-2 sentence removes one word, the 50% bin of a 5-word text removes three).
* Area: a curve of L steps (L words removed or inserted, by the rule above) has the points
  ``x_j = j / L``, j = 0..L, so x runs over [0, 1] whatever the text's length and budget, and
  the area is the trapezoid rule over those points: it is the mean probability along the curve
  and lies in [0, 1].
* Removal modes: ``delete`` drops the word's subwords, ``mask`` / ``unk`` / ``pad`` put one
  [MASK] / [UNK] / [PAD] token in place of the word, ``mlm`` puts the masked LM's best fill-in
  that is not the original word (Pham et al.'s Deletion_BERT). Fill-ins are cumulative: each newly
  removed word is masked in the text where the words removed before it already hold their
  fill-ins, and the highest-ranked of the top ten candidates that is a whole word (not a ``##``
  piece or special token) and differs from the original word (ignoring case) is used; when none
  of the ten qualifies, [UNK] is used. The original word is never put back. Each filled word
  costs one masked-LM pass, one after the other: a deletion curve of L steps needs L passes, an
  insertion curve (which starts from the fully filled text) one per word of the text.

Deletion, Deletion_BERT and insertion also take ``convention="pham2022"``, which follows Pham et
al.'s code (Kim et al. 2020's ``src/evaluation.py``; arXiv 2010.13984 for IM) so that a figure
can be set beside its Table 1: L = ``max(2, ceil((n - 1) * fraction))`` steps (at most n), the
unperturbed input left off the curve, the points at ``x = 1/L, ..., L/L`` (the probability after
1..L words removed), the trapezoid area over them; with ``removal="mlm"`` each word is replaced by
the highest-ranked of the masked LM's top-2 candidates that differs from the original word
(special tokens skipped, [UNK] when neither qualifies), cumulatively; ``correct_only`` skips
examples the model gets wrong (the paper's optional filter). Insertion under this convention puts
1..L words back with the same step rule and grid (the paper defines no insertion; by analogy).
The default (``ours``) is unchanged.

Every variant of every step of every requested metric for one example and attribution goes to
the scorer as one batch (``score_many``), so shared variants (deletion steps and
comprehensiveness bins, the original input) are scored once; a dataset group's examples plan
their variants first (``plan_attributions``) and share one scorer call (``score_examples``).
``extras["inputs"]`` holds the input text at each curve point, with removed words shown as the
token that replaced them.

The family is split by job: ``removal`` (ranking, rounding and removing words of one example),
``plans`` (each metric's parameters and the variants it needs), ``registered`` (the registry
entries and ``score_many``) and ``curves`` (a slice's mean curve). The names below are its
interface.
"""

from __future__ import annotations

from metrics.faithfulness.curves import mean_curve
from metrics.faithfulness.plans import (
    BIN_SETS,
    CONVENTIONS,
    PHAM2022_FILL_CANDIDATES,
    PROBABILITY_ONLY,
    BinParams,
    CurveParams,
    LogOddsParams,
    PlanCost,
    check_head,
    plan_cost,
)
from metrics.faithfulness.registered import (
    METRIC_KEYS,
    METRICS,
    ExamplePlans,
    plan_attributions,
    score_attributions,
    score_examples,
    score_many,
)
from metrics.faithfulness.removal import (
    FILL_CANDIDATES,
    REMOVALS,
    SEGMENT_JOIN,
    Remover,
    pham2022_steps,
    ranking,
    word_count,
)

__all__ = [
    "BIN_SETS",
    "CONVENTIONS",
    "FILL_CANDIDATES",
    "METRICS",
    "METRIC_KEYS",
    "PHAM2022_FILL_CANDIDATES",
    "PROBABILITY_ONLY",
    "REMOVALS",
    "SEGMENT_JOIN",
    "BinParams",
    "CurveParams",
    "ExamplePlans",
    "LogOddsParams",
    "PlanCost",
    "Remover",
    "check_head",
    "mean_curve",
    "pham2022_steps",
    "plan_attributions",
    "plan_cost",
    "ranking",
    "score_attributions",
    "score_examples",
    "score_many",
    "word_count",
]
