"""The table the ingest benches print: per setting, the median of its passes' seconds, as
documents per second, and its speed against a named baseline (median against median)."""

from __future__ import annotations

import statistics


def print_speed_table(seconds: dict[str, list[float]], documents: int, base: str, column: str) -> None:
    """``seconds``: each setting's passes, in the order to print; ``base``: the setting the
    others are measured against; ``column``: the first column's name."""
    print(f"| {column} | docs/s | seconds | vs {base} |")
    print("|---|---|---|---|")
    reference = statistics.median(seconds[base])
    for name, values in seconds.items():
        med = statistics.median(values)
        print(f"| {name} | {documents / med:.2f} | {med:.1f} | {reference / med:.2f}x |")
