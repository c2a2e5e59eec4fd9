"""Retrieval legs: cheap retrievers blind in different directions (SPEC B)."""

from electa.legs.protocol import Leg
from electa.legs.runner import run_legs

__all__ = ["Leg", "run_legs"]
