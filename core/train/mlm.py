"""Train and measure the masked LM (``mlm``): its sentences, BERT masking, the training run and
its held-out figures."""

from __future__ import annotations

import random
import time
from pathlib import Path

import torch
from torch import nn

from core import datasets as ds
from core.models import base_model, encoder_path, load_masked_lm, load_tokenizer
from core.train.adapter import BASE, MLM_DECODER, _adapt, save_adapter
from core.train.loop import _autocast, _batches, _log, _optimize, _schedule
from core.train.tasks import TrainConfig


def mlm_sentences(data_root: str | None, limit: int | None = None) -> list[tuple[str, ...]]:
    """Distinct training sentences: SST-2 train (5+ words), e-SNLI test, ERASER movies train."""
    seen: set[tuple[str, ...]] = set()
    out = []
    sources = [("sst2", "train"), ("esnli", "test"), ("movies", "train")]
    for name, split in sources:
        for example in ds.load_examples(name, split, data_root):
            for segment in example.segments:
                words = tuple(w.lower() for w in segment)
                if len(words) >= 5 and words not in seen:
                    seen.add(words)
                    out.append(words)
    random.Random(0).shuffle(out)
    return out[:limit] if limit else out


def mask_tokens(
    input_ids: torch.Tensor, special: torch.Tensor, tokenizer, generator: torch.Generator, rate: float = 0.15
):
    """BERT masking: choose ``rate`` of the non-special wordpieces; 80% [MASK], 10% random, 10%
    kept."""
    labels = input_ids.clone()
    chosen = (torch.rand(input_ids.shape, generator=generator) < rate) & ~special
    labels[~chosen] = -100
    masked = input_ids.clone()
    roll = torch.rand(input_ids.shape, generator=generator)
    masked[chosen & (roll < 0.8)] = tokenizer.mask_token_id
    randomize = chosen & (roll >= 0.8) & (roll < 0.9)
    masked[randomize] = torch.randint(len(tokenizer), input_ids.shape, generator=generator)[randomize]
    return masked, labels


