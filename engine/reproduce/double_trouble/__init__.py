"""Reproductions of Pham, Bui, Mai & Nguyen 2022, "Double Trouble: How to not Explain a Text
Classifier's Decisions Using Counterfactuals Synthesized by Masked Language Models?" (arXiv
2110.11929), which re-examines Input Marginalization (Kim et al. 2020, arXiv
2010.13984). Published values are copied from ``shared/research/seeds-000-001.md`` (A.4).

One module per table, each with its published values, its computation, its finding check and its
registry entry: ``table1`` (Table 1 (a): Deletion vs Deletion_BERT), ``table3`` (Table 3:
agreement with human highlights), ``table4`` (Table 4: accuracy lost to one word deleted or
replaced), ``table_a3`` (Table A3: how often the masked LM restores the word), ``table_a5``
(Table A5: the classifier-head reset); ``common`` holds what they share (the paper, datasets,
models, the reasons ours may differ). Every number is computed by the engine.
"""

from __future__ import annotations

from engine.reproduce.double_trouble import table1, table3, table4, table_a3, table_a5

REPRODUCTIONS = (
    table1.REPRODUCTION,
    table3.REPRODUCTION,
    table4.REPRODUCTION,
    table_a3.REPRODUCTION,
    table_a5.REPRODUCTION,
)
