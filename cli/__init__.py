"""One module per ``python -m cli`` command, each with ``register(subparsers)``."""
