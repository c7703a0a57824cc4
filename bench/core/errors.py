"""The error every bad setting or unknown name raises before any long work starts."""
from __future__ import annotations


class SelectionError(ValueError):
    """An unknown name or an impossible setting; the message names the flag and what is valid."""
