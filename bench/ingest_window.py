"""Ingest of a folder, file by file against a window of files embedded together, side by side.

    python bench/ingest_window.py FOLDER [FOLDER ...] [--passes 3]

Each pass ingests the folders into a fresh store once with each setting (the order reverses
from pass to pass), with the default embedder and settings, as `electa
ingest` does; only ``Engine.ingest`` is timed (the models are loaded before). Prints each
pass, then the median seconds and documents per second of each setting and their ratio.
"file by file" is ``WINDOW_TEXTS = 0``: each file's units are embedded in a call of their own,
as before the window (:mod:`electa.ingest.pipeline`); a window of ``w`` texts holds at most
``max(WINDOW_FILES, w // 32)`` files.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from electa import Access, Engine, Settings
from electa.ingest import pipeline

sys.path.insert(0, str(Path(__file__).parent))
from speed_table import print_speed_table


def one_pass(folders: list[Path], window: int) -> tuple[float, int]:
    saved = pipeline.WINDOW_TEXTS, pipeline.WINDOW_FILES
    pipeline.WINDOW_TEXTS, pipeline.WINDOW_FILES = window, max(pipeline.WINDOW_FILES, window // 32)
    try:
        with tempfile.TemporaryDirectory(prefix="electa-bench-") as tmp, Engine.open(Path(tmp), Settings()) as engine:
            start = time.perf_counter()
            report = engine.ingest(folders, Access("bench"))
            seconds = time.perf_counter() - start
            if report.failures:
                print(f"  {len(report.failures)} failures, first: {report.failures[0]}")
            return seconds, report.documents
    finally:
        pipeline.WINDOW_TEXTS, pipeline.WINDOW_FILES = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--windows", type=int, nargs="+", default=[pipeline.WINDOW_TEXTS],
                        help="window sizes (texts) to measure beside file by file (default: the served one)")
    parser.add_argument("--profile", action="store_true",
                        help="instead: one ingest with the served window under cProfile, the 25 costliest calls")
    args = parser.parse_args()
    if args.profile:
        import cProfile
        import pstats

        one_pass(args.folders[:1], pipeline.WINDOW_TEXTS)  # loads the models
        profiler = cProfile.Profile()
        profiler.enable()
        took, documents = one_pass(args.folders, pipeline.WINDOW_TEXTS)
        profiler.disable()
        print(f"{documents} documents in {took:.1f} s")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return
    settings = {"file by file": 0} | {f"window of {w} texts": w for w in args.windows}
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    documents = 0
    one_pass(args.folders[:1], pipeline.WINDOW_TEXTS)  # loads the models and warms the caches once
    for n in range(args.passes):
        order = list(settings.items()) if n % 2 == 0 else list(reversed(settings.items()))
        for name, window in order:
            took, documents = one_pass(args.folders, window)
            seconds[name].append(took)
            print(f"pass {n + 1}: {name}: {took:.1f} s, {documents / took:.2f} docs/s", flush=True)
    print(f"\n{documents} documents, {args.passes} passes, medians\n")
    print_speed_table(seconds, documents, "file by file", "setting")


if __name__ == "__main__":
    main()
