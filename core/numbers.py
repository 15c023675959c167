"""Numbers as text, shared by the pages and the command line."""

from __future__ import annotations


def fixed(value: float, digits: int, signed: bool = False) -> str:
    """``value`` at ``digits`` decimals (with its sign where ``signed``), a number that rounds to
    zero reading 0.00 rather than -0.00: rounded first, then the sign of zero dropped."""
    rounded = round(value, digits) + 0.0
    return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"
