"""Masked language model wrapper: the top-k fill-ins, with probabilities, for a masked word.

Used by Input Marginalization (Kim et al. 2020; Pham et al. 2022), LIME with masked-LM fill-ins and
masked-LM deletion curves. The vocabulary head runs only at the masked positions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from core.devices import best_device, chosen_device, chunk_rows
from core.encoding import token_text, word_token_ids


@dataclass(frozen=True)
class Fill:
    token: str  # the masked LM's token (may be a ``##`` word piece)
    token_id: int
    probability: float


class MaskedLM:
    """A shared, read-only masked LM. ``fill_words`` masks one word at a time with one mask
    token."""

    def __init__(self, name: str, model: torch.nn.Module, tokenizer, device: torch.device | None = None) -> None:
        self.name = name
        self.device = device or best_device()
        self.model = model.to(self.device).eval()
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)
        self.tokenizer = tokenizer
        self.forward_passes = 0

    @classmethod
    def load(cls, name_or_path: str, device: str | torch.device | None = None) -> MaskedLM:
        from core.models import check_vocabulary, load_masked_lm, load_tokenizer

        try:
            model = load_masked_lm(name_or_path)
            tokenizer = load_tokenizer(name_or_path)
            check_vocabulary(model, tokenizer)
        except (OSError, ValueError, KeyError) as error:
            raise ValueError(f"cannot load {name_or_path!r} as a masked language model: {error}") from error
        if tokenizer.mask_token_id is None:
            raise ValueError(f"{name_or_path!r} has no mask token")
        return cls(name_or_path, model, tokenizer, chosen_device(device) if device else None)

    def _mask_logits(self, enc: dict[str, torch.Tensor]) -> torch.Tensor:
        """Vocabulary logits at the mask positions only, shape (n_masks, vocab).

        BERT (``cls``) and RoBERTa (``lm_head``) heads run on the masked rows alone; other
        architectures fall back to the full model output."""
        where = enc["input_ids"] == self.tokenizer.mask_token_id
        head = getattr(self.model, "cls", None) or getattr(self.model, "lm_head", None)
        self.forward_passes += int(enc["input_ids"].shape[0])
        if head is None:
            return self.model(**enc).logits[where]
        hidden = getattr(self.model, self.model.base_model_prefix)(**enc).last_hidden_state
        return head(hidden[where])

    def _chunks(
        self, rows: Sequence[Sequence[Sequence[str]]], batch_size: int
    ) -> Iterator[tuple[int, dict, list[int]]]:
        """(first row, tokenized chunk, mask tokens per row) over rows of one or two segments of
        words: at most ``batch_size`` rows, fewer for long texts (``core.devices.chunk_rows``). A
        row whose mask tokens the model's length cut off is refused: its fill-ins would go
        missing."""
        start, size = 0, batch_size
        while start < len(rows):
            chunk = rows[start : start + size]
            seconds = [list(row[1]) for row in chunk] if len(chunk[0]) == 2 else None
            enc = self.tokenizer(
                [list(row[0]) for row in chunk],
                seconds,
                is_split_into_words=True,
                truncation=True,
                padding=True,
                return_tensors="pt",
            )
            n = min(len(chunk), chunk_rows(batch_size, enc["input_ids"].shape[1]))
            counts = (enc["input_ids"][:n] == self.tokenizer.mask_token_id).sum(dim=1).tolist()
            expected = [sum(w == self.tokenizer.mask_token for segment in row for w in segment) for row in chunk[:n]]
            if counts != expected:
                raise ValueError(f"{self.name}: masks lost to truncation ({counts} of {expected} per row)")
            yield start, {key: value[:n] for key, value in enc.items()}, counts
            start, size = start + n, n if n < len(chunk) else batch_size  # tokenize no more rows than fit next time

    @torch.inference_mode()
    def fill_words(
        self,
        segments: Sequence[Sequence[str]],
        positions: Sequence[int],
        k: int = 10,
        batch_size: int = 64,
    ) -> list[tuple[list[Fill], float | None]]:
        """For each flat word position: its top-k fill-ins when that word alone is replaced by
        one mask token, and the probability of the original word (None when the original word
        is not a single token of this vocabulary)."""
        words = [w for s in segments for w in s]
        split = len(segments[0])
        results: list[tuple[list[Fill], float | None]] = []
        rows = []
        for position in positions:
            masked = list(words)
            masked[position] = self.tokenizer.mask_token
            rows.append(masked)
        pieces = [(r[:split], r[split:]) if len(segments) == 2 else (r,) for r in rows]
        for start, enc, _ in self._chunks(pieces, batch_size):
            enc = {key: value.to(self.device) for key, value in enc.items()}
            probs = torch.softmax(self._mask_logits(enc).float(), dim=-1)  # (rows, vocab), one mask per row
            top = probs.topk(k, dim=-1)
            for row, position in enumerate(positions[start : start + len(probs)]):
                ids = top.indices[row].tolist()
                tokens = self.tokenizer.convert_ids_to_tokens(ids)
                fills = [Fill(t, i, float(p)) for t, i, p in zip(tokens, ids, top.values[row].tolist())]
                original = word_token_ids(self.tokenizer, words[position])
                single = len(original) == 1  # the word as the text's tokens would spell it
                results.append((fills, float(probs[row, original[0]]) if single else None))
        return results

    @torch.inference_mode()
    def fill_masks(self, rows: Sequence[Sequence[Sequence[str]]], batch_size: int = 64) -> list[list[Fill]]:
        """The top-1 fill-in of every mask token in each row, left to right, all masks filled in
        one pass per row (LIME with masked-LM fill-ins). A row is one or two segments of words in
        which some words are this model's mask token."""
        results: list[list[Fill]] = []
        for _, enc, counts in self._chunks(rows, batch_size):
            enc = {key: value.to(self.device) for key, value in enc.items()}
            best = torch.softmax(self._mask_logits(enc).float(), dim=-1).max(dim=-1)  # (masks in the chunk,)
            ids = best.indices.tolist()
            fills = [
                Fill(t, i, float(p))
                for t, i, p in zip(self.tokenizer.convert_ids_to_tokens(ids), ids, best.values.tolist())
            ]
            for count in counts:
                results.append(fills[:count])
                fills = fills[count:]
        return results

    @torch.inference_mode()
    def fill_texts(self, texts: Sequence[str], k: int = 10) -> list[list[Fill]]:
        """Top-k fill-ins for the single mask token in each raw text (the ``fill`` command)."""
        out = []
        for text in texts:
            enc = self.tokenizer(text, return_tensors="pt", truncation=True)
            where = enc["input_ids"][0] == self.tokenizer.mask_token_id
            if int(where.sum()) != 1:
                raise ValueError(f"the text must hold exactly one {self.tokenizer.mask_token}: {text!r}")
            enc = {key: value.to(self.device) for key, value in enc.items()}
            probs = torch.softmax(self._mask_logits(enc).float(), dim=-1)[0]
            top = probs.topk(k)
            ids = top.indices.tolist()
            out.append(
                [
                    Fill(t, i, float(p))
                    for t, i, p in zip(self.tokenizer.convert_ids_to_tokens(ids), ids, top.values.tolist())
                ]
            )
        return out

    def token_text(self, token: str) -> str:
        """A fill-in token as plain text (``##ing`` stays a piece; RoBERTa's ``Ġword`` ->
        ``word``)."""
        return token_text(self.tokenizer, token)
