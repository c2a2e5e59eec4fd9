"""Retrieval legs: cheap retrievers blind in different directions (SPEC B)."""

from electa.legs.protocol import Leg
from electa.legs.runner import LegRunner

__all__ = ["Leg", "LegRunner"]
