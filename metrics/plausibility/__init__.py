"""Plausibility: how well an attribution agrees with the words humans highlighted.

Definitions, by source:

- Pham et al. 2022 ("Double Trouble", agreement with human highlights): negative scores are
  set to zero, the map is divided by its maximum and binarized at a threshold ``tau`` (a word is
  selected when its scaled score is at least ``tau``); IoU, precision, recall and F1 then compare
  the selected words with the human mask. ``best_threshold`` searches tau over 0.05, 0.10, ...,
  0.95 for a slice of a dataset; ``coverage`` is the share of words selected, next to the share
  the humans selected. Empty-set rules follow the authors' code: with nothing selected,
  precision, recall, IoU and F1 are 0.
- ERASER (DeYoung et al. 2020, arXiv:1911.03429), as used by Brinner & Zarrieß 2023 (MaRC): token F1
  of the top-k words (k = the human rationale's length unless given), computed per instance as
  ERASER's ``score_hard_rationale_predictions``; IOU-F1 as ERASER's ``partial_match_score`` at IoU
  0.5: a predicted span (a contiguous run of selected words, never crossing from premise to
  hypothesis) is a true positive when its best IoU with a human span is at least 0.5; precision =
  true positives / predicted spans, recall = true positives / human spans, F1 of the two (0 when
  either is 0). AUPRC is ERASER's ``_auprc``: the trapezoid area under scikit-learn's
  precision-recall curve of the signed scores; the average precision (MaRC's "mAP") is in extras.
- The thesis "Assessing the Interpretability of Large Language Models" (Oxford MSc, 2022,
  §2.2.3.1, with Bastings et al.'s mean rank): ground-truth overlap is the share of the
  top-|L| words (|L| = number of human words) that the humans marked -- the printed formula asks
  for an exact set match, which is in extras as ``exact_match``; the fraction is what the thesis's
  e-SNLI numbers (random baseline 20%) measure. Mean rank is the smallest r / n such that the top
  r words hold every human word (lower is better; 1/n at best).

Token F1, IOU-F1 and AUPRC take a ``convention``: ``"ours"`` (default) scores a sentence pair as
one document; ``"eraser"`` scores the premise and the hypothesis as two documents and averages
over documents as ERASER's scoring code does (metrics/eraser_documents.py; a slice's figure then
pools the documents of all examples, ``eraser_documents.document_summary``). Every result of
these three says which in ``extras["convention"]``.

Rankings sort by signed score, highest first; ties keep word order. Human spans are the
contiguous runs of the human mask within one segment.

Which human mask (param ``annotator``): ``"majority"`` (``Example.rationale``), ``"any"`` (the
union of the annotators' masks) or an index into ``Example.rationales`` (the annotators who gave a
mask, in the dataset's order).

Empty human rationales (HateXplain posts judged normal, an annotator index with no mask, an
all-zero mask) follow one rule in every metric here: the value is NaN and ``extras["skipped"]``
says why; nothing is raised. ``summarize`` counts them apart from the mean. Malformed input (an
unknown ``annotator``, scores of the wrong length, non-finite scores) raises ``ValueError``.

The family is split by job: ``masks`` (the human mask and the words a map selects), ``scores``
(one map against one mask), ``registered`` (the registry entries and their parameters) and
``slices`` (a dataset slice). The names below are its interface.
"""

from __future__ import annotations

from metrics.plausibility.masks import binarize, human_mask, ranking, spans, top_k
from metrics.plausibility.registered import (
    ANNOTATOR_HELP,
    CEILING_KEYS,
    KEYS,
    METRICS,
    THRESHOLD_KEYS,
    EraserRankingParams,
    EraserSelectionParams,
    RankingParams,
    SelectionParams,
    ThresholdParams,
    select,
)
from metrics.plausibility.scores import SPAN_IOU, auprc, overlap, rank_scores, span_f1
from metrics.plausibility.slices import (
    MICRO_KEYS,
    THRESHOLDS,
    ThresholdSearch,
    at_threshold,
    best_threshold,
    human_ceiling,
    micro_f1,
    reader_agreement,
    slice_ceiling,
    summarize,
    threshold_values,
)

__all__ = [
    "ANNOTATOR_HELP",
    "CEILING_KEYS",
    "KEYS",
    "METRICS",
    "MICRO_KEYS",
    "SPAN_IOU",
    "THRESHOLDS",
    "THRESHOLD_KEYS",
    "EraserRankingParams",
    "EraserSelectionParams",
    "RankingParams",
    "SelectionParams",
    "ThresholdParams",
    "ThresholdSearch",
    "at_threshold",
    "auprc",
    "best_threshold",
    "binarize",
    "human_ceiling",
    "human_mask",
    "micro_f1",
    "overlap",
    "rank_scores",
    "ranking",
    "reader_agreement",
    "select",
    "slice_ceiling",
    "span_f1",
    "spans",
    "summarize",
    "threshold_values",
    "top_k",
]
