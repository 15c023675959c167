"""What a request's passes cost and which of them its methods share: the bookkeeping every
``core.classifier.Classifier`` carries (its base class).

``forward_passes`` / ``backward_passes`` count rows through the model, ``model_calls`` the
batches sent to it (a GPU pays a launch latency per call, whatever its rows); ``per_example``
also counts them per example of a batched request; ``sharing_passes`` lets the methods of one
request read a pass another method already made instead of making it again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PassLedger:
    """Passes counted per example of a batched request (``PassBook.per_example``)."""

    forward: list[int]
    backward: list[int]


class PassBook:
    """Pass counters, the per-example ledger and the passes a request's methods share."""

    def __init__(self) -> None:
        self.forward_passes = 0
        self.backward_passes = 0
        self.model_calls = 0
        self._ledger: PassLedger | None = None
        self._shared: dict[tuple, Any] | None = None  # inside ``sharing_passes``

    @contextmanager
    def per_example(self, n_examples: int) -> Iterator[PassLedger]:
        """Count the block's passes per example of a batched request as well: each counted call
        names the example of every row (``owners``; a call that names none inside a ledger of
        several examples is a bug and raises)."""
        if self._ledger is not None:
            raise RuntimeError("per_example blocks do not nest")
        self._ledger = PassLedger([0] * n_examples, [0] * n_examples)
        try:
            yield self._ledger
        finally:
            self._ledger = None

    @contextmanager
    def sharing_passes(self) -> Iterator[None]:
        """Within the block, methods that need the very same pass share it (saliency and
        gradient x input one gradient pass, the two attention methods one attention pass): the
        first computes and counts it, the others read it (``shared_pass``) at no pass.
        ``engine.explain.explain_examples`` runs a request's methods inside one; a method run on
        its own (the benchmark) pays its own passes."""
        previous, self._shared = self._shared, {}
        try:
            yield
        finally:
            self._shared = previous

    def shared_pass(self, key: tuple) -> Any:
        """What ``share_pass`` kept under ``key`` in this ``sharing_passes`` block, else None."""
        return None if self._shared is None else self._shared.get(key)

    def share_pass(self, key: tuple, value: Any) -> None:
        """Keep a pass's result for the rest of the ``sharing_passes`` block (outside one:
        nothing)."""
        if self._shared is not None:
            self._shared[key] = value

    def _count(self, owners: Sequence[int] | int, backward: bool = False) -> None:
        """One model call, one pass per row: ``owners`` is the example of each row, or a row count
        (all example 0)."""
        rows = [0] * owners if isinstance(owners, int) else list(owners)
        self.model_calls += 1
        self.forward_passes += len(rows)
        if backward:
            self.backward_passes += len(rows)
        if self._ledger is None:
            return
        if isinstance(owners, int) and len(self._ledger.forward) > 1:
            raise RuntimeError("a pass inside a batched request must name the example of each row")
        for owner in rows:
            self._ledger.forward[owner] += 1
            if backward:
                self._ledger.backward[owner] += 1
