"""Rendering helpers shared by the pages: typed session state, the sidebar, heatmaps, charts, forms.

Dependencies point down: pages use ``ui`` and ``services``; ``ui`` may read ``services`` (the
sidebar loads models and examples through it) but never imports torch, transformers or captum.
"""
