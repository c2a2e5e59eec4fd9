"""The embedded store's saved full-text images (issue 12: :mod:`electa.stores.lexical_segments`):
built from FTS5's own index, saved as memory-mappable arrays under ``lexical/``, named in ``meta``
in a transaction of the database, and trimmed of the recent rows a saved image holds.

A mixin of :class:`electa.stores.sqlite.SqliteStore` (:class:`~electa.stores.sqlite_tables.StoreTables`
says what it reads of it), kept apart as :mod:`electa.stores.sqlite_vectors` is.
"""

from __future__ import annotations

import secrets
import shutil
import sqlite3
import time
from pathlib import Path

from electa.stores import lexical_segments
from electa.stores.bm25_memory import BM25Image
from electa.stores.protocol import TextIndex
from electa.stores.sqlite_schema import FTS_TABLES, RECENT_TABLES
from electa.stores.sqlite_tables import StoreTables

# A saved full-text image still being written after this long is a crashed save's leftover.
PARTIAL_KEPT_S = 3600.0


class LexicalImages(StoreTables):
    """The saved full-text images of the embedded store in ``directory`` (see the module's docstring)."""

    directory: Path

    def lexical_image(self, index: TextIndex, weights: tuple[float, float],
                      recent_above: int | None = None) -> BM25Image | None:
        """Built from the FTS5 index itself (``fts5vocab``), so its terms are FTS5's terms;
        the generation and the rows are read in one snapshot. With ``recent_above``, only the
        rows above that id, read from the small table of rows written since the last
        :meth:`trim_recent` (cost in proportion to them, not the corpus); ``None`` when a trim
        (by any process) has removed rows above ``recent_above``."""
        with self.snapshot() as con:
            generation = self._generation(con)
            if recent_above is None:
                return BM25Image.build(con, FTS_TABLES[TextIndex(index)], (*weights, 0.0), generation)
            table = RECENT_TABLES[TextIndex(index)]
            # Another process may have trimmed the recent rows past what this one's large
            # segment holds: then they are no longer all here, and the caller rebuilds whole.
            trimmed = con.execute("SELECT value FROM meta WHERE key=?", (f"trimmed:{table}",)).fetchone()
            if trimmed is not None and int(trimmed[0]) > recent_above:
                return None
            return BM25Image.build(con, table, (*weights, 0.0), generation, above=recent_above)

    def trim_recent(self, index: TextIndex, upto: int) -> None:
        """Forget the recent rows with ids up to ``upto`` (a full image now holds them), and
        say so in ``meta`` (``trimmed:<table>``), where every process reading them looks."""
        table = RECENT_TABLES[TextIndex(index)]
        with self.transaction() as con:
            con.execute(f"DELETE FROM {table} WHERE rowid <= ?", (upto,))
            # FTS5 deletes leave markers in its segments; reading them (fts5vocab) would still
            # cost as much as the rows once held. 'optimize' merges them away.
            con.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
            con.execute("INSERT INTO meta VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET"
                        " value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))", (f"trimmed:{table}", str(upto)))

    def _images_dir(self) -> Path:
        return self.directory / "lexical"

    def _saved_name(self, con: sqlite3.Connection, table: str) -> tuple[str, int] | None:
        """The saved image named in ``meta``: its directory's name and its ``max_row``."""
        found = con.execute("SELECT value FROM meta WHERE key=?", (f"saved:{table}",)).fetchone()
        if found is None:
            return None
        name, max_row = str(found[0]).rsplit(":", 1)
        return name, int(max_row)

    def _outdated(self, named: tuple[str, int] | None, max_row: int) -> bool:
        """Whether an image up to ``max_row`` should replace the one ``named``: none is named,
        it is older, or it cannot be read (gone, or of a format this code no longer reads)."""
        return (named is None or named[1] < max_row
                or not lexical_segments.readable(self._images_dir() / named[0]))

    def save_image(self, index: TextIndex, weights: tuple[float, float], image: BM25Image) -> bool:
        """Saved as memory-mappable arrays under ``lexical/<table>-<max_row>-<token>/``; which
        one is current is named in ``meta`` (``saved:<table>`` = ``<directory>:<max_row>``) in
        a transaction of this database, so a copy of the database restored over the directory
        names only an image saved before the copy (holding rows the copy holds too), and no
        process reads a directory still being written (it is written as ``….partial`` first
        and renamed into place inside the transaction that names it). Older images are removed
        after that commit, outside the write lock: only those below the one then named, so a
        newer one another process has just saved is never touched, and a reader that read the
        old name finds the new one when it looks again."""
        table = FTS_TABLES[TextIndex(index)]
        with self.snapshot() as con:
            if not self._outdated(self._saved_name(con, table), image.max_row):
                return False  # (before writing hundreds of MB)
        images = self._images_dir()
        name = f"{table}-{image.max_row}-{secrets.token_hex(8)}"
        partial = images / f"{name}.partial"
        lexical_segments.write(image, (*weights, 0.0), partial)
        try:
            with self.transaction() as con:
                if not self._outdated(self._saved_name(con, table), image.max_row):
                    return False
                partial.rename(images / name)
                self.set_meta(con, f"saved:{table}", f"{name}:{image.max_row}")
        except BaseException:
            shutil.rmtree(images / name, ignore_errors=True)  # renamed, but never named
            raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)  # not kept
        self._remove_old_images(table)
        return True

    def _remove_old_images(self, table: str) -> None:
        with self.snapshot() as con:
            named = self._saved_name(con, table)
        if named is None:
            return
        for path in self._images_dir().glob(f"{table}-*"):
            parts = path.name.split("-")
            try:
                older = int(parts[-2]) < named[1]
                if path.name.endswith(".partial"):  # another save in progress, or a crash's
                    older = time.time() - path.stat().st_mtime > PARTIAL_KEPT_S
                if older and path.name != named[0]:
                    shutil.rmtree(path, ignore_errors=True)  # a process mapping it keeps its pages (POSIX)
            except (ValueError, IndexError, FileNotFoundError):
                continue

    def saved_image(self, index: TextIndex, weights: tuple[float, float]) -> BM25Image | None:
        table = FTS_TABLES[TextIndex(index)]
        recent = RECENT_TABLES[TextIndex(index)]
        for _ in range(2):  # a second look when another process saved and cleaned up meanwhile
            with self.snapshot() as con:
                generation = self._generation(con)
                named = self._saved_name(con, table)
                trimmed = con.execute("SELECT value FROM meta WHERE key=?", (f"trimmed:{recent}",)).fetchone()
            if named is None:
                return None
            name, max_row = named
            if trimmed is not None and int(trimmed[0]) > max_row:
                return None  # rows between it and the trim are in neither: build whole
            image = lexical_segments.load(self._images_dir() / name, (*weights, 0.0), generation)
            if image is not None and image.max_row == max_row:
                return image
        return None
