"""What the reproductions of Pham, Bui, Mai & Nguyen 2022, "Double Trouble" (arXiv 2110.11929; our
Pham et al. 2022) share: the paper, the datasets and models its tables run on, and the reasons our
numbers may differ that every table gives."""

from __future__ import annotations

from engine.reproduce.base import Paper

PAPER = Paper("Pham, Bui, Mai & Nguyen", 2022, "Double Trouble", "2110.11929")
SST2 = ("SST-2", "sst2", "dev", "minilm-sst2")
ESNLI = ("e-SNLI", "esnli", "dev", "minilm-esnli")
ESNLI_HIGHLIGHTED = ("e-SNLI", "esnli", "dev_highlighted", "minilm-esnli")
SMALL_MODEL = "our classifiers are LoRA-tuned all-MiniLM-L6-v2 (6 layers, 22M parameters), not BERT-base"
SMALL_MLM = "our masked LM is minilm-mlm (38% masked-word accuracy), not pre-trained BERT-base"
SLICE = "a dev slice (the first N examples), not all dev examples"
