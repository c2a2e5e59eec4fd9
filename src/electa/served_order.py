"""The served order (SPEC C1-C6): one search's leg results fused by weighted RRF, the unit
standing for each document chosen, each document scored (coverage, cosine, the Q&A and graph
minimums) and ordered (C4: the score, lifted by the legs' agreement, held back by its meaning
gap), as plain rows; the engine builds hits of the first ones. The constants and their sources
are in :mod:`electa.scoring` and :mod:`electa.fusion`; :data:`RANK_RULES` names the rules beyond
them, so result caches and learned rankers know which order they read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from enum import StrEnum

from electa.fusion import Vote, lift_scale, rrf_rows
from electa.scoring import (
    GAP_MARGIN,
    GAP_WEIGHT,
    GRAPH_MIN,
    MATCHED_RANK,
    QA_MIN,
    coverage_of,
    graph_earns_minimum,
    meaning_gap,
    qa_earns_minimum,
    rarity,
)
from electa.stores.protocol import Store, StoredUnit
from electa.text import stem_set
from electa.text.analysis import DEFAULT_LANGUAGE, coverage_terms, credit, index_terms, joined_parts
from electa.text.asking import asks_what_it_is
from electa.types import ChunkKind, Hit, LegResult, LegStatus, LegVote

FULLTEXT_LEGS = frozenset({"fulltext", "qa"})
# A child window or a title alone is too little to read: the hit shows the parent it stands for.
SHOWN_AS_PARENT = frozenset({ChunkKind.CHILD, ChunkKind.TITLE})
PAIR_KINDS = frozenset({ChunkKind.QA, ChunkKind.CURATED})
# SPEC D4; reference/chat-widget-rag-pipeline.txt step 7, on the absolute score's scale: in the
# C4 order the page also counts as agreed on by every leg (ServedOrder.rows), so agreement
# cannot outweigh it.
PAGE_BOOST = 0.15
# The version of the rules ServedOrder.rows orders by beyond its constants: bump it with any
# change to them, so result caches (serving_recipe) drop what the rules before ordered.
# 2: the visitor's page counts as agreed on by every leg (D4 beside a 0.25 lift).
# 3: the visitor's page is boosted in the fused order too (D4 for an agent tuned to plain RRF).
# 4: a Q&A pair earns the Q&A minimum only with the dense leg's second opinion, where it ran
#    (electa.scoring.qa_earns_minimum; the Q&A leg's own first place earned it alone).
# 5: that second opinion is the dense leg's first place, or its first three when its first document
#    is a page (not a pair) at the pair's URL (its first three alone gave it until then).
# 6: the unit standing for a document is, of each leg's first unit of it (a whole-document unit
#    only where no leg found a section), the one holding most of the question's words (the
#    best-contributing leg's until then): ServedOrder.rows.
# 7: of units holding as many of the question's words, the one holding the rarer ones among the
#    candidates stands (electa.scoring.rarity; the best-contributing leg's until then). No score
#    moves; the passage shown, and what the judges and the answer read, do.
# 8: for a question asking what something is (or naming only a page's title), where the words of
#    the question the chosen unit holds are all its page's title's, the page's opening section
#    (the parent its title unit is shown as) stands instead if it holds as many, in its own text
#    at least as many as the chosen unit's (ServedOrder._openings; npm's docs: "What is
#    package-lock.json for?" stood on the section about the file's `name` field). No score moves.
# 9: two neighbouring words of a question that a page writes as one ("log in": login, "sign up",
#    "e-mail") are searched by full text as that word too, and a passage holding the word holds
#    both for coverage (electa.text.analysis.joined_parts, credit; npm's docs: "How do I log in?"
#    found the log files' pages, not npm-login). Scores move: full text's, and coverage's.
# 10: the C4 order holds a candidate back by its meaning gap, how far its dense cosine lies below
#    the search's best beyond a margin (electa.scoring.meaning_gap; bench/meaning_gap.py). No score
#    moves; the order does.
# 11: a question's contractions are read as the words they stand for ("I'm": "I"; "doesn't": "does
#    not"), so no "m", "ve", "ll", "re", "d" nor "doesn" is searched by full text, counted by
#    coverage or sought in titles (electa.text.without_clitics). Scores move: full text's, and
#    coverage's.
RANK_RULES = 11


# A scored candidate before it is a Hit: (order key, fused value, votes, the unit shown, absolute
# score, url, other urls).
Row = tuple[float, float, list[Vote], StoredUnit, float, str, tuple[str, ...]]


class Order(StrEnum):
    """How hits are ordered: C4 (default), the plain absolute score, or plain RRF."""

    SCORED = "scored"
    ABSOLUTE = "absolute"
    FUSED = "fused"


def hit_of(row: Row, passes: bool, probability: float | None = None, rescued_by: str = "") -> Hit:
    """The hit a row stands for: whether it ``passes``, its calibrated ``probability`` and the
    title word that rescued it (SPEC B6), if any."""
    key, fused_value, votes, shown, score, url, also = row
    return Hit(shown.id, shown.document_id, shown.source_id, shown.kind, shown.title, shown.text, url,
               shown.ext_id, fused_value, score, passes, tuple(LegVote(*v) for v in votes), also, key,
               probability, rescued_by, lang=shown.lang)


class ServedOrder:
    """Orders one search's leg results (:meth:`rows`) over ``store``'s units, keeping the terms
    it reads of each unit and title (a unit's text and language never change: ids are never
    reused), each cache cleared when it passes 200,000 entries."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._stems: dict[int, frozenset[str]] = {}
        self._terms: dict[int, frozenset[str]] = {}
        self._page_titles: dict[tuple[str, str], frozenset[str]] = {}  # (title, language) -> its terms (_title_terms)
        self._unit_texts: dict[int, frozenset[str]] = {}  # unit id -> the terms of its text alone (_text_terms)

    def rows(self, text: str, results: Sequence[LegResult], weights: Mapping[str, float],
             k: float, order: Order, page_url: str | None, lift: float, trust_graph: bool = False) -> list[Row]:
        """Every candidate fused, scored and ordered, as plain rows (no Hit built). Runs on
        every search: plain loops over a few hundred candidates, one set intersection per
        candidate for coverage (issue 12 item 8)."""
        ok = [r for r in results if r.status is LegStatus.OK]
        # (a dense leg out, or one that found nothing, gives the Q&A minimum no second opinion to ask)
        dense_ran = any(r.leg == "dense" and r.hits for r in ok)
        units = self.store.units(sorted({h.unit_id for r in ok for h in r.hits}))
        # The URLs of the dense leg's first document when it is a page: a pair pointing there has
        # its page confirmed (another pair first confirms only itself: its siblings share its URL).
        dense_first: frozenset[str] = frozenset()
        for r in ok:
            if r.leg == "dense":
                first = next((units[h.unit_id] for h in r.hits if h.unit_id in units), None)
                if first is not None and first.kind not in PAIR_KINDS:
                    dense_first = frozenset((first.url, *first.also_urls)) - {""}
        parents = self.store.units(sorted({u.parent_id for u in units.values()
                                           if u.kind in SHOWN_AS_PARENT and u.parent_id is not None}))
        # C6: parent, child, title and whole-document units of one document vote as that document.
        rankings: dict[str, list[tuple[int, float]]] = {}
        unit_of: dict[str, dict[int, StoredUnit]] = {}  # leg -> document -> the leg's first unit of it
        for r in ok:
            ranked: list[tuple[int, float]] = []
            firsts: dict[int, StoredUnit] = {}
            for h in r.hits:
                unit = units.get(h.unit_id)
                if unit is None:  # deleted between the leg's match and now
                    continue
                if unit.document_id not in firsts:
                    firsts[unit.document_id] = unit
                ranked.append((unit.document_id, h.score))
            rankings[r.leg], unit_of[r.leg] = ranked, firsts
        fused = rrf_rows(rankings, weights, k)
        scale = lift_scale(weights, rankings, k)
        # The question's terms in each of its candidates' languages: each covered in its own.
        asked = coverage_terms(text, {u.lang or DEFAULT_LANGUAGE for u in (*units.values(), *parents.values())})
        covered = {lang: [coverage_of(n, len(q)) for n in range(len(q) + 1)] for lang, q in asked.items()}
        # A passage writing two of its words as one ("login" for "log in") holds both: full text
        # found it by the joined word, and its coverage says so.
        joins = {lang: joined_parts(text, lang) for lang in asked}
        terms = self._terms
        # The unit standing for a document: of each leg's first unit of it, the one whose passage
        # holds most of the question's words (RANK_RULES 6); of equals, the one holding the
        # rarer words among the candidates (RANK_RULES 7: "What does EADDRINUSE mean?" stands on
        # the section holding the code, not the short one saying "meaning" that full text ranked
        # first), then the best-contributing leg's (the first such vote). Dense's first window of
        # a long page can sit in another section than the one full text found by the question's
        # code. A whole-document unit holds every section's words, so it stands only where no
        # leg found a section (words scattered over a page's sections do not add up to a passage
        # that holds them); which units compete never depends on the weights or k, and the
        # choice among equals never moves a score. For a question asking what something is, the
        # page's opening may stand instead (RANK_RULES 8: ServedOrder._openings).
        views_of: dict[int, list[tuple[StoredUnit, frozenset[str], str]]] = {}
        pool: dict[int, frozenset[str]] = {}
        for document_id, _, votes in fused:
            best = votes[0]
            for v in votes:
                if v[3] > best[3] or (v[3] == best[3] and v[1] < best[1]):
                    best = v
            found = [unit_of[leg][document_id] for leg in (best[0], *(v[0] for v in votes if v[0] != best[0]))]
            if any(u.kind is not ChunkKind.DOC for u in found):
                found = [u for u in found if u.kind is not ChunkKind.DOC]
            views = views_of[document_id] = []
            for unit in found:
                view = parents.get(unit.parent_id or -1, unit) if unit.kind in SHOWN_AS_PARENT else unit
                passage = terms.get(view.id)
                if passage is None:
                    passage = self._passage_terms(view)
                passage = credit(passage, joins.get(view.lang or DEFAULT_LANGUAGE, {}))
                views.append((view, passage, view.lang or DEFAULT_LANGUAGE))
                pool[view.id] = passage
        rare: dict[str, float] | None = None  # (read only where equals differ in what they hold)
        chosen: dict[int, tuple[StoredUnit, int, frozenset[str], str]] = {}
        for document_id, _, _ in fused:
            shown, shared, shown_held, lang = None, -1, frozenset[str](), DEFAULT_LANGUAGE
            for view, passage, view_lang in views_of[document_id]:
                held = asked[view_lang].intersection(passage)
                holds = len(held)
                if holds < shared or (holds == shared and held == shown_held):
                    continue
                if holds == shared:
                    if rare is None:
                        rare = rarity({t for q in asked.values() for t in q}, pool.values())
                    # (fsum over sorted weights: the same words weigh the same in any set order)
                    if math.fsum(sorted(rare[t] for t in held)) <= math.fsum(sorted(rare[t] for t in shown_held)):
                        continue
                shown, shared, shown_held, lang = view, holds, held, view_lang
            assert shown is not None
            chosen[document_id] = (shown, shared, shown_held, lang)
        self._openings(chosen, asked, joins, text)
        # C4's meaning gap (electa.scoring.meaning_gap): the search's best and lowest cosine, the
        # latter standing for a candidate the dense leg did not return.
        cosines = [v[2] for _, _, votes in fused for v in votes if v[0] == "dense"]
        best_cosine, low_cosine = (max(cosines), min(cosines)) if cosines else (None, 0.0)
        rows: list[Row] = []
        for document_id, fused_value, votes in fused:
            shown, shared, _, lang = chosen[document_id]
            cosine = None
            qa_rank = dense_rank = graph_rank = other_rank = 0
            graph_raw = 0.0
            words_only = True
            for leg, rank, raw, _ in votes:
                if leg == "dense":
                    cosine, dense_rank = raw, rank
                elif leg == "qa":
                    qa_rank = rank
                if leg == "graph":
                    graph_rank, graph_raw = rank, raw
                elif not other_rank or rank < other_rank:
                    other_rank = rank
                if leg not in FULLTEXT_LEGS:
                    words_only = False
            if not shared and words_only:
                continue  # found by words alone, yet shares no stem with the question
            # absolute_score(covered, cosine, qa_earns_minimum(...)) and order_value(), inlined:
            # this loop runs for every candidate of every search (test_rank_matches_the_rules).
            score = covered[lang][shared]
            if cosine is not None and cosine > score:
                score = min(cosine, 1.0)  # (a mapped e5 score passes 1 for a near-copy: scoring.absolute_score)
            if qa_rank and score < QA_MIN and qa_earns_minimum(
                    qa_rank, dense_rank, dense_ran, not dense_first.isdisjoint((shown.url, *shown.also_urls))):
                score = QA_MIN
            if graph_rank and score < GRAPH_MIN and graph_earns_minimum(graph_rank, graph_raw, 1 if trust_graph else other_rank):
                score = GRAPH_MIN
            gap = 0.0
            if order is Order.SCORED:
                key = score + lift * min(1.0, fused_value / scale) if scale > 0 else score
                if best_cosine is not None and not (0 < qa_rank <= MATCHED_RANK or 0 < graph_rank <= MATCHED_RANK):
                    gap = GAP_WEIGHT * meaning_gap(best_cosine, low_cosine if cosine is None else cosine, GAP_MARGIN)
                    key -= gap
            elif order is Order.ABSOLUTE:
                key = score
            else:
                key = fused_value
            url, also = shown.url, shown.also_urls
            if page_url:
                if page_url in also:  # A3: the copy on the visitor's page wins
                    url, also = page_url, tuple(u for u in (shown.url, *also) if u != page_url)
                if url == page_url:
                    # D4: the page the visitor is reading (order only, never the floor). In the C4
                    # order it counts as agreed on by every leg, so it beats a page scored up to
                    # PAGE_BOOST higher whatever the legs' agreement (the reference's +0.15 is on
                    # a scale without it) and never one scored more than PAGE_BOOST + lift higher,
                    # each held back by its own meaning gap (a page far from the question's
                    # meaning is not exempt for being open in the visitor's browser).
                    # In the fused order (an agent tuned to plain RRF) there is no score: it gains
                    # PAGE_BOOST on the fused value's own 0-1 scale (fused / max_fused).
                    key = (fused_value + PAGE_BOOST * scale if order is Order.FUSED
                           else (score + lift if order is Order.SCORED and scale > 0 else score) + PAGE_BOOST - gap)
            rows.append((key, fused_value, votes, shown, score, url, also))
        rows.sort(key=lambda row: -row[0])  # stable: equal keys keep the fused order
        return rows

    def hit_stems(self, hit: Hit) -> frozenset[str]:
        """A hit's English stems (title and text), as a learned ranker's features read them;
        kept per unit (a unit's text never changes: ids are never reused)."""
        stems = self._stems.get(hit.unit_id)
        if stems is None:
            if len(self._stems) > 200_000:
                self._stems.clear()
            stems = self._stems[hit.unit_id] = frozenset(stem_set(f"{hit.title} {hit.text}"))
        return stems

    def _passage_terms(self, unit: StoredUnit) -> frozenset[str]:
        """A unit's terms (title and text) in its own language, for lexical coverage; kept per
        unit (a unit's text and language never change: ids are never reused)."""
        found = self._terms.get(unit.id)
        if found is None:
            if len(self._terms) > 200_000:
                self._terms.clear()
            found = self._terms[unit.id] = frozenset(index_terms(f"{unit.title} {unit.text}", unit.lang))
        return found

    def _openings(self, chosen: dict[int, tuple[StoredUnit, int, frozenset[str], str]],
                  asked: Mapping[str, frozenset[str]], joins: Mapping[str, Mapping[str, frozenset[str]]],
                  question: str) -> None:
        """RANK_RULES 8, on ``chosen`` (document -> the unit standing for it, how many of the
        question's words it holds, which, its language), for a question that asks what something
        is (:func:`electa.text.asking.asks_what_it_is`) or is nothing but words of a page's title
        ("package-lock.json"; "How do I bill hours?" is not: "how" is no title's word): where the
        words the chosen unit holds are all its page's title's, which every section carries in
        its title trail, its words do not say it answers better than the rest, and the page's
        opening (the parent its title unit is shown as), where a page says what it is about,
        stands instead if it holds as many and its own text holds at least as many of them as
        the chosen unit's own text does. A question how to do something
        keeps the legs' section ("How do I bill hours?": "Turn hours into an invoice"); a notice
        at the top of a page ("This article applies to plans bought on the web.") holds none of
        the words in its text and never stands (the review of 33a9419 found both standing). An
        opening holding more of the question's words than the chosen unit does not stand: the
        legs chose another section over it. The store is asked only about pages where the rule
        can apply (the chosen unit's title trail holds every word it holds)."""
        what_it_is = asks_what_it_is(question)

        def named(words: frozenset[str], title: str, lang: str) -> bool:
            """The chosen unit's words are all ``title``'s, and so is the whole question unless it asks what it is."""
            terms = credit(self._title_terms(title, lang), joins.get(lang, {}))
            return words <= terms and (what_it_is or self._title_terms(question, lang) <= terms)

        maybe = [d for d, (shown, _, held, lang) in chosen.items() if held and named(held, shown.title, lang)]
        if not maybe:
            return
        for document_id, (title, opener) in self.store.leads(maybe).items():
            shown, shared, shown_held, lang = chosen[document_id]
            if opener.id == shown.id or (opener.lang or DEFAULT_LANGUAGE) != lang or not named(shown_held, title, lang):
                continue
            joined = joins.get(lang, {})
            held = asked[lang].intersection(credit(self._passage_terms(opener), joined))
            if (len(held) == shared and len(held & credit(self._text_terms(opener), joined))
                    >= len(held & credit(self._text_terms(shown), joined))):
                chosen[document_id] = (opener, shared, held, lang)

    def _title_terms(self, title: str, lang: str) -> frozenset[str]:
        """The terms of a title, or of a title trail, in ``lang`` (kept: titles repeat)."""
        key = (title, lang)
        found = self._page_titles.get(key)
        if found is None:
            if len(self._page_titles) > 200_000:
                self._page_titles.clear()
            found = self._page_titles[key] = frozenset(index_terms(title, lang))
        return found

    def _text_terms(self, unit: StoredUnit) -> frozenset[str]:
        """A unit's terms of its text alone (not its title trail), kept per unit as
        :meth:`_passage_terms` keeps title and text."""
        found = self._unit_texts.get(unit.id)
        if found is None:
            if len(self._unit_texts) > 200_000:
                self._unit_texts.clear()
            found = self._unit_texts[unit.id] = frozenset(index_terms(unit.text, unit.lang))
        return found
