"""A bounded, thread-safe result store and the cache keys built from examples and parameters."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

from core.types import Attribution, Example


def example_key(example: Example) -> str:
    return json.dumps(dataclasses.asdict(example), sort_keys=True)


def params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


class ResultStore:
    """A bounded, thread-safe store of finished attributions shared by every session.

    Not ``st.cache_data``: that would record the progress-bar updates made while a method runs
    and replay them on every cache hit, which Streamlit refuses for an element created outside
    the cached function. ``Attribution`` records are frozen with read-only arrays, so sharing
    them needs no copy.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[tuple, Attribution] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Attribution | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
            return self._items.get(key)

    def pop(self, key: tuple) -> Any:
        with self._lock:
            return self._items.pop(key, None)

    def put(self, key: tuple, value: Attribution) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)


def examples_key(examples: list[Example]) -> str:
    return hashlib.sha1("\n".join(example_key(e) for e in examples).encode()).hexdigest()


def attribution_key(attribution: Attribution) -> str:
    digest = hashlib.sha1(attribution.scores.tobytes()).hexdigest()
    return f"{attribution.method}|{attribution.target}|{params_key(attribution.params)}|{digest}"
