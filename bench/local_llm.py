"""What a local answer model costs and says, through today's guarded prompt, in one run.

    ELECTA_LOCAL_MODEL=qwen2.5-coder-0.5b ELECTA_DATA_DIR=/path/to/data python bench/local_llm.py
    python bench/local_llm.py --model smollm2 --max-new-tokens 80

Builds the prompt the pipeline builds (:func:`electa.answer.prompt.build_prompt`) over three
pages of the packaged sample help center (error E1042, the refund policy, plans and pricing:
their Markdown with section headings, each cut to ``passage_chars`` like the pipeline's
passages), asks each question through the
``local`` answerer (``ELECTA_LOCAL_MODEL``, ``ELECTA_LOCAL_THREADS``; greedy decoding) and
prints:

- load: seconds to load the tokenizer and the model (dequantised to fp32) once;
- per question: prompt tokens, time to first token (prefill plus the first decode step),
  generated tokens, decode speed (tokens after the first / seconds after the first) and the
  total; the answer as the model wrote it, and as the pipeline sends it, with the citations
  :func:`electa.answer.checks.cite_stream` attached to sentences that cite nothing.

Figures depend on the machine's load: run it on a quiet machine and say what else was running.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources
from pathlib import Path

from electa.answer.checks import attach_citations, citations
from electa.answer.local_llm import LocalGgufAnswerer
from electa.answer.prompt import AgentProfile, build_prompt
from electa.config import Settings
from electa.ingest.markup import load_markdown
from electa.types import ChunkKind, Hit, Passage

PAGES = ("error-e1042.md", "refund-policy.md", "plans-and-pricing.md")
QUESTIONS = (
    "Error E1042 when exporting to CSV",
    "Can I get a refund if I cancel my annual plan?",
    "How much does the Growth plan cost?",
)


def sample_passages(chars: int) -> list[Passage]:
    """The three pages as their Markdown body (front matter and H1 dropped, section headings
    kept: "## Growth" is what ties "$29/mo" to a plan), each cut to ``chars``."""
    folder = resources.files("electa") / "sample_kb" / "help-center"
    out = []
    for i, name in enumerate(PAGES, 1):
        raw = (folder / name).read_bytes()
        doc = load_markdown(name, raw).documents[0]
        body = raw.decode("utf-8").split("---", 2)[-1].strip()
        body = "\n".join(line for line in body.splitlines() if not line.startswith("# ")).strip()
        hit = Hit(i, i, i, ChunkKind.PARENT, doc.title, body, doc.url, name, 0.0, 0.9, True, ())
        out.append(Passage(hit, body[:chars]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="ELECTA_LOCAL_MODEL for this run (name or .gguf path).")
    parser.add_argument("--data", type=Path, default=None, help="Data directory holding models/ (ELECTA_DATA_DIR).")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (ELECTA_LOCAL_THREADS, default 2).")
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="Ask only the first N questions.")
    args = parser.parse_args()
    overrides: dict[str, object] = {"llm_deadline_s": 900.0}  # measure, do not cut off
    if args.model:
        overrides["local_model"] = args.model
    if args.data:
        overrides["data_dir"] = args.data
    if args.threads:
        overrides["local_threads"] = args.threads
    settings = Settings(**overrides)  # type: ignore[arg-type]
    answerer = LocalGgufAnswerer.from_settings(settings, max_new_tokens=args.max_new_tokens)
    assert answerer.model is not None
    print(f"model: {answerer.model.name} ({answerer.model.path}), threads {answerer.threads}, "
          f"max_new_tokens {args.max_new_tokens}")

    start = time.perf_counter()
    tokenizer, _ = answerer.load()
    print(f"load: {time.perf_counter() - start:.1f} s")

    passages = sample_passages(settings.passage_chars)
    total_start = time.perf_counter()
    for question in QUESTIONS[: args.questions]:
        prompt = build_prompt(AgentProfile(name="Ava", business="Tallyo"), question, passages)
        messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)
        prompt_tokens = len(ids["input_ids"])
        asked = time.perf_counter()
        first = None
        pieces = []
        for piece in answerer.stream(prompt, question):
            if first is None:
                first = time.perf_counter()
            pieces.append(piece)
        end = time.perf_counter()
        text = "".join(pieces)
        generated = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        ttft = (first or end) - asked
        decode = (generated - 1) / (end - first) if first is not None and end > first and generated > 1 else 0.0
        sent = attach_citations(text, passages)
        print(f"\nQ: {question}\n  prompt {prompt_tokens} tokens; TTFT {ttft:.1f} s; {generated} tokens in "
              f"{end - asked:.1f} s; decode {decode:.1f} tok/s")
        print(f"  model wrote: {text!r}")
        print(f"  sent:        {sent!r}  cites {citations(sent, len(passages))}")
    print(f"\nquestions: {time.perf_counter() - total_start:.1f} s; load + questions: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
