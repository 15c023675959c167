"""Remove-and-retrain jobs on the run store (issue 17): ROAR (Hooker et al. 2019, arXiv:1806.10758),
Pham et al.'s ROAR and ROAR_BERT (Pham et al. 2022, arXiv:2110.11929) and Recursive ROAR (Madsen et
al. 2022, arXiv:2110.08412).

``unit``: one retrain (explain with the model it depends on, remove, retrain, evaluate);
``run``: the job as a resumable run of the run store, serial or on Ray, and reading it back;
``report``: the results a person reads (curves, Eq. 3, t-tests, leakage, sparsity, the text at
each level); ``cost``: the estimate before a job starts, from a measured training step.
"""
