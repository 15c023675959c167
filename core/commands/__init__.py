"""One module per ``python -m core`` command, each with ``register(subparsers)``."""
