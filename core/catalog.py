"""The models the app offers by name: the bundled MiniLM deltas and well-known hub checkpoints.

``label_names`` are in the model's output order, so index ``i`` of the logits is
``label_names[i]``. Where that order matches a dataset's labels, ``dataset`` names the dataset
(its gold labels then index the same classes); hub models are downloaded on first use, so they
need network access once.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.datasets import ESNLI_LABELS, HATEXPLAIN_COMMUNITIES, HATEXPLAIN_LABELS, MOVIES_LABELS, SST2_LABELS

# The one output of the bundled HateXplain regression head (``core.train_heads``).
HATEXPLAIN_SCORE_LABEL = "hateful or offensive (share of annotators)"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    source: str  # "bundled" (assets/models/<name>) or "hub"
    task: str  # what it does: "sst2", "esnli" (NLI pairs), "movies", "hatexplain" or "mlm"
    kind: str  # "classifier" or "masked-lm"
    label_names: tuple[str, ...] = ()
    pair: bool = False  # takes a (premise, hypothesis) pair
    dataset: str | None = None  # dataset whose label order the model shares
    description: str = ""


def _classifier(name, source, task, labels, description, pair=False, dataset=None) -> CatalogEntry:
    return CatalogEntry(name, source, task, "classifier", tuple(labels), pair, dataset, description)


def _masked_lm(name, source, description) -> CatalogEntry:
    return CatalogEntry(name, source, "mlm", "masked-lm", (), False, None, description)


CATALOG: tuple[CatalogEntry, ...] = (
    # bundled: LoRA deltas trained in this project (assets/models/<name>)
    _classifier(
        "minilm-sst2", "bundled", "sst2", SST2_LABELS, dataset="sst2",
        description="MiniLM fine-tuned on SST-2 (locally trained): movie-review sentence sentiment.",
    ),
    _classifier(
        "minilm-esnli", "bundled", "esnli", ESNLI_LABELS, pair=True, dataset="esnli",
        description="MiniLM fine-tuned on e-SNLI (locally trained): premise/hypothesis inference.",
    ),
    _classifier(
        "minilm-movies", "bundled", "movies", MOVIES_LABELS, dataset="movies",
        description="MiniLM fine-tuned on ERASER movie-review sentences (locally trained).",
    ),
    _classifier(
        "minilm-hatexplain", "bundled", "hatexplain", HATEXPLAIN_LABELS, dataset="hatexplain",
        description="MiniLM fine-tuned on HateXplain (locally trained): hate speech / normal / offensive.",
    ),
    _classifier(
        "minilm-hatexplain-score", "bundled", "hatexplain", (HATEXPLAIN_SCORE_LABEL,),
        description="MiniLM with a regression head on HateXplain (locally trained): the share of "
        "annotators who marked a post hateful or offensive, a score in [0, 1].",
    ),
    _classifier(
        "minilm-hatexplain-targets", "bundled", "hatexplain", HATEXPLAIN_COMMUNITIES,
        description="MiniLM with a multi-label head on HateXplain (locally trained): one sigmoid per "
        "target community the post names.",
    ),
    _masked_lm(
        "minilm-mlm", "bundled",
        "MiniLM-MLM (locally trained): masked-word predictions for fill-in attribution methods.",
    ),
    # hub classifiers (label names in output order, as their configs and cards publish them)
    _classifier(
        "textattack/bert-base-uncased-SST-2", "hub", "sst2", SST2_LABELS, dataset="sst2",
        description="BERT-base (uncased) fine-tuned on SST-2 by TextAttack; config labels "
        "LABEL_0/LABEL_1 = negative/positive.",
    ),
    _classifier(
        "distilbert-base-uncased-finetuned-sst-2-english", "hub", "sst2", SST2_LABELS, dataset="sst2",
        description="DistilBERT (uncased) fine-tuned on SST-2; config labels NEGATIVE/POSITIVE.",
    ),
    _classifier(
        "textattack/roberta-base-SST-2", "hub", "sst2", SST2_LABELS, dataset="sst2",
        description="RoBERTa-base fine-tuned on SST-2 by TextAttack; config labels "
        "LABEL_0/LABEL_1 = negative/positive.",
    ),
    _classifier(
        "cross-encoder/nli-distilroberta-base", "hub", "esnli", ("contradiction", "entailment", "neutral"),
        pair=True,
        description="DistilRoBERTa cross-encoder trained on SNLI and MultiNLI; outputs in its config's "
        "order contradiction, entailment, neutral (not e-SNLI's: map gold labels by name).",
    ),
    _classifier(
        "Hate-speech-CNERG/bert-base-uncased-hatexplain", "hub", "hatexplain", HATEXPLAIN_LABELS,
        dataset="hatexplain",
        description="BERT-base (uncased) trained on HateXplain by its authors; config labels "
        "'hate speech', 'normal', 'offensive', in HateXplain's class order.",
    ),
    # hub masked language models
    _masked_lm("bert-base-uncased", "hub", "BERT-base (uncased) masked language model."),
    _masked_lm("roberta-base", "hub", "RoBERTa-base masked language model."),
    _masked_lm("distilbert-base-uncased", "hub", "DistilBERT (uncased) masked language model."),
)  # fmt: skip


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
