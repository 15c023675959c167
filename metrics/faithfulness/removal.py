"""Ranking, rounding and taking words away from one example, shared by every faithfulness metric
(definitions and papers in ``metrics.faithfulness``: Arras et al. 2017; ERASER, DeYoung et al.
2020; Pham et al.'s Deletion_BERT, Pham et al. 2022, arXiv 2110.11929): the variant the scorer
sees and the text shown for it, with the masked-LM fill-in chains, and the per-example context
the metrics of one attribution share."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from core.classifier import Classifier
from core.encoding import Encoded, Variant
from core.masked_lm import MaskedLM
from core.perturb import removal_variant
from core.types import Attribution, Example

REMOVALS = ("delete", "mask", "unk", "pad", "mlm")
FILL_CANDIDATES = 10
SEGMENT_JOIN = " ‖ "


def pham2022_steps(fraction: float, n_words: int) -> int:
    """Pham et al.'s number of deletion steps: ``max(2, ceil((n - 1) * fraction))``, at most n."""
    return min(n_words, max(2, math.ceil(round((n_words - 1) * fraction, 9))))


def word_count(fraction: float, n_words: int) -> int:
    """Words in ``fraction`` of a text: ``ceil(fraction * n)``, at least one, at most ``n``."""
    return min(n_words, max(1, math.ceil(round(fraction * n_words, 9))))


def ranking(scores: np.ndarray) -> tuple[int, ...]:
    """Word indices by decreasing signed score; ties keep word order."""
    return tuple(int(i) for i in np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable"))


class Remover:
    """The scored variant and the displayed text of one example with some words removed."""

    def __init__(
        self,
        clf: Classifier,
        example: Example,
        encoded: Encoded,
        removal: str,
        mlm: MaskedLM | None,
        candidates: int = FILL_CANDIDATES,
    ) -> None:
        if removal not in REMOVALS:
            raise ValueError(f"removal={removal!r} is not one of {REMOVALS}")
        if removal == "mlm" and mlm is None:
            raise ValueError("removal='mlm' needs a masked language model")
        self.clf = clf
        self.example = example
        self.encoded = encoded
        self.removal = removal
        self.mlm = mlm
        self.candidates = candidates
        self._chains: dict[tuple[int, ...], list[str | None]] = {}
        self._fill_tokens: dict[str, tuple[int, ...]] = {}

    def apply(self, sequence: tuple[int, ...], removed: Sequence[int]) -> tuple[Variant, str]:
        """The input without ``removed``, a subset of ``sequence`` (the removal order that the
        masked-LM fill-ins follow)."""
        if self.removal != "mlm":
            variant = removal_variant(self.clf, self.encoded, list(removed), self.removal)
            token = (
                None
                if self.removal == "delete"
                else self.clf.tokenizer.convert_ids_to_tokens(self.clf.special_tokens[self.removal])
            )
            return variant, self._text({w: token for w in removed})
        position = {w: i for i, w in enumerate(sequence)}
        chain = self._chain(sequence, 1 + max((position[w] for w in removed), default=-1))
        fills = {w: chain[position[w]] for w in removed}
        unk = self.clf.special_tokens["unk"]
        tokens = {w: self._tokens(fill) if fill is not None else (unk,) for w, fill in fills.items()}
        shown = {w: fill if fill is not None else self.clf.tokenizer.unk_token for w, fill in fills.items()}
        return self.encoded.perturb(tokens), self._text(shown)

    def _text(self, replaced: dict[int, str | None]) -> str:
        words = self.example.words
        segments, start = [], 0
        for segment in self.example.segments:
            shown = (replaced[i] if i in replaced else words[i] for i in range(start, start + len(segment)))
            segments.append(" ".join(word for word in shown if word is not None))
            start += len(segment)
        return SEGMENT_JOIN.join(segments)

    def _tokens(self, fill: str) -> tuple[int, ...]:
        if fill not in self._fill_tokens:
            self._fill_tokens[fill] = self.clf.word_tokens(fill)
        return self._fill_tokens[fill]

    def _chain(self, sequence: tuple[int, ...], length: int) -> list[str | None]:
        """Cumulative fill-ins for the first ``length`` words of ``sequence`` (None: none found)."""
        chain = self._chains.setdefault(sequence, [])
        words = list(self.example.words)
        for w, fill in zip(sequence, chain):
            words[w] = fill if fill is not None else self.mlm.tokenizer.unk_token
        while len(chain) < length:
            w = sequence[len(chain)]
            fill = self._fill(words, w)
            chain.append(fill)
            words[w] = fill if fill is not None else self.mlm.tokenizer.unk_token
        return chain

    def _fill(self, words: list[str], position: int) -> str | None:
        split = len(self.example.segments[0])
        segments = [words[:split], words[split:]] if self.example.is_pair else [words]
        ((fills, _),) = self.mlm.fill_words(segments, [position], k=self.candidates)
        original = self.example.words[position].lower()
        special = set(self.mlm.tokenizer.all_special_ids)
        for fill in fills:
            text = self.mlm.token_text(fill.token)
            if fill.token_id in special or fill.token.startswith("##") or not text or text.lower() == original:
                continue
            if self._tokens(text):
                return text
        return None


class Context:
    """What the metrics of one example and attribution share: the encoding, the ranking and the
    removers (with their masked-LM fill-in chains)."""

    def __init__(self, clf: Classifier, example: Example, attribution: Attribution, mlm: MaskedLM | None) -> None:
        if len(attribution.scores) != len(example.words):
            raise ValueError(f"{attribution.method}: {len(attribution.scores)} scores for {len(example.words)} words")
        self.clf = clf
        self.example = example
        self.encoded = clf.encode(example)
        self.n_words = len(example.words)
        self.descending = ranking(attribution.scores)
        self.ascending = self.descending[::-1]
        self.mlm = mlm
        self._removers: dict[tuple[str, int], Remover] = {}
        self._predicted: int | None = None

    def remover(self, removal: str, candidates: int = FILL_CANDIDATES) -> Remover:
        key = (removal, candidates)
        if key not in self._removers:
            self._removers[key] = Remover(self.clf, self.example, self.encoded, removal, self.mlm, candidates)
        return self._removers[key]

    def predicted(self) -> int:
        """The model's class for the unperturbed input (one extra pass, asked for only when
        needed)."""
        if self._predicted is None:
            self._predicted = self.clf.head.predicted(self.clf.predict_proba([self.encoded.variant])[0])
        return self._predicted
