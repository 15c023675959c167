"""A hand-built toy classifier and tokenizer with known answers (no download).

``ToyLinearClassifier`` scores a text as the sum of its tokens' embeddings times a fixed weight
matrix: ``logits = sum_t mask_t * E[x_t] @ W``. Every embedding is zero except the word
``great`` (strongly positive) and ``awful`` (strongly negative), and small values for ``good``
and ``bad``, so leave-one-out, gradients and the planted important word have hand-computable
answers. ``ToyBert`` is a tiny random BERT on the same tokenizer, for attention methods.
"""

from __future__ import annotations

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from torch import nn
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerFast,
)
from transformers.modeling_outputs import SequenceClassifierOutput

from core.loaded import LoadedClassifier
from core.masked_lm import MaskedLM

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "the",
    "a",
    "movie",
    "film",
    "was",
    "is",
    "great",
    "awful",
    "good",
    "bad",
    "and",
    "but",
    "plot",
    "actors",
    "it",
    "very",
    "not",
    ".",
    ",",
    "fun",
    "boring",
    "un",
    "##believ",
    "##able",
    "man",
    "dog",
    "sleeps",
    "runs",
    "outside",
    "inside",
    "cat",
]
VOCAB = {token: i for i, token in enumerate(SPECIALS + WORDS)}
DIM = 4


def toy_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]", max_input_chars_per_word=50))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


class ToyConfig(PretrainedConfig):
    model_type = "toy-linear"

    def __init__(self, vocab_size: int = len(VOCAB), dim: int = DIM, **kwargs) -> None:
        if "id2label" not in kwargs:
            kwargs.setdefault("num_labels", 2)
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.dim = dim
        self.max_position_embeddings = 64
        self.type_vocab_size = 2


# Embedding rows of the informative words (all other rows are zero).
PLANTED = {
    "great": [3.0, 0.0, 0.0, 0.0],
    "awful": [0.0, 3.0, 0.0, 0.0],
    "good": [1.0, 0.0, 0.0, 0.0],
    "bad": [0.0, 1.0, 0.0, 0.0],
}
# Column 0 -> class 1 (positive), column 1 -> class 0 (negative).
WEIGHT = [[-1.0, 1.0], [1.0, -1.0], [0.0, 0.0], [0.0, 0.0]]


class ToyLinearClassifier(PreTrainedModel):
    config_class = ToyConfig

    def __init__(self, config: ToyConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.weight = nn.Parameter(torch.tensor(getattr(config, "weight", None) or WEIGHT))
        with torch.no_grad():
            self.embeddings.weight.zero_()
            for word, row in PLANTED.items():
                self.embeddings.weight[VOCAB[word]] = torch.tensor(row)
            # A small bias-like signal from [CLS] so that the empty input is not exactly 50/50.
            self.embeddings.weight[VOCAB["[CLS]"]] = torch.tensor([0.2, 0.0, 0.0, 0.0])

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, inputs_embeds=None, **kwargs):
        if inputs_embeds is None:
            inputs_embeds = self.embeddings(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones(inputs_embeds.shape[:2], dtype=torch.long, device=inputs_embeds.device)
        pooled = (inputs_embeds * attention_mask.unsqueeze(-1).to(inputs_embeds.dtype)).sum(1)  # (batch, dim)
        return SequenceClassifierOutput(logits=pooled @ self.weight)


# The regression toy's one score: column 0 minus column 1 (great +3, good +1, bad -1, awful -3, [CLS] +0.2).
REGRESSION_WEIGHT = [[1.0], [-1.0], [0.0], [0.0]]
# Label names of the toys by head: the multi-label toy keeps WEIGHT, each label its own sigmoid.
HEAD_LABELS = {
    "single_label": ("negative", "positive"),
    "multi_label": ("negative", "positive"),
    "regression": ("sentiment score",),
}
PROBLEM_TYPES = {
    "single_label": None,
    "multi_label": "multi_label_classification",
    "regression": "regression",
}


def _head_config(head: str) -> dict:
    names = HEAD_LABELS[head]
    config = {"id2label": dict(enumerate(names)), "label2id": {n: i for i, n in enumerate(names)}}
    return config | ({"problem_type": PROBLEM_TYPES[head]} if PROBLEM_TYPES[head] else {})


def toy_linear(head: str = "single_label") -> LoadedClassifier:
    """The linear toy with a softmax (default), a sigmoid per label, or one regression score."""
    weight = {"weight": REGRESSION_WEIGHT} if head == "regression" else {}
    model = ToyLinearClassifier(ToyConfig(**_head_config(head), **weight)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return LoadedClassifier(
        "toy-linear" if head == "single_label" else f"toy-linear-{head}", model, toy_tokenizer(), torch.device("cpu")
    )


def tiny_bert_config(num_hidden_layers: int = 2, **settings) -> BertConfig:
    """The tiny BERT every toy transformer here is built from: hidden size 16, 2 heads, over the toy
    vocabulary; ``settings`` adds to it (labels, attention kernel, initializer range)."""
    return BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        **settings,
    )


def toy_bert_head(head: str, seed: int = 0, n_labels: int = 3) -> LoadedClassifier:
    """A tiny random BERT with a multi-label head of ``n_labels`` sigmoids or a regression head."""
    torch.manual_seed(seed)
    names = ("toxic", "insult", "threat", "other")[:n_labels] if head == "multi_label" else HEAD_LABELS[head]
    config = tiny_bert_config(
        num_labels=len(names),
        id2label=dict(enumerate(names)),
        label2id={n: i for i, n in enumerate(names)},
        problem_type=PROBLEM_TYPES[head],
        attn_implementation="eager",
    )
    model = BertForSequenceClassification(config).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return LoadedClassifier(f"toy-bert-{head}", model, toy_tokenizer(), torch.device("cpu"))


def toy_bert(seed: int = 0, attention: str = "sdpa") -> LoadedClassifier:
    """A tiny random BERT with the fused attention kernel, as the project loads its models (or
    ``attention="eager"``)."""
    torch.manual_seed(seed)
    config = tiny_bert_config(
        num_labels=2,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
        attn_implementation=attention,
    )
    model = BertForSequenceClassification(config).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return LoadedClassifier("toy-bert", model, toy_tokenizer(), torch.device("cpu"))


def toy_masked_lm(seed: int = 0) -> MaskedLM:
    """A tiny random one-layer BERT masked LM over the toy vocabulary (its weights drawn after
    ``torch.manual_seed(seed)``)."""
    torch.manual_seed(seed)
    return MaskedLM("toy-mlm", BertForMaskedLM(tiny_bert_config(1)), toy_tokenizer(), torch.device("cpu"))


def save_toy_masked_lm(folder, seed: int = 0) -> None:
    """``toy_masked_lm(seed)`` saved as a model folder (weights, config and tokenizer)."""
    toy_masked_lm(seed).model.save_pretrained(folder)
    toy_tokenizer().save_pretrained(folder)
