"""Pick the compute device (CUDA, then Apple MPS, then CPU) and recover from running out of its
memory."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import time

import torch


def best_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def chosen_device(device: str | torch.device | None) -> torch.device:
    """The device asked for (``best_device()`` for None); one this machine lacks, or a name torch
    does not know, is refused in one line (torch would fail at the first tensor moved there)."""
    if device is None:
        return best_device()
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device {device!r} is not a torch device: {error}") from error
    mps = getattr(torch.backends, "mps", None)
    available = {"cuda": torch.cuda.is_available(), "mps": mps is not None and mps.is_available()}
    if not available.get(chosen.type, True):
        raise ValueError(f"device {str(chosen)!r} is not available on this machine (try 'cpu' or leave it out)")
    return chosen


def check_autocast(device: torch.device, dtype: torch.dtype) -> None:
    """Refuse an autocast type ``device`` cannot run: a CPU autocasts to bfloat16 only."""
    if device.type == "cpu" and dtype != torch.bfloat16:
        raise ValueError(f"{dtype} autocast needs a GPU; on a CPU use bfloat16")


def is_out_of_memory(error: BaseException) -> bool:
    """A device that ran out of memory: torch's ``OutOfMemoryError``
    (``torch.cuda.OutOfMemoryError`` is the same class) or a backend's "out of memory" runtime error
    (MPS)."""
    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower()
    )


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously): a timer read after this
    measures the work, not its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_last_trim = [0.0]  # when the heap was last trimmed (time.monotonic), shared by every thread


def release_host_memory(min_interval_s: float = 1.0) -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``), at most once per
    ``min_interval_s`` in this process.

    Passes over inputs of many different widths (LIME's samples of a long document, sorted by
    length) leave glibc's heap fragmented: freed activation buffers of one size are not reused
    for the next, and the resident memory grows with the number of chunks (LIME with 5,000
    samples on a 512-token review: 3 GB). A trim walks the whole heap (about 30 ms on a 1 GB
    one), so it runs at most once a second: a few percent of the time (BENCHMARKS.md, "Memory")."""
    now = time.monotonic()
    if now - _last_trim[0] < min_interval_s:
        return
    _last_trim[0] = now
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def release_device_memory(device: torch.device) -> None:
    """Return the caching allocator's free blocks to the device (after an out-of-memory error)."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
    elif device.type == "mps":
        torch.mps.empty_cache()


# A chunk of inputs holds at most ``batch_size`` rows and ``batch_size * TOKENS_PER_ROW`` tokens:
# long documents go in fewer rows per pass, so a pass's activations stay bounded whatever the
# text's length (docs/ARCHITECTURE.md, "Memory").
TOKENS_PER_ROW = 64


def chunk_rows(batch_size: int, width: int) -> int:
    """Rows per chunk for inputs ``width`` tokens wide: ``batch_size``, or fewer so that the chunk
    holds at most ``batch_size * TOKENS_PER_ROW`` tokens (at least one row)."""
    return max(1, min(batch_size, batch_size * TOKENS_PER_ROW // max(1, width)))
