"""The classifier wrapper and the one batched scorer every perturbation goes through.

``LoadedClassifier`` (core/loaded.py) holds the shared model and tokenizer (one per model,
cached by the app and never mutated). ``Classifier`` is a cheap per-request view on it with its
own pass counters, so concurrent users never mix up each other's costs. Words are mapped to
subwords with the fast tokenizer's ``word_ids()``; perturbations are built on token ids
(``Variant``, core/encoding.py), never by decoding text and tokenizing it again.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from core.attention_view import attention_implementation
from core.attention_weights import read_attention_weights
from core.devices import check_autocast, chunk_rows, is_out_of_memory, release_device_memory, release_host_memory
from core.encoding import Encoded, Variant, cut_to_fit, length_chunks, word_token_ids
from core.heads import Head, detect_head
from core.last_token import last_token_logits
from core.loaded import LoadedClassifier, segments_refusal
from core.padding import in_parts, padded_batch, padding_rule
from core.passes import PassBook
from core.types import AUTOCAST_TYPES, Example, ProgressFn

ENCODINGS_KEPT = 1024  # per request: every method and metric of a dataset group reads the same examples


AUTOCAST_DTYPES = {name: getattr(torch, name) for name in AUTOCAST_TYPES}


def autocast_options(name: str | None) -> dict[str, Any]:
    """``Classifier`` keyword arguments for an autocast type named ``float16`` or ``bfloat16``
    (``--autocast``, ``RunSpec.autocast``), or for none (float32 throughout)."""
    if name is None:
        return {"autocast": False}
    if name not in AUTOCAST_DTYPES:
        raise ValueError(f"autocast must be one of {', '.join(AUTOCAST_DTYPES)}, got {name!r}")
    return {"autocast": True, "autocast_dtype": AUTOCAST_DTYPES[name]}


class Classifier(PassBook):
    """A per-request view on a ``LoadedClassifier``: encoding, the batched scorer, gradients.

    Every forward pass goes through ``predict_proba`` (perturbations), ``forward_embeds``
    (gradients) or ``attentions``, which count passes in ``forward_passes`` and ``backward_passes``
    (rows) and the batches sent to the model in ``model_calls``; inside ``per_example`` they also
    count them per example of a batched request (``core.passes``). ``head`` is the explained output
    (``core.heads``): detected from the model's config, or the type ``head_type`` names (an override
    for models whose config is wrong, this request only). ``model`` is the shared model (fused
    attention where it has it), or inside ``eager_attention`` its eager-attention view
    (``core.attention_view``). ``autocast`` runs the scorer's passes in ``autocast_dtype``: float16
    or bfloat16 on CUDA, bfloat16 on a CPU (faster than float32 only on CPUs with AVX512-BF16 or
    AMX; float16 there is refused), ignored on MPS. Gradients and attention weights stay float32.
    """

    def __init__(
        self,
        loaded: LoadedClassifier,
        batch_size: int = 64,
        autocast: bool = False,
        head_type: str | None = None,
        autocast_dtype: torch.dtype = torch.float16,
    ) -> None:
        self.loaded = loaded
        self.batch_size = batch_size
        if autocast:
            check_autocast(loaded.device, autocast_dtype)
        self.autocast = autocast and loaded.device.type in ("cuda", "cpu")
        self.autocast_dtype = autocast_dtype
        self.head_type = head_type
        self.head: Head = detect_head(loaded.model.config, head_type, loaded.name)
        super().__init__()
        self._eager = False
        # Tokenizing an example once per request, not once per method and metric that reads it.
        self._tokenized = functools.lru_cache(maxsize=ENCODINGS_KEPT)(self._tokenize_segments)
        self._encoded = functools.lru_cache(maxsize=ENCODINGS_KEPT)(self._encode_segments)

    # ------------------------------------------------------------------ properties

    @property
    def name(self) -> str:
        return self.loaded.name

    @property
    def model(self) -> torch.nn.Module:
        return self.loaded.eager_model if self._eager else self.loaded.model

    @property
    def logits_model(self) -> torch.nn.Module:
        """The module of the passes that read only the logits: ``model``, or outside
        ``eager_attention`` its view with the last layer computed at the first token only
        (``LoadedClassifier.logits_model``; the same logits to float rounding)."""
        return self.loaded.eager_model if self._eager else self.loaded.logits_model

    @contextmanager
    def eager_attention(self) -> Iterator[None]:
        """Run the block on the eager-attention view of the shared weights: attention weights and
        second derivatives (this request only; the shared model and other requests keep theirs)."""
        previous, self._eager = self._eager, True
        try:
            yield
        finally:
            self._eager = previous

    @property
    def tokenizer(self):
        return self.loaded.tokenizer

    @property
    def device(self) -> torch.device:
        return self.loaded.device

    @property
    def label_names(self) -> tuple[str, ...]:
        return self.loaded.label_names

    @property
    def num_labels(self) -> int:
        return len(self.label_names)

    def token_id(self, token: str) -> int:
        token_id = self.tokenizer.convert_tokens_to_ids(token)
        if token_id is None:
            raise ValueError(f"{self.name} has no {token!r} token")
        return int(token_id)

    @property
    def special_tokens(self) -> dict[str, int | None]:
        tok = self.tokenizer
        return {"mask": tok.mask_token_id, "unk": tok.unk_token_id, "pad": tok.pad_token_id}

    # ------------------------------------------------------------------ encoding

    def check_example(self, example: Example) -> None:
        """Refuse (ValueError) an example the model cannot read: no words, words of which the
        tokenizer keeps no token (control characters, zero-width spaces), a word that is not valid
        Unicode, or one segment for a pair model and two for a single-text one."""
        if not example.words:
            raise ValueError("the text is empty: give at least one word")
        if all(word is None for word in self._tokenize(example).word_ids()):
            raise ValueError("the text has no token the model reads: give at least one word")
        refusal = segments_refusal(self.name, self.loaded.pair, example.is_pair)
        if refusal is not None:
            raise ValueError(refusal)

    def token_count(self, example: Example) -> int:
        """The example's tokens, special tokens included, before any cut to the model's length
        (0 for an empty one): what sorting examples by length uses."""
        return len(self._tokenize(example)["input_ids"]) if example.words else 0

    def _tokenize(self, example: Example):
        return self._tokenized(example.segments)

    def _tokenize_segments(self, segments: tuple[tuple[str, ...], ...]):
        for word in (word for segment in segments for word in segment):
            try:
                word.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: how bytes that are not UTF-8 reach Python
                raise ValueError(f"the text is not valid Unicode: the word {word!r} holds a lone surrogate") from None
        return self.tokenizer(*map(list, segments), is_split_into_words=True, truncation=False, add_special_tokens=True)

    @staticmethod
    def _flat_word_ids(enc, segments: tuple[tuple[str, ...], ...]) -> list[int | None]:
        offset = len(segments[0])
        flat: list[int | None] = []
        for word, sequence in zip(enc.word_ids(), enc.sequence_ids()):
            if word is None or sequence is None:
                flat.append(None)
            else:
                flat.append(word + (offset if sequence == 1 else 0))
        return flat

    def fit_example(self, example: Example) -> tuple[Example, int]:
        """The example cut to whole words that fit the model's maximum length, and the number of
        words dropped (from the end of the longer segment, as ``longest_first`` truncation)."""
        enc = self._tokenize(example)
        lengths = [0] * len(example.words)
        for word in self._flat_word_ids(enc, example.segments):
            if word is not None:
                lengths[word] += 1
        n_special = len(enc["input_ids"]) - sum(lengths)
        return cut_to_fit(example, lengths, self.loaded.max_length - n_special)

    def encode(self, example: Example) -> Encoded:
        """Encode an example that fits (see ``fit_example``)."""
        self.check_example(example)
        return self._encoded(example.segments)

    def _encode_segments(self, segments: tuple[tuple[str, ...], ...]) -> Encoded:
        enc = self._tokenized(segments)
        if len(enc["input_ids"]) > self.loaded.max_length:
            raise ValueError(f"{len(enc['input_ids'])} tokens exceed {self.loaded.max_length}: call fit_example first")
        types = enc.get("token_type_ids") or [0] * len(enc["input_ids"])
        n_words = sum(len(segment) for segment in segments)
        return Encoded(tuple(enc["input_ids"]), tuple(types), tuple(self._flat_word_ids(enc, segments)), n_words)

    def word_tokens(self, word: str) -> tuple[int, ...]:
        """Subword ids of one word as the tokenizer splits it inside a text."""
        return word_token_ids(self.tokenizer, word)

    # ------------------------------------------------------------------ the batched scorer

    def predict_proba(self, variants: Sequence[Variant], progress: ProgressFn | None = None) -> np.ndarray:
        """The explained output of every label for each variant, shape (n, n_labels), float64:
        softmax or sigmoid probabilities, or raw scores for a regression head (``self.head``).
        ``predict_proba_groups`` with one group."""
        return self.predict_proba_groups([variants], progress)[0]

    def predict_proba_groups(
        self, groups: Sequence[Sequence[Variant]], progress: ProgressFn | None = None
    ) -> list[np.ndarray]:
        """``predict_proba`` of several examples' variants at once: group ``i`` belongs to example
        ``i`` of a batched request and gets its own (n_i, n_labels) array.

        Identical variants of one group are scored once (and counted once, for that group's
        example); the groups' variants are pooled, sorted by length so each chunk of
        ``batch_size`` needs little padding (``length_chunks``: fewer rows for long inputs), and
        run under ``torch.inference_mode()``; the head's outputs are computed in float64 from the
        float32 logits. Only one chunk's tensors exist at a time. A chunk that runs out of device
        memory halves ``batch_size`` (``halve_batch``) and what is left is chunked again and
        scored; the outputs do not depend on the batch size.
        """
        items: dict[tuple[int, Variant], int] = {}
        for owner, variants in enumerate(groups):
            for v in variants:
                items.setdefault((owner, v), len(items))
        distinct = list(items)
        out = np.empty((len(distinct), self.num_labels), dtype=np.float64)
        done = 0
        with torch.inference_mode(), self.scorer_autocast():
            lengths = [len(v.input_ids) for _, v in distinct]
            remaining = list(range(len(distinct)))
            while remaining:
                scored: set[int] = set()
                for positions in length_chunks([lengths[i] for i in remaining], self.batch_size):
                    rows = [remaining[p] for p in positions]
                    try:
                        out[rows] = self._outputs([distinct[i][1] for i in rows])
                    except Exception as error:
                        if not is_out_of_memory(error) or not self.halve_batch():
                            raise
                        break  # what is left, chunked again at half the batch size
                    if self.device.type == "cpu":
                        release_host_memory()  # see there: many widths fragment the C heap
                    self._count([distinct[i][0] for i in rows])
                    scored.update(rows)
                    done += len(rows)
                    if progress is not None:
                        progress(done / len(distinct), f"{done:,} of {len(distinct):,} variants")
                remaining = [i for i in remaining if i not in scored]
        return [out[[items[(owner, v)] for v in variants]] for owner, variants in enumerate(groups)]

    @property
    def padding(self) -> str:
        """How rows of different lengths may share a pass on this model (``core.padding``; probed
        once per loaded model)."""
        if self.loaded.padding is None:
            self.loaded.padding = padding_rule(self)
        return self.loaded.padding

    def logits_of(self, model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The logits of ``model`` (the shared model or a view) for a padded ``batch``; a
        decoder's read at each row's last real token (``core.last_token``), padding or not."""
        if self.loaded.reads_last_token:
            return last_token_logits(model, **batch)
        return model(**batch).logits

    def _outputs(self, chunk: Sequence[Variant]) -> np.ndarray:
        """The head's outputs (float64 numpy) of one chunk of variants, padded where the model
        allows (``padding``)."""
        logits = in_parts(
            lambda: self.padding, [len(v.input_ids) for v in chunk], lambda rows: self._logits(chunk, rows)
        )
        return self.head.outputs(logits).numpy()

    def _logits(self, chunk: Sequence[Variant], rows: list[int]) -> torch.Tensor:
        """The float64 logits, on the CPU, of ``chunk``'s variants at ``rows``, in one pass."""
        chunk = [chunk[r] for r in rows]
        batch = padded_batch(self.loaded, chunk)
        if any(v.zero_positions for v in chunk):
            embeds = self.input_embeddings(batch.pop("input_ids"))
            for r, v in enumerate(chunk):
                if v.zero_positions:
                    embeds[r, list(v.zero_positions)] = 0.0
            batch["inputs_embeds"] = embeds
        # The outputs in float64 (on the CPU: MPS has none): a probability near 1 keeps the
        # precision its log-odds need, whatever else shares the batch.
        return self.logits_of(self.logits_model, batch).float().cpu().double()

    def rows_for(self, width: int) -> int:
        """Rows per pass for inputs ``width`` tokens wide (``core.devices.chunk_rows``):
        ``batch_size``, fewer for long inputs, so that a pass holds at most
        ``batch_size * TOKENS_PER_ROW`` tokens."""
        return chunk_rows(self.batch_size, min(width, self.loaded.max_length))

    def halve_batch(self) -> bool:
        """After an out-of-memory error: halve ``batch_size`` and release the device's cached
        memory, so the caller can retry; False (nothing changed) when it is already 1."""
        if self.batch_size == 1:
            return False
        self.batch_size //= 2
        release_device_memory(self.device)
        return True

    def scorer_autocast(self):
        """The autocast context of the scorer's passes (a disabled one without ``autocast``)."""
        if self.autocast:
            return torch.autocast(self.device.type, dtype=self.autocast_dtype)
        return torch.autocast("cpu", enabled=False)

    # ------------------------------------------------------------------ embeddings and gradients

    def embedding_layer(self) -> torch.nn.Embedding:
        return self.model.get_input_embeddings()

    def input_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Word embeddings (before position/segment embeddings), shape (batch, seq, dim)."""
        return self.embedding_layer()(input_ids.to(self.device))

    def forward_embeds(
        self,
        embeds: torch.Tensor,
        variants: Variant | Sequence[Variant],
        *,
        owners: Sequence[int] | None = None,
        model: torch.nn.Module | None = None,
    ) -> torch.Tensor:
        """Logits for a batch of input-embedding tensors (counted; a pass on embeddings that
        require a gradient, with gradients enabled, counts as a backward pass too).

        ``variants`` gives each row's layout (length, segments): one variant that every row
        shares, or one per row, the rows right-padded to ``embeds.shape[1]`` and masked, so a row
        gets the logits it would get alone. ``owners``: the example of each row in a batched
        request (``per_example``). ``model``: a view of the shared model to run instead, for a
        caller that hooks modules (``core.attention_view.module_view``), else ``logits_model``."""
        n = embeds.shape[0]
        layouts = [variants] if isinstance(variants, Variant) else list(variants)
        if len(layouts) not in (1, n) or max(len(v.input_ids) for v in layouts) != embeds.shape[1]:
            raise ValueError("forward_embeds needs one layout per row, the longest as wide as the embeddings")
        self._count(n if owners is None else owners, backward=embeds.requires_grad and torch.is_grad_enabled())
        model = model or self.logits_model

        def run(rows: list[int]) -> torch.Tensor:  # padded where the model allows (``padding``)
            chosen = layouts if len(layouts) < n else [layouts[r] for r in rows]
            batch = padded_batch(self.loaded, chosen)
            del batch["input_ids"]
            width = batch["attention_mask"].shape[1]
            if len(chosen) < len(rows):  # one layout that every row shares
                batch = {key: t.expand(len(rows), -1) for key, t in batch.items()}
            part = embeds if len(rows) == n else embeds[rows, :width]
            return self.logits_of(model, {"inputs_embeds": part, **batch})

        lengths = [len(layouts[0 if len(layouts) < n else r].input_ids) for r in range(n)]
        return in_parts(lambda: self.padding, lengths, run)

    def attentions(self, variants: Sequence[Variant], owners: Sequence[int] | None = None) -> list[torch.Tensor]:
        """Attention weights of every layer for each variant, each (layers, heads, seq, seq) over
        its own tokens, from one padded forward pass (shared by the request's attention methods
        inside ``sharing_passes``).

        Only the eager kernel returns them: run this inside ``eager_attention`` (the runner does
        for the methods whose registry entry declares ``needs_attention_weights``). There the
        pass stops once the last layer's weights are read (``core.attention_weights``; counted as
        one forward pass a row), or, for a model whose attention modules cannot be hooked that
        way, runs whole with ``output_attentions=True``. Every hook lands on the eager view,
        never on the shared model.
        """
        key = ("attentions", self._eager, tuple(variants))
        shared = self.shared_pass(key)
        if shared is not None:
            return shared
        batch = padded_batch(self.loaded, list(variants))
        # A decoder's head refuses padded rows without a pad id: its weights come from the decoder.
        model = self.model.base_model if self.loaded.reads_last_token else self.model
        with torch.inference_mode():
            layers = read_attention_weights(model, batch) if self._eager else None
            if layers is None:
                layers = list(model(**batch, output_attentions=True).attentions or ())
        self._count(len(variants) if owners is None else owners)
        if not layers or any(a is None for a in layers):
            hint = (
                "load it with attn_implementation='eager' (it cannot switch its attention at run time)"
                if self._eager
                else "run it inside Classifier.eager_attention()"
            )
            raise ValueError(
                f"{self.name} returns no attention weights with {attention_implementation(self.model)!r} attention: {hint}"
            )
        stacked = torch.stack(layers, dim=1).float().cpu()  # (batch, layers, heads, seq, seq)
        weights = [stacked[row, :, :, : len(v.input_ids), : len(v.input_ids)] for row, v in enumerate(variants)]
        self.share_pass(key, weights)
        return weights
