"""The error every bad setting or unknown name raises before any long work starts."""
from __future__ import annotations


class SelectionError(ValueError):
    """An unknown name or an impossible setting; the message names the flag and what is valid."""


def check_names(kind: str, given: list[str], valid: list[str]) -> None:
    unknown = [g for g in given if g not in valid]
    if unknown:
        raise SelectionError(f"unknown {kind} {', '.join(map(repr, unknown))}; "
                             f"valid: {', '.join(valid)}")
