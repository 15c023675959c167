"""Who may do what on this server: private mode (the default) and shared mode for a class or a team.

Shared mode is switched on by ``ATTRIBUTION_SHARED=1`` (``make run SHARE=1``). It offers only an
allow-list of models, fixed when the server starts: the bundled ones plus those named in
``ATTRIBUTION_MODELS`` (comma-separated hub ids or folders). Any other model, typed or in a query
parameter, is refused with one message that does not depend on whether the name exists, so the
model field cannot be used to probe the host's folders. ``ATTRIBUTION_PASSWORD``, when set, is
asked for before anything runs and compared in constant time; it is never logged or shown.
"""

from __future__ import annotations

import hmac
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import streamlit as st

from core import models

SHARED_ENV = "ATTRIBUTION_SHARED"
MODELS_ENV = "ATTRIBUTION_MODELS"
PASSWORD_ENV = "ATTRIBUTION_PASSWORD"
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class AccessPolicy:
    shared: bool
    allowed_models: tuple[str, ...]  # empty in private mode: every model may be loaded
    password: str | None

    def refusal(self, model: str) -> str | None:
        """The message refusing ``model``, None when it may be loaded."""
        if not self.shared or model.strip() in self.allowed_models:
            return None
        return f"{model.strip()!r} is not offered on this server; pick one of the listed models"


def policy_from_env(environ: dict[str, str] | None = None) -> AccessPolicy:
    """The policy the environment describes (read once per server: see ``policy``)."""
    environ = dict(os.environ if environ is None else environ)
    shared = environ.get(SHARED_ENV, "").strip().lower() in _TRUE
    password = environ.get(PASSWORD_ENV) or None
    if not shared:
        return AccessPolicy(False, (), password)
    extra = tuple(name.strip() for name in environ.get(MODELS_ENV, "").split(",") if name.strip())
    return AccessPolicy(True, tuple(dict.fromkeys((*models.bundled_names(), *extra))), password)


@st.cache_resource
def policy() -> AccessPolicy:
    """The server's policy, fixed when the first session asks for it."""
    return policy_from_env()


def shared_mode() -> bool:
    return policy().shared


def check_model(name: str) -> None:
    """``ValueError`` with the same message for every model outside the allow-list (shared mode)."""
    message = policy().refusal(name)
    if message is not None:
        raise ValueError(message)


@dataclass
class HeavyQueue:
    """Shared mode's queue for long requests: one at a time per session, at most ``slots`` at once
    on the server (the others wait their turn), so one visitor cannot starve the rest."""

    slots: int
    _free: threading.BoundedSemaphore = field(init=False)
    _busy: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._free = threading.BoundedSemaphore(self.slots)

    @contextmanager
    def slot(self, session: str, waiting: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold a slot for ``session``; ``ValueError`` when that session already runs one.
        ``waiting`` is called once when every slot is taken, before the wait for one."""
        with self._lock:
            if session in self._busy:
                raise ValueError("this session is already running a long request: wait for it to finish")
            self._busy.add(session)
        try:
            if not self._free.acquire(blocking=False):
                if waiting is not None:
                    waiting()
                self._free.acquire()
            try:
                yield
            finally:
                self._free.release()
        finally:
            with self._lock:
                self._busy.discard(session)


@st.cache_resource
def heavy_queue() -> HeavyQueue:
    """The server's queue of long requests (slots: the CPU cores)."""
    return HeavyQueue(max(1, os.cpu_count() or 1))


def password_matches(given: str) -> bool:
    """True when no password is set or ``given`` is it (constant-time comparison)."""
    expected = policy().password
    return expected is None or hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


@contextmanager
def heavy_slot(session: str, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """A slot of the server's queue in shared mode (one long request per session, at most one
    per core at once; ``waiting`` is called when the request has to wait for one); nothing to
    wait for in private mode."""
    if not policy().shared:
        yield
        return
    with heavy_queue().slot(session, waiting):
        yield
