"""The error raised for input that the BERT comparison cannot use."""

from __future__ import annotations

__all__ = ["CompareInputError"]


class CompareInputError(ValueError):
    """Bad input to the comparison (wrong kind of model, empty sentence file, too-long sentence...)."""
