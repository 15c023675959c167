"""Pick the compute device (CUDA, then Apple MPS, then CPU) and recover from running out of its memory."""

from __future__ import annotations

import torch


def best_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def is_out_of_memory(error: BaseException) -> bool:
    """A device that ran out of memory: torch's ``OutOfMemoryError`` (``torch.cuda.OutOfMemoryError``
    is the same class) or a backend's "out of memory" runtime error (MPS)."""
    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower()
    )


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously): a timer read after this
    measures the work, not its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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
