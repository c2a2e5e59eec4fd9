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
directory (``python -I``: a ``pickle.py`` beside a synced folder's pages runs nowhere), is
killed by its own alarm when a page runs past the limit (so a parent killed meanwhile leaves no
worker parsing for hours), and answers in JSON, so a worker subverted by a page can hand back
only text. POSIX only (``resource``, ``poll``, ``SIGALRM``); macOS enforces no address-space
limit.
"""

from __future__ import annotations

import atexit
import json
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
    from electa.ingest.page import Loaded

# Wall time for a page: the base, and a second a megabyte more (reading is linear in a page of
# sane markup: a 10 MB page of table rows took 4.4 s in the worker here; hostile ones are small).
READ_SECONDS = 10.0
READ_SECONDS_PER_MB = 1.0
# lexbor's tree of a legitimate 50 MB page takes well under a gigabyte; the worker's interpreter
# and imports map about 0.4 GB of address space more.
READ_BYTES = 3 * 2**30
START_SECONDS = 60.0  # the worker's interpreter and imports, on a loaded machine

# The worker's first code: its replies moved off standard output (what an import or a library
# prints there goes where its errors go, not into a reply), the parent's sys.path, then this
# module's loop. (-I keeps the working directory, PYTHONPATH and the user's site off sys.path
# until then: nothing is imported before.)
_BOOT = ("import os, sys; replies = os.dup(1); os.dup2(2, 1); "
         "n = int.from_bytes(sys.stdin.buffer.read(8), 'big'); "
         "import pickle; sys.path[:] = pickle.loads(sys.stdin.buffer.read(n)); "
         "from electa.ingest.apart import serve; serve(replies)")


def read_apart(name: str, text: str, note: str) -> Loaded:
    """:func:`electa.ingest.html_page.read_html` of the decoded page, in the worker; an
    :class:`IngestError` naming the limit when the page passes one, or when the worker fails."""
    return _WORKER.read(name, text, note)


def seconds_for(text: str) -> float:
    """The wall time a page of ``text`` is given (:data:`READ_SECONDS` and a second a megabyte)."""
    return READ_SECONDS + READ_SECONDS_PER_MB * len(text) / 1e6


class _Worker:
    """One worker process, one page at a time (a lock: pages of many threads are read in turn)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0  # the process that started it (a fork's copy starts its own)
        self._sent = 0  # pages sent to this worker: each reply names its page's number

    def forked(self) -> None:
        """In a forked child: the parent's worker and lock are the parent's (a fork taken while
        another thread read a page would otherwise hold the lock for ever)."""
        self._lock = threading.Lock()
        self._proc = None

    def read(self, name: str, text: str, note: str) -> Loaded:
        from electa.ingest.page import Loaded

        seconds = seconds_for(text)
        with self._lock:
            proc = self._started(name)
            assert proc.stdin is not None and proc.stdout is not None
            self._sent += 1
            try:
                _send(proc.stdin, pickle.dumps((self._sent, seconds, name, text, note), protocol=pickle.HIGHEST_PROTOCOL))
                outcome = json.loads(_receive(proc.stdout, time.monotonic() + seconds))
                if outcome.get("page") != self._sent:
                    raise ValueError("a reply for another page")
            except TimeoutError:
                self._stop()
                raise IngestError(name, f"its markup took more than {seconds:.0f} s to read (a page nested"
                                  " thousands of elements deep, or one that leaves thousands of <b>, <i>, <a> or"
                                  " <font> open, costs minutes): fix the page's markup or split it") from None
            except (OSError, EOFError, ValueError):
                code = self._stop()
                raise IngestError(name, _died(code)) from None
            except BaseException:
                # (an interrupt between a page and its reply: the reply would answer the next page)
                self._stop()
                raise
            if outcome.get("stop"):
                self._stop()
        if outcome["outcome"] == "refused":
            raise IngestError(name, outcome["reason"])
        return Loaded(documents=[_document(d) for d in outcome["documents"]], note=outcome["note"],
                      noindex=bool(outcome.get("noindex")), moved_to=str(outcome.get("moved_to") or ""))

    def _started(self, name: str) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._pid == os.getpid() and self._proc.poll() is None:
            return self._proc
        self._proc = None  # (one inherited through a fork is its parent's: left alone)
        if not sys.executable:
            raise IngestError(name, "HTML is read in a worker process, and this interpreter cannot start one"
                              " (sys.executable is empty): run Electa from a Python interpreter")
        # (one thread each for the libraries a worker imports: each OpenBLAS thread maps address
        # space, and a many-core machine's would eat the worker's limit)
        env = {**os.environ, **dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")}
        try:
            proc = subprocess.Popen([sys.executable, "-I", "-c", _BOOT], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        except OSError as exc:
            raise IngestError(name, f"the worker that reads HTML could not start ({exc})") from None
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _send(proc.stdin, pickle.dumps(_import_path()))
            _send(proc.stdin, json.dumps({"bytes": READ_BYTES}).encode())
            if _receive(proc.stdout, time.monotonic() + START_SECONDS) != b"ready":
                raise EOFError
        except BaseException as exc:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                stream.close()
            if not isinstance(exc, (OSError, EOFError, ValueError, TimeoutError)):
                raise
            raise IngestError(name, f"the worker that reads HTML did not start (exit {proc.returncode})") from None
        self._proc, self._pid, self._sent = proc, os.getpid(), 0
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
    first: a page's folder may hold a ``json.py``), and the folder electa itself came from."""
    here = str(Path(__file__).resolve().parents[2])
    try:
        cwd = os.getcwd()
    except OSError:  # (a working directory deleted under a long-lived server)
        cwd = ""
    path = [p for p in sys.path if p and os.path.abspath(p) != cwd]
    # (after the standard library: a stale pathlib.py in site-packages shadows nothing)
    return path if here in map(os.path.abspath, path) else [*path, here]


def _died(code: int | None) -> str:
    how = f"was stopped by signal {-code}" if code is not None and code < 0 else f"exited ({code})"
    return (f"the worker reading this page {how}; a page that leaves thousands of formatting elements open"
            f" builds millions of them, past the worker's {READ_BYTES / 2**30:g} GiB: fix the page's markup")


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(len(payload).to_bytes(8, "big") + payload)
    stream.flush()


def _receive(stream: IO[bytes], deadline: float) -> bytes:
    """One message: its 8-byte length, then its bytes; TimeoutError at ``deadline``, EOFError
    if the writer is gone. (poll, not select: select refuses a descriptor numbered 1024 or more,
    which a server holding many sockets hands out.)"""
    fd = stream.fileno()
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    buf = bytearray()
    want = 8
    while len(buf) < want:
        left = deadline - time.monotonic()
        if left <= 0 or not waiting.poll(left * 1000):
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
    return {"outcome": "read", "note": loaded.note, "noindex": loaded.noindex, "moved_to": loaded.moved_to,
            "documents": [{"ext_id": d.ext_id, "title": d.title, "text": d.text, "url": d.url,
                           "sections": [[list(s.path), s.text] for s in d.sections], "metadata": d.metadata}
                          for d in loaded.documents]}


def serve(replies: int) -> None:
    """The worker's loop (started by :class:`_Worker` through ``_BOOT``), answering on the
    descriptor ``replies``."""
    import resource
    import signal

    inp, out = sys.stdin.buffer, os.fdopen(replies, "wb")
    head = json.loads(_read_exactly(inp, int.from_bytes(_read_exactly(inp, 8), "big")))
    resource.setrlimit(resource.RLIMIT_AS, (head["bytes"], head["bytes"]))
    # SIGALRM's default action ends the process, inside lexbor's C code too: a worker whose
    # parent was killed mid-page (no one left to kill it) stops at the page's limit.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    from electa.ingest.html_page import read_html

    _send(out, b"ready")
    while True:
        size = inp.read(8)
        if len(size) < 8:
            return  # the parent closed the pipe
        page, seconds, name, text, note = pickle.loads(_read_exactly(inp, int.from_bytes(size, "big")))
        signal.alarm(int(seconds) + 2)
        try:
            reply: dict[str, Any] = {"page": page, **_encoded(read_html(name, text, note))}
        except IngestError as exc:  # (its own reason: the parent names the source again)
            reply = {"page": page, "outcome": "refused", "reason": exc.reason}
        except Exception as exc:  # (lexbor out of memory raises "Can't parse HTML.")
            reply = {"page": page, "outcome": "refused", "stop": True,
                     "reason": f"its markup could not be read ({type(exc).__name__}: {str(exc)[:200]}); a page that"
                     " leaves thousands of formatting elements open builds millions of them, past the worker's"
                     f" {head['bytes'] / 2**30:g} GiB: fix the page's markup"}
        signal.alarm(0)
        del text
        # (ASCII: a name or a page holding a lone surrogate, as a file name read from disk may,
        # is escaped, and read back as it was)
        _send(out, json.dumps(reply).encode("ascii"))
        if reply.get("stop"):
            return


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if len(data) < n:
        raise SystemExit(0)  # the parent is gone
    return data


_WORKER = _Worker()
atexit.register(_WORKER.close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKER.forked)
