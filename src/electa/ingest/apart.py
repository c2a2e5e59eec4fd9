"""HTML is parsed in a worker process of its own, under a limit of time and one of memory.

Why: lexbor's tree builder can be made to spend minutes and gigabytes on a small page, and no
cheap scan bounds it without building the tree. Two shapes measured (review, 2026-12-06):

- nesting: most start and end tags walk the stack of open elements, so a page costs about its
  tags times its depth; 50,000 nested lists (400 KB) took 22.6 s, a 50 MB page of them hours;
- formatting elements left open (``<b id=1>`` … ``<b id=2000>``, each different, so the rule
  that keeps three alike does not apply) are opened again in every later paragraph: 37 KB of
  them built 4 million elements and took 1.5 GB.

Browsers cap both (Blink stops nesting at 512); lexbor caps neither. So the serving process
parses no page itself: one worker per process, started with the first page and kept for the
next, reads each page under :data:`READ_SECONDS` of wall time and :data:`READ_BYTES` of address
space. A page past either is refused, naming the limit; the worker is killed and the next page
starts another. The worker imports from the parent's ``sys.path`` and never from the working
directory (``python -I``: a ``pickle.py`` beside a synced folder's pages runs nowhere), dies
with its parent (Linux), and answers in JSON, so a worker subverted by a page can hand back
only text.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from electa.errors import IngestError

if TYPE_CHECKING:
    from electa.ingest.loaders import Loaded

log = logging.getLogger(__name__)

# A legitimate 50 MB page reads in about 4 s here; a slow machine has room to spare.
READ_SECONDS = 20.0
# lexbor's tree of a legitimate 50 MB page takes well under a gigabyte; the worker's interpreter
# and imports map about 0.4 GB of address space more.
READ_BYTES = 3 * 2**30
START_SECONDS = 60.0  # the worker's interpreter and imports, on a loaded machine

# The worker's first code: the parent's sys.path, then this module's loop. (-I keeps the working
# directory, PYTHONPATH and the user's site off sys.path until then: nothing is imported before.)
_BOOT = ("import sys; n = int.from_bytes(sys.stdin.buffer.read(8), 'big'); "
         "import pickle; sys.path[:] = pickle.loads(sys.stdin.buffer.read(n)); "
         "from electa.ingest.apart import serve; serve()")


def read_apart(name: str, text: str, note: str) -> Loaded:
    """:func:`electa.ingest.loaders.read_html` of the decoded page, in the worker; an
    :class:`IngestError` naming the limit when the page passes one, or when the worker fails."""
    return _WORKER.read(name, text, note)


class _Worker:
    """One worker process, one page at a time (a lock: lexbor holds the GIL while it parses,
    so pages in turn cost threads nothing they had)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0  # the process that started it (a fork's copy starts its own)

    def read(self, name: str, text: str, note: str) -> Loaded:
        from electa.ingest.loaders import Loaded

        with self._lock:
            proc = self._started(name)
            assert proc.stdin is not None and proc.stdout is not None
            try:
                _send(proc.stdin, pickle.dumps((name, text, note), protocol=pickle.HIGHEST_PROTOCOL))
                reply = _receive(proc.stdout, time.monotonic() + READ_SECONDS)
            except TimeoutError:
                self._stop()
                raise IngestError(name, f"its markup took more than {READ_SECONDS:.0f} s to read (a page nested"
                                  " thousands of elements deep, or one that leaves thousands of <b>, <i>, <a> or"
                                  " <font> open, costs minutes): fix the page's markup or split it") from None
            except (OSError, EOFError, ValueError):
                code = self._stop()
                raise IngestError(name, _died(code)) from None
        outcome = json.loads(reply)
        if outcome["outcome"] == "refused":
            if outcome.get("stop"):
                with self._lock:
                    self._stop()
            raise IngestError(name, outcome["reason"])
        return Loaded(documents=[_document(d) for d in outcome["documents"]], note=outcome["note"])

    def _started(self, name: str) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._pid == os.getpid() and self._proc.poll() is None:
            return self._proc
        self._proc = None  # (one inherited through a fork is its parent's: left alone)
        if not sys.executable:
            raise IngestError(name, "HTML is read in a worker process, and this interpreter cannot start one"
                              " (sys.executable is empty): run Electa from a Python interpreter")
        try:
            proc = subprocess.Popen([sys.executable, "-I", "-c", _BOOT], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise IngestError(name, f"the worker that reads HTML could not start ({exc})") from None
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _send(proc.stdin, pickle.dumps(_import_path()))
            _send(proc.stdin, json.dumps({"parent": os.getpid(), "bytes": READ_BYTES}).encode())
            if _receive(proc.stdout, time.monotonic() + START_SECONDS) != b"ready":
                raise EOFError
        except (OSError, EOFError, ValueError, TimeoutError):
            proc.kill()
            proc.wait()
            raise IngestError(name, f"the worker that reads HTML did not start (exit {proc.returncode})") from None
        self._proc, self._pid = proc, os.getpid()
        return proc

    def _stop(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None or self._pid != os.getpid():
            return None
        proc.kill()
        code = proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        return code

    def close(self) -> None:
        with self._lock:
            self._stop()


def _import_path() -> list[str]:
    """The parent's ``sys.path`` without the working directory (a ``python -m`` run puts it
    first: a page's folder may hold a ``json.py``), with the folder electa itself came from."""
    here = str(Path(__file__).resolve().parents[2])
    cwd = os.getcwd()
    return [here, *(p for p in sys.path if p and os.path.abspath(p) not in (cwd, here))]


def _died(code: int | None) -> str:
    how = f"was stopped by signal {-code}" if code is not None and code < 0 else f"exited ({code})"
    return (f"the worker reading this page {how}, likely out of its {READ_BYTES / 2**30:g} GiB of memory (a page"
            " that leaves thousands of formatting elements open builds millions of them): fix the page's markup")


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(len(payload).to_bytes(8, "big") + payload)
    stream.flush()


def _receive(stream: IO[bytes], deadline: float) -> bytes:
    """One message: its 8-byte length, then its bytes; TimeoutError at ``deadline``, EOFError
    if the writer is gone."""
    fd = stream.fileno()
    buf = bytearray()
    want = 8
    while len(buf) < want:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, min(want - len(buf), 1 << 20))
        if not chunk:
            raise EOFError
        buf += chunk
        if want == 8 and len(buf) == 8:
            want = 8 + int.from_bytes(buf, "big")
    return bytes(buf[8:])


def _document(d: dict[str, Any]) -> Any:
    from electa.types import Document, Section

    return Document(d["ext_id"], d["title"], d["text"], d["url"],
                    tuple(Section(tuple(path), text) for path, text in d["sections"]), dict(d["metadata"]))


def _encoded(loaded: Loaded) -> dict[str, Any]:
    return {"outcome": "read", "note": loaded.note,
            "documents": [{"ext_id": d.ext_id, "title": d.title, "text": d.text, "url": d.url,
                           "sections": [[list(s.path), s.text] for s in d.sections], "metadata": d.metadata}
                          for d in loaded.documents]}


def _die_with(parent: int) -> None:
    """Be killed when ``parent`` dies (Linux's PR_SET_PDEATHSIG); elsewhere the closed pipe ends
    the loop once the page in hand is read."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # (it died before the call)
        os._exit(0)


def serve() -> None:
    """The worker's loop (started by :class:`_Worker` through ``_BOOT``)."""
    import resource

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    head = json.loads(_read_exactly(inp, int.from_bytes(_read_exactly(inp, 8), "big")))
    _die_with(head["parent"])
    resource.setrlimit(resource.RLIMIT_AS, (head["bytes"], head["bytes"]))
    from electa.ingest.loaders import read_html

    _send(out, b"ready")
    while True:
        size = inp.read(8)
        if len(size) < 8:
            return  # the parent closed the pipe
        name, text, note = pickle.loads(_read_exactly(inp, int.from_bytes(size, "big")))
        stop = False
        try:
            reply: dict[str, Any] = _encoded(read_html(name, text, note))
        except IngestError as exc:  # (its own reason: the parent names the source again)
            reply = {"outcome": "refused", "reason": exc.reason}
        except MemoryError:
            stop = True  # (the heap is spent: the parent starts a fresh worker)
            reply = {"outcome": "refused", "stop": True, "reason": f"reading it needed more than its"
                     f" {head['bytes'] / 2**30:g} GiB of memory (a page that leaves thousands of formatting"
                     " elements open builds millions of them): fix the page's markup"}
        del text
        _send(out, json.dumps(reply, ensure_ascii=False).encode("utf-8"))
        if stop:
            return


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if len(data) < n:
        raise SystemExit(0)  # the parent is gone
    return data


_WORKER = _Worker()
atexit.register(_WORKER.close)
