"""Records as documents, Q&A pairs or curated answers (SPEC A1, A3): CSV, JSON and JSON Lines."""

from __future__ import annotations

import csv
import io
import json
import re

from electa.errors import IngestError
from electa.ingest.decode import decode_text
from electa.ingest.page import Loaded
from electa.types import CuratedAnswer, Document, QAPair, Section


def _qa_from_records(name: str, records: list[dict[str, str]]) -> list[QAPair]:
    pairs = []
    for i, rec in enumerate(records, 1):
        lowered = {str(k).strip().lower(): ("" if v is None else str(v)).strip() for k, v in rec.items()}
        question, answer = lowered.get("question", ""), lowered.get("answer", "")
        if not question or not answer:
            raise IngestError(name, f"record {i} needs both 'question' and 'answer'")
        pairs.append(QAPair(lowered.get("id") or f"{name}#{i}", question, answer, lowered.get("url", "")))
    return pairs


def _curated_from_records(name: str, records: list[dict[str, object]]) -> list[CuratedAnswer]:
    out = []
    for i, rec in enumerate(records, 1):
        lowered = {str(k).strip().lower(): v for k, v in rec.items()}
        raw = lowered.get("triggers") or ""
        triggers = [str(t).strip() for t in raw] if isinstance(raw, list) else re.split(r"[|\n]", str(raw))
        triggers = [t.strip() for t in triggers if t and t.strip()]
        answer = str(lowered.get("answer") or "").strip()
        if not triggers or not answer:
            raise IngestError(name, f"curated answer {i} needs 'triggers' (separated by |) and an 'answer'")
        out.append(CuratedAnswer(str(lowered.get("id") or f"{name}#{i}"), tuple(triggers), answer,
                                 str(lowered.get("url") or "")))
    return out


def load_csv(name: str, data: bytes) -> Loaded:
    text, note = decode_text(name, data)
    reader = csv.DictReader(io.StringIO(text))
    fields = {f.strip().lower() for f in (reader.fieldnames or [])}
    if {"triggers", "answer"} <= fields:
        return Loaded(curated=_curated_from_records(name, list(reader)), note=note)  # type: ignore[arg-type]
    if not {"question", "answer"} <= fields:
        raise IngestError(name, "a CSV needs a header with 'question' and 'answer' (Q&A pairs) or 'triggers' and "
                                "'answer' (curated answers)")
    return Loaded(qa_pairs=_qa_from_records(name, list(reader)), note=note)


def _doc_from_record(name: str, i: int, rec: dict[str, object]) -> Document:
    ext_id = str(rec.get("_id") or rec.get("id") or f"{name}#{i}")
    title = str(rec.get("title") or "")
    body = str(rec.get("text") or rec.get("body") or rec.get("content") or "")
    if not body.strip() and not title.strip():
        raise IngestError(name, f"record {i} ({ext_id}) has no 'text' or 'title'")
    return Document(
        ext_id=ext_id,
        title=title,
        text=body,
        url=str(rec.get("url") or ""),
        sections=(Section((), body),),
    )


def load_jsonl(name: str, data: bytes) -> Loaded:
    """JSON Lines: BEIR corpus records (``_id``, ``title``, ``text``) or Q&A records."""
    text, note = decode_text(name, data)
    loaded = Loaded(note=note)
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(name, f"line {i} is not JSON ({exc.msg} at column {exc.colno})") from exc
        except RecursionError:
            raise IngestError(name, f"line {i} is nested too deeply to read as JSON") from None
        if not isinstance(rec, dict):
            raise IngestError(name, f"line {i} is not a JSON object")
        if "question" in rec and "answer" in rec:
            loaded.qa_pairs.extend(_qa_from_records(name, [rec]))
        else:
            loaded.documents.append(_doc_from_record(name, i, rec))
    if not loaded.documents and not loaded.qa_pairs:
        raise IngestError(name, "no records")
    return loaded


def load_json(name: str, data: bytes) -> Loaded:
    """A JSON list of Q&A pairs (``question``/``answer``) or of documents (``title``/``text``)."""
    text, note = decode_text(name, data)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(name, f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError:  # Python's parser recurses once per level: [[[[...]]]] exhausts the stack
        raise IngestError(name, "JSON nested too deeply to read (arrays or objects inside each other"
                          " beyond Python's recursion limit); expected a list of objects") from None
    records = value.get("items") if isinstance(value, dict) else value
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise IngestError(name, "expected a list of objects (or {\"items\": [...]})")
    if not records:
        raise IngestError(name, "no records")
    if all("triggers" in r for r in records):
        return Loaded(curated=_curated_from_records(name, records), note=note)
    if all("question" in r for r in records):
        return Loaded(qa_pairs=_qa_from_records(name, records), note=note)
    return Loaded(documents=[_doc_from_record(name, i, r) for i, r in enumerate(records, 1)], note=note)
