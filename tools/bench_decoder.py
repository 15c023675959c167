"""Time methods on a decoder classifier (GPT-2 at MiniLM's size, random weights) over many texts.

A decoder classifier reads its last real token; ``core.last_token`` lets its padded rows share a
pass. This builds the benchmark model once as a folder (``--folder``; GPT-2, 6 layers, hidden
size 384, 12 heads, over the packaged wordpiece vocabulary; ``--no-pad-id`` leaves its config
without a ``pad_token_id``, as many GPT-2 checkpoints are) and times ``api.explain_many`` on the
first ``--limit`` SST-2 dev sentences, one method at a time. To compare with code before a change,
run this script from another checkout (``git worktree add``) with ``PYTHONPATH`` set to it.

    python tools/bench_decoder.py --limit 32 [--no-pad-id] [--methods loo_empty,lime]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

METHODS = "loo_empty,occlusion,lime,integrated_gradients,saliency,grad_x_input,deeplift,attention_rollout"


def build(folder: Path, pad_id: bool) -> None:
    import torch
    from transformers import GPT2Config, GPT2ForSequenceClassification

    from core.models import load_tokenizer

    tokenizer = load_tokenizer("random:minilm")
    labels = ("negative", "positive")
    config = GPT2Config(
        vocab_size=len(tokenizer), n_embd=384, n_layer=6, n_head=12, n_positions=512,
        pad_token_id=tokenizer.pad_token_id if pad_id else None,
        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)},
    )  # fmt: skip
    torch.manual_seed(0)
    GPT2ForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=None, help="where the model is (built when missing)")
    parser.add_argument("--no-pad-id", action="store_true", help="a config without pad_token_id")
    parser.add_argument("--limit", type=int, default=32, help="the first N SST-2 dev sentences")
    parser.add_argument("--methods", default=METHODS)
    args = parser.parse_args()
    folder = args.folder or Path("results") / ("bench-gpt2-no-pad" if args.no_pad_id else "bench-gpt2")
    if not (folder / "config.json").exists():
        build(folder, pad_id=not args.no_pad_id)
    import api

    api.explain_many(str(folder), "sst2", methods=["saliency"], split="dev", limit=2)  # loaded and warm
    for method in args.methods.split(","):
        start = time.perf_counter()
        api.explain_many(str(folder), "sst2", methods=[method], split="dev", limit=args.limit)
        print(f"{method:22s} {time.perf_counter() - start:8.2f} s for {args.limit} sentences", flush=True)


if __name__ == "__main__":
    main()
