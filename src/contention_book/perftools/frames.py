"""Frame names as WPA writes them (``module!function``), shared by the builder, the model and the importers.

A module of its own so that the model and the builder, which both need these, need not import each other.
"""
from __future__ import annotations

__all__ = ["NO_STACK", "frame_name", "normalise_process", "split_frame_name"]

#: Function name of the single frame given to samples that had no stack
#: (WPA prints ``n/a``); keeps exclusive weights summing to 100 %.
NO_STACK = "n/a"


def frame_name(module: str, function: str) -> str:
    """``module!function`` as WPA writes it, or just ``function`` without a module."""
    return f"{module}!{function}" if module else function


def normalise_process(text: str) -> str:
    """``"xperf.exe ( 288)"`` -> ``"xperf.exe (288)"``, WPA's spelling."""
    t = text.strip()
    if t.endswith(")"):
        i = t.rfind("(")
        if i >= 0:
            pid = t[i + 1 : -1].strip()
            if pid.isdigit():
                return f"{t[:i].rstrip()} ({int(pid)})"
    return t


def split_frame_name(text: str) -> tuple[str, str]:
    """Inverse of :func:`frame_name`: split at the first ``!`` after a module."""
    i = text.find("!")
    if i > 0:
        return text[:i], text[i + 1 :]
    return "", text
