"""Writes to a store until it is killed: the other half of the kill -9 loop test.

``python -m tests.integration.crash_driver DATA LOG SEED`` adds, updates (one document of a
three-document source) and deletes sources at random, forever. Before each write it appends
``begin <op> <uri> <texts as JSON>`` to LOG and after it ``done``, each line flushed and
fsynced, so the test knows exactly which writes committed and which one was in flight.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
from pathlib import Path

from electa import Access, Engine, NotFoundError, Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.types import Document, Section

URIS = [f"src{i}" for i in range(6)]


def documents(texts: list[str]) -> Loaded:
    return Loaded([Document(f"d{i}", f"Doc {i}", t, sections=(Section((), t),)) for i, t in enumerate(texts)])


def main() -> None:
    data, log_path, seed = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    state: dict[str, list[str]] = {}
    # A restarted driver starts from an empty picture: it overwrites or deletes only what it wrote.
    with log_path.open("a", encoding="utf-8") as log:
        engine = Engine.open(data, Settings(exact_below=8), HashEmbedder(dim=16))

        def note(line: str) -> None:
            log.write(line + "\n")
            log.flush()
            os.fsync(log.fileno())

        counter = 0
        while True:
            uri = rng.choice(URIS)
            counter += 1
            if uri in state and rng.random() < 0.3:
                note(f"begin delete {uri} null")
                with contextlib.suppress(NotFoundError):
                    engine.delete_source("acme", "default", uri)
                del state[uri]
            else:
                texts = list(state.get(uri) or [f"{uri} alpha a{counter}x{i} refund" for i in range(3)])
                texts[rng.randrange(3)] = f"{uri} bravo b{seed}x{counter} invoice"
                note(f"begin put {uri} {json.dumps(texts)}")
                engine.ingest_loaded(uri, documents(texts), Access("acme"))
                state[uri] = texts
            note("done")


if __name__ == "__main__":
    main()
