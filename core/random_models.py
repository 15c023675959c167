"""Benchmark models of a real size with random weights, built from a config (nothing downloaded).

``random:bert-base`` is a BERT-base-size encoder (12 layers, hidden size 768, 12 heads; Devlin et
al. 2018, arXiv:1810.04805) and ``random:minilm`` one the size of the bundled all-MiniLM-L6-v2
(6 layers, hidden size 384), both over the packaged uncased wordpiece vocabulary (30,522 ids, the
vocabulary of bert-base-uncased), with a two-class head (``negative``, ``positive``) or a
masked-LM head. Their weights are drawn with a fixed seed, so two loads give one model. They
explain nothing meaningful: they exist so GPU and CPU timings reflect the sizes users run
(``python -m cli bench --model random:bert-base``) without a hub download.
"""

from __future__ import annotations

PREFIX = "random:"
SIZES: dict[str, dict[str, int]] = {
    "bert-base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "minilm": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536},
}
LABELS = ("negative", "positive")
SEED = 0


def is_random(name: str) -> bool:
    return name.startswith(PREFIX)


def random_config(name: str):
    from transformers import BertConfig

    size = name.removeprefix(PREFIX)
    if size not in SIZES:
        raise ValueError(f"unknown random model {name!r}: choose one of {', '.join(PREFIX + s for s in SIZES)}")
    return BertConfig(
        vocab_size=30522,
        max_position_embeddings=512,
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
        **SIZES[size],
    )


def random_model(name: str, architecture: str):
    """The ``random:<size>`` model with a ``sequence-classification`` or ``masked-lm`` head, in eval
    mode."""
    from transformers import BertForMaskedLM, BertForSequenceClassification

    from core.global_rng import seeded_globals

    config = random_config(name)
    cls = BertForMaskedLM if architecture == "masked-lm" else BertForSequenceClassification
    with seeded_globals(SEED):
        return cls(config).eval()
