"""The models the app offers by name: the bundled MiniLM deltas and well-known hub checkpoints.

``label_names`` are in the model's output order, so index ``i`` of the logits is
``label_names[i]``. Where that order matches a dataset's labels, ``dataset`` names the dataset
(its gold labels then index the same classes); hub models are downloaded on first use, so they
need network access once.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.datasets import ESNLI_LABELS, HATEXPLAIN_LABELS, MOVIES_LABELS, SST2_LABELS


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    source: str  # "bundled" (assets/models/<name>) or "hub"
    task: str  # "sst2", "esnli", "movies", "hatexplain", "nli" or "mlm"
    kind: str  # "classifier" or "masked-lm"
    label_names: tuple[str, ...] = ()
    pair: bool = False  # takes a (premise, hypothesis) pair
    dataset: str | None = None  # dataset whose label order the model shares
    description: str = ""

    @property
    def is_classifier(self) -> bool:
        return self.kind == "classifier"


CATALOG: tuple[CatalogEntry, ...] = (
    # ------------------------------------------------------------ bundled (trained in this project)
    CatalogEntry(
        "minilm-sst2", "bundled", "sst2", "classifier", SST2_LABELS, False, "sst2",
        "MiniLM fine-tuned on SST-2 (locally trained): movie-review sentence sentiment.",
    ),
    CatalogEntry(
        "minilm-esnli", "bundled", "esnli", "classifier", ESNLI_LABELS, True, "esnli",
        "MiniLM fine-tuned on e-SNLI (locally trained): premise/hypothesis inference.",
    ),
    CatalogEntry(
        "minilm-movies", "bundled", "movies", "classifier", MOVIES_LABELS, False, "movies",
        "MiniLM fine-tuned on ERASER movie-review sentences (locally trained).",
    ),
    CatalogEntry(
        "minilm-hatexplain", "bundled", "hatexplain", "classifier", HATEXPLAIN_LABELS, False, "hatexplain",
        "MiniLM fine-tuned on HateXplain (locally trained): hate speech / normal / offensive.",
    ),
    CatalogEntry(
        "minilm-mlm", "bundled", "mlm", "masked-lm", (), False, None,
        "MiniLM-MLM (locally trained): masked-word predictions for fill-in attribution methods.",
    ),
    # ------------------------------------------------------------ hub classifiers
    CatalogEntry(
        "textattack/bert-base-uncased-SST-2", "hub", "sst2", "classifier", SST2_LABELS, False, "sst2",
        "BERT-base (uncased) fine-tuned on SST-2 by TextAttack; config labels LABEL_0/LABEL_1 = negative/positive.",
    ),
    CatalogEntry(
        "distilbert-base-uncased-finetuned-sst-2-english", "hub", "sst2", "classifier", SST2_LABELS, False, "sst2",
        "DistilBERT fine-tuned on SST-2; config labels NEGATIVE/POSITIVE.",
    ),
    CatalogEntry(
        "textattack/roberta-base-SST-2", "hub", "sst2", "classifier", SST2_LABELS, False, "sst2",
        "RoBERTa-base fine-tuned on SST-2 by TextAttack; config labels LABEL_0/LABEL_1 = negative/positive.",
    ),
    CatalogEntry(
        "cross-encoder/nli-distilroberta-base", "hub", "nli", "classifier",
        ("contradiction", "entailment", "neutral"), True, None,
        "DistilRoBERTa cross-encoder trained on SNLI and MultiNLI; outputs in the config's order "
        "contradiction, entailment, neutral (not e-SNLI's order: map labels by name).",
    ),
    CatalogEntry(
        "Hate-speech-CNERG/bert-base-uncased-hatexplain", "hub", "hatexplain", "classifier",
        HATEXPLAIN_LABELS, False, "hatexplain",
        "BERT-base (uncased) trained on HateXplain by its authors; config labels "
        "'hate speech', 'normal', 'offensive' in HateXplain's class order.",
    ),
    # ------------------------------------------------------------ hub masked LMs
    CatalogEntry(
        "bert-base-uncased", "hub", "mlm", "masked-lm", (), False, None,
        "BERT-base (uncased) masked language model.",
    ),
    CatalogEntry(
        "roberta-base", "hub", "mlm", "masked-lm", (), False, None,
        "RoBERTa-base masked language model.",
    ),
    CatalogEntry(
        "distilbert-base-uncased", "hub", "mlm", "masked-lm", (), False, None,
        "DistilBERT (uncased) masked language model.",
    ),
)


def classifiers(source: str | None = None) -> list[CatalogEntry]:
    """Classifier entries, optionally only ``bundled`` or ``hub`` ones."""
    return [e for e in CATALOG if e.kind == "classifier" and (source is None or e.source == source)]


def masked_lms(source: str | None = None) -> list[CatalogEntry]:
    """Masked-LM entries, optionally only ``bundled`` or ``hub`` ones."""
    return [e for e in CATALOG if e.kind == "masked-lm" and (source is None or e.source == source)]


def find(name: str) -> CatalogEntry | None:
    """The entry called ``name`` (exact, then case-insensitive), or None."""
    for entry in CATALOG:
        if entry.name == name:
            return entry
    lowered = name.lower()
    return next((e for e in CATALOG if e.name.lower() == lowered), None)


def for_dataset(dataset: str) -> list[CatalogEntry]:
    """Classifiers whose label order matches ``dataset``."""
    return [e for e in CATALOG if e.kind == "classifier" and e.dataset == dataset]