def _mlm_loss(model: nn.Module, enc: dict, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy at the masked positions only: the vocabulary head runs on those rows alone."""
    hidden = model.bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
    where = labels != -100
    logits = model.cls(hidden[where])  # (n_masked, vocab)
    return nn.functional.cross_entropy(logits, labels[where])


def train_mlm(cfg: TrainConfig, data_root: str | None, out: Path) -> dict:
    sentences = mlm_sentences(data_root, cfg.train_limit)
    info = {"architecture": "masked-lm", "task": "mlm", "max_length": cfg.max_length, "base": BASE}
    torch.manual_seed(cfg.seed)
    # The encoder's LayerNorms are tiny and help the sentence-embedding encoder relearn token
    # prediction: they train in full next to the head (``lora_config``).
    model, trainable = _adapt(base_model(info), cfg, info["architecture"])
    tokenizer = load_tokenizer(encoder_path())
    # The output bias trains as ``scale * lora_B.bias`` (``MLM_DECODER``): a learning rate divided
    # and a weight decay multiplied by ``scale`` give it the steps of a plain trainable bias.
    decoder = model.base_model.model.get_submodule(MLM_DECODER)
    bias, scale = decoder.lora_B["default"].bias, decoder.scaling["default"]
    groups = [
        {"params": [p for p in trainable if p is not bias]},
        {"params": [bias], "lr": cfg.lr / scale, "weight_decay": cfg.weight_decay * scale},
    ]
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = _schedule(optimizer, cfg.steps, cfg.warmup)
    model.train()
    rng = random.Random(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    start = time.time()
    for step, idx in enumerate(_batches(len(sentences), cfg.batch_size, cfg.steps, rng), 1):
        enc = tokenizer(
            [list(sentences[i]) for i in idx],
            is_split_into_words=True,
            truncation=True,
            max_length=cfg.max_length,
            padding=True,
            return_tensors="pt",
            return_special_tokens_mask=True,
        )
        special = enc.pop("special_tokens_mask").bool() | (enc["attention_mask"] == 0)
        masked, labels = mask_tokens(enc["input_ids"], special, tokenizer, generator)
        if not (labels != -100).any():
            continue
        with _autocast(cfg):
            loss = _mlm_loss(model, {"input_ids": masked, "attention_mask": enc["attention_mask"]}, labels)
        _optimize(loss, trainable, optimizer, scheduler)
        if step % 100 == 0 or step == cfg.steps:
            _log(f"step {step}/{cfg.steps} loss {loss.item():.4f} {time.time() - start:.0f}s")
    train_s = time.time() - start
    save_adapter(model, out, info)
    merged = load_masked_lm(str(out))
    held_out = [
        tuple(w.lower() for w in e.words) for e in ds.load_examples("sst2", "dev", data_root, limit=cfg.eval_limit)
    ]
    # The held-out masks are drawn with a fixed seed, so runs with different seeds are compared on the same words.
    figures = evaluate_mlm(merged, tokenizer, held_out)
    return {
        **figures,
        "train_sentences": len(sentences),
        "train_seconds": round(train_s, 1),
        "report_split": "sst2/dev",
        "report_examples": len(held_out),
    }


@torch.inference_mode()
def evaluate_mlm(
    model: nn.Module, tokenizer, sentences: list[tuple[str, ...]], seed: int = 0, batch_size: int = 64
) -> dict:
    """Standard masked-LM accuracy (15%, 80/10/10) and one-content-word top-1/top-10 accuracy.

    The content word is a random alphabetic word of 3+ letters that is a single wordpiece (a
    word is replaced by one [MASK], as Input Marginalization does); top-10 mass is the average
    probability the model puts on its 10 best fill-ins at that position.
    """
    generator = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    correct = total = 0
    for i in range(0, len(sentences), batch_size):
        enc = tokenizer(
            [list(s) for s in sentences[i : i + batch_size]],
            is_split_into_words=True,
            truncation=True,
            max_length=128,
            padding=True,
            return_tensors="pt",
            return_special_tokens_mask=True,
        )
        special = enc.pop("special_tokens_mask").bool() | (enc["attention_mask"] == 0)
        masked, labels = mask_tokens(enc["input_ids"], special, tokenizer, generator)
        where = labels != -100
        hidden = model.bert(input_ids=masked, attention_mask=enc["attention_mask"]).last_hidden_state
        predicted = model.cls(hidden[where]).argmax(-1)
        correct += int((predicted == labels[where]).sum())
        total += int(where.sum())
    vocab = tokenizer.get_vocab()
    top1 = top10 = mass = 0.0
    counted = 0
    samples = []
    for words in sentences:
        candidates = [j for j, w in enumerate(words) if w.isalpha() and len(w) >= 3 and w in vocab]
        if not candidates:
            continue
        j = rng.choice(candidates)
        masked_words = list(words)
        masked_words[j] = tokenizer.mask_token
        enc = tokenizer(masked_words, is_split_into_words=True, truncation=True, max_length=128, return_tensors="pt")
        position = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
        probs = model(**enc).logits[0, position].softmax(-1)
        best = probs.topk(10)
        ids = best.indices.tolist()
        top1 += ids[0] == vocab[words[j]]
        top10 += vocab[words[j]] in ids
        mass += float(best.values.sum())
        counted += 1
        if len(samples) < 6:
            samples.append(
                {
                    "text": " ".join(masked_words),
                    "original": words[j],
                    "fills": tokenizer.convert_ids_to_tokens(ids[:5]),
                }
            )
    return {
        "mlm_accuracy": round(correct / max(1, total), 4),
        "content_top1": round(top1 / max(1, counted), 4),
        "content_top10": round(top10 / max(1, counted), 4),
        "top10_mass": round(mass / max(1, counted), 4),
        "content_words": counted,
        "samples": samples,
    }
