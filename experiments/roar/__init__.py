"""Remove and retrain: ROAR (Hooker et al. 2019, arXiv:1806.10758), Pham et al.'s ROAR and ROAR_BERT
(Pham et al. 2022, arXiv:2110.11929) and Recursive ROAR (Madsen et al. 2022, arXiv:2110.08412).

``removal``: which words go at each level and what the classifier then sees; ``scores``: the
results' maths (intervals, t-test, Eq. 3, class leakage, sparsity); ``synthetic``: Madsen et al.'s
synthetic redundancy task; ``job``: the job definition, its units and its cost.
"""
