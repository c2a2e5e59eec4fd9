"""Turning bytes into text, with errors that say what was wrong."""

from __future__ import annotations

from electa.errors import IngestError

_BOMS = (("utf-8-sig", b"\xef\xbb\xbf"), ("utf-16", b"\xff\xfe"), ("utf-16", b"\xfe\xff"))


def decode_text(name: str, data: bytes) -> tuple[str, str]:
    """Decode a text file; returns ``(text, note)``.

    UTF-8 (with or without BOM) and BOM-marked UTF-16 are read as they are. Text that is not
    UTF-8 but decodes as Windows-1252 (common in exported help-center pages) is accepted with a
    note. Files holding NUL bytes are binary and refused.
    """
    if not data.strip():
        raise IngestError(name, "the file is empty")
    for encoding, bom in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding), ""
            except UnicodeDecodeError as exc:
                raise IngestError(name, f"starts with a {encoding} mark but is not {encoding}: {exc}") from exc
    if b"\x00" in data[:8192]:
        raise IngestError(name, "binary content (NUL bytes) in a text file; is the extension right?")
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            raise IngestError(
                name, f"not UTF-8 text (bad byte at offset {exc.start}); convert it to UTF-8"
            ) from exc
        return text, f"not UTF-8 (bad byte at offset {exc.start}); read as Windows-1252"
