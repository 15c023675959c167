"""``python -m cli fill``: a masked LM's top-k fill-ins for one [MASK] per text."""

from __future__ import annotations

import argparse

from cli.common import positive_int, print_json
from cli.texts import read_jsonl

COMMAND = "fill"
HELP = "top-k fill-ins of a masked language model"


def run(args: argparse.Namespace) -> int:
    from core.masked_lm import MaskedLM

    if bool(args.text) == bool(args.texts):
        raise ValueError("give either --text or --texts")
    if args.text:
        texts = [args.text]
    else:
        texts = [record["text"] for record in read_jsonl(args.texts)]
    mlm = MaskedLM.load(args.model)
    vocabulary = min(len(mlm.tokenizer), mlm.model.config.vocab_size)
    if args.k > vocabulary:
        raise ValueError(f"--k {args.k} is more than the {vocabulary} tokens of {args.model}'s vocabulary")
    # Accept the generic "[MASK]" in texts for any masked LM.
    texts = [t.replace("[MASK]", mlm.tokenizer.mask_token) for t in texts]
    fills = mlm.fill_texts(texts, k=args.k)
    print_json(
        {
            "model": args.model,
            "examples": [
                {"text": t, "fills": [{"token": f.token, "probability": f.probability} for f in row]}
                for t, row in zip(texts, fills)
            ],
        }
    )
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    parser.add_argument(
        "--model", default="minilm-mlm", help="masked LM: bundled name, hub id or folder (default: minilm-mlm)"
    )
    parser.add_argument("--text", help='a text with one [MASK], e.g. "a [MASK] film"')
    parser.add_argument("--texts", help="JSON Lines file with 'text' (one [MASK] each)")
    parser.add_argument(
        "--k", type=positive_int, default=10, help="fill-ins per text, at most the vocabulary size (default: 10)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    parser.set_defaults(run=run)
