"""The local `evaluate` metric module ``bleu_chrf`` (see ``bleu_chrf.py``)."""
