"""Every language a help center is written in (issue 14): language per document, analysis per
language in the full-text legs, and stores analysed in English before it brought up to date."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from electa import Access, Caller, Engine
from electa.config import Settings
from electa.embedders.hashing import HashEmbedder
from electa.ingest.page import Loaded
from electa.text import fold, tokens
from electa.text.analysis import ANALYSIS, index_terms, query_terms
from electa.text.language import detect, detect_parts
from electa.types import CuratedAnswer, Document, QAPair, Section

PAGES = [
    ("de", "Rückerstattung", "Die Rückerstattungen erfolgen innerhalb von vierzehn Tagen nach dem Kauf, wenn Sie"
     " uns über das Kontaktformular schreiben und die Bestellnummer angeben."),
    ("zh", "退款政策", "退款将在购买后十四天内发放。请通过联系表单写信给我们，并注明您的订单号。"),
    ("th", "การคืนเงิน", "การคืนเงินจะดำเนินการภายในสิบสี่วันหลังการซื้อ โปรดเขียนถึงเราผ่านแบบฟอร์มติดต่อ"),
    ("en", "Export errors", "Error E1042 appears when exporting to CSV with more than a million rows; split the"
     " export by date range instead."),
]


def _pages() -> Loaded:
    return Loaded([Document(lang, title, text, f"https://help/{lang}", sections=(Section((), text),))
                   for lang, title, text in PAGES])


def _found(engine: Engine, question: str, caller: Caller, leg: str) -> list[str]:
    """The URLs ``leg`` alone finds for ``question``, best first."""
    (result,), _ = engine.retrieve(question, caller, legs=[leg])
    units = engine.store.units([h.unit_id for h in result.hits])
    return [units[h.unit_id].url for h in result.hits]


def test_words_keep_the_marks_that_spell_them_and_unspaced_scripts_split_into_characters_and_pairs() -> None:
    assert tokens("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # vowel signs and the virama stay inside the word
    assert fold("Ünïcödé") == "unicode"
    assert tokens("คืนเงิน")[:4] == ["คื", "น", "เ", "งิ"]  # a consonant with its vowel is one character
    assert "คืน" in tokens("คืนเงิน") and "คืนเงิน" not in tokens("คืนเงิน")  # pairs, never the whole run
    assert set(tokens("退款")) == {"退", "款", "退款"}
    # Kana keep their voicing marks, and the prolonged-sound mark belongs to the run (review).
    assert {"パス", "ワー", "ード"} <= set(tokens("パスワード")) and "ガス" in tokens("ガス料金")
    assert {"コー", "ーヒ", "ヒー"} <= set(tokens("コーヒー"))


def test_symbols_part_words_as_fts5_did_and_compatibility_forms_read_as_plain_letters() -> None:
    assert tokens("Acme™ plans") == ["acme", "plans"]  # review: "acmeTM" was found by nothing
    assert tokens("ＰＲＯ plan ﬁle") == ["pro", "plan", "file"]
    assert tokens("בית־ספר") == ["בית", "ספר"]  # the maqaf is punctuation: two words, as written


def test_each_language_is_stemmed_by_its_own_rules_on_the_letters_it_was_written_with() -> None:
    assert index_terms("Rückerstattungen", "de") == index_terms("Rückerstattung", "de") == ["de·ruckerstatt"]
    assert index_terms("refunds", "en") == ["en·refund"]
    assert index_terms("refunds", "zh") == ["zh·refunds"]  # no stemmer: the word as written
    # Stemmed before folding (review): the Snowball rules read the accented letters.
    assert index_terms("informação informações", "pt") == ["pt·inform", "pt·inform"]
    assert index_terms("новый новая новое", "ru") == ["ru·нов"] * 3
    assert index_terms("gözlükçü gözlükçüler", "tr")[0] == index_terms("gözlükçü gözlükçüler", "tr")[1]


def test_a_question_meets_each_unit_in_the_units_own_language_only() -> None:
    assert set(query_terms("Rückerstattungen", ["de", "en"])) == {"de·ruckerstatt", "en·ruckerstattungen"}
    # Dutch stems "orders" to "or"; it can only ever match Dutch units (review: it matched every
    # English unit holding the word "or").
    assert "nl·or" in query_terms("orders", ["en", "nl"]) and "en·or" not in query_terms("orders", ["en", "nl"])
    # Each language drops its own stop words only (review: German "hat" and Dutch "van", "door"
    # were dropped from English questions in an organisation that also wrote in those).
    assert query_terms("Wann kommt meine Rückerstattung?", ["de"]) == ["de·kommt", "de·ruckerstatt"]
    assert {"en·hat", "en·van", "en·door"} <= set(query_terms("a hat for the van door", ["en", "de", "nl"]))
    assert index_terms("⑴ ok", "de") == ["de·1", "de·ok"]  # folded to "(1)": still one term


def test_a_questions_own_stop_words_are_dropped_from_its_terms_in_every_language() -> None:
    """A Spanish sentence too short to read is analysed as English: the Spanish question's
    English terms must not be "de", "la", "el" (issue 14: Spanish full text fell 0.82 -> 0.75)."""
    terms = query_terms("¿Cuándo llega el reembolso de la compra?", ["en", "es"])
    assert {"en·reembolso", "es·reembols", "en·compra"} <= set(terms)
    assert not {"en·de", "en·la", "en·el", "en·cuando"} & set(terms)
    # An English question keeps its English words whatever else the organisation writes in.
    assert {"en·hat", "en·die"} <= set(query_terms("Why did the hat die?", ["en", "de"]))


def test_a_pages_coverage_does_not_depend_on_the_languages_of_the_other_candidates(tmp_path: Path) -> None:
    """Review: coverage counted the question's words over every candidate language at once, so
    an English page scored 0.85 alone and 0.65 beside a German one."""
    english = Document("en", "Orders", "Cancel an order from the orders page.", "https://help/cancel")
    german = Document("de", "Bestellungen", "Cancel order: eine Bestellung storniert man auf der Seite der"
                      " Bestellungen, bevor sie versandt wurde.", "https://help/storno")

    def score(docs: list[Document]) -> float:
        with Engine.open(tmp_path / str(len(docs)), Settings(), HashEmbedder(dim=32)) as engine:
            engine.ingest_loaded("kb", Loaded(docs), Access("acme"))
            result = engine.search("How do I cancel a cancelled order?", Caller("acme"), legs=["fulltext"])
            assert {h.url for h in result.hits} == {d.url for d in docs}  # every page a candidate
            return next(h.score for h in result.hits if h.url == "https://help/cancel")

    assert score([english]) == score([english, german]) == pytest.approx(0.85)


def test_a_team_only_page_in_another_language_changes_nothing_an_outsider_is_shown(tmp_path: Path) -> None:
    """Review: the languages a question is analysed in are the organisation's, hidden pages'
    too; whatever a hidden page's language adds may only ever match pages in that language."""
    pages = [Document("hats", "Hats", "Return a hat within thirty days.", "https://help/hats"),
             Document("shoes", "Shoes", "Return shoes within thirty days of the order.", "https://help/shoes"),
             *(Document(f"f{i}", f"Page {i}", text, f"https://help/{i}") for i, text in enumerate(
                 ["Opening hours are nine to five.", "Delivery takes two days.", "Pay by card or invoice.",
                  "Contact us by phone or email.", "Gift cards never expire."]))]

    def shown(hidden: bool) -> list[tuple[str, float, float]]:
        with Engine.open(tmp_path / str(hidden), Settings(), HashEmbedder(dim=32)) as engine:
            engine.ingest_loaded("kb", Loaded(pages), Access("acme"))
            if hidden:
                engine.ingest_loaded("intern", Loaded([Document("i", "Intern", "Wer hat die Rücksendung der Schuhe"
                                                                " genehmigt? Das Team prüft jede Rückgabe.", "")]),
                                     Access("acme", principals=("team:x",)))
                assert engine.store.languages(Caller("acme")) == ("de", "en")
            result = engine.search("return a hat", Caller("acme"), legs=["fulltext"])
            return [(h.url, round(h.score, 6), round(h.votes[0].raw_score, 6)) for h in result.hits]

    assert shown(True) == shown(False)


def test_the_language_of_a_document_is_read_from_its_text() -> None:
    assert [detect(text) for _, _, text in PAGES] == [lang for lang, _, _ in PAGES]
    assert detect("") == detect("1042 / 2048 -- 7") == ""
    assert detect_parts(["Refunds", "Die Rückerstattungen erfolgen innerhalb von vierzehn Tagen."]) == "de"


def test_a_document_whose_title_and_text_read_as_nothing_together_is_read_by_its_text() -> None:
    """XQuAD-R: an English slug above a Chinese name read as no language, went to the chain's
    English model, and came in the dense top 10 of most Chinese questions."""
    from electa.stores.protocol import PreparedDocument, language_of
    from electa.types import Chunk, ChunkKind

    def doc(title: str, text: str) -> PreparedDocument:
        return PreparedDocument("x", title, "", "h", (Chunk(ChunkKind.PARENT, 0, title, text),), (None,))

    assert language_of(doc("United_Methodist_Church", "约翰")) == "zh"
    assert language_of(doc("Refunds", "Refunds are issued within fourteen days.")) == "en"
    assert language_of(doc("Kontakt", "")) == ""  # nothing to read: analysed as the default


def test_a_mixed_help_center_is_found_by_a_word_of_the_question_in_the_full_text_leg(tmp_path: Path) -> None:
    """No setting beyond the default: each page is analysed in its own language."""
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        caller = Caller("acme")
        assert engine.store.languages(caller) == ("de", "en", "th", "zh")
        for question, url in [("Wann bekomme ich meine Rückerstattung?", "https://help/de"),
                              ("退款需要多久？", "https://help/zh"),
                              ("คืนเงินกี่วัน", "https://help/th"),
                              ("E1042 on export", "https://help/en")]:
            assert _found(engine, question, caller, "fulltext")[:1] == [url], question


def test_a_question_in_the_pages_language_passes_the_floor_by_its_own_words(tmp_path: Path) -> None:
    """Review: coverage was English (Porter stems, English stop words), so a German question's
    "ich", "meine", "wann" counted as words the page had to hold, and singular missed plural."""
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        result = engine.search("Wann bekomme ich meine Rückerstattung zurück?", Caller("acme"), legs=["fulltext"])
        top = result.hits[0]
        # One of its three content words (bekomme, rückerstattung, zurück) is on the page: 0.25 + 0.6/3.
        # Counted the English way it was one of six (wann, ich, meine too): 0.35, under the floor.
        assert top.url == "https://help/de" and top.passes and top.score == pytest.approx(0.45)


def test_a_language_first_ingested_after_a_search_is_searched_in_at_once(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("de", Loaded([Document("de", *PAGES[0][1:], "https://help/de")]), Access("acme"))
        assert _found(engine, "退款需要多久？", Caller("acme"), "fulltext") == []
        engine.ingest_loaded("zh", Loaded([Document("zh", *PAGES[1][1:], "https://help/zh")]), Access("acme"))
        assert _found(engine, "退款需要多久？", Caller("acme"), "fulltext") == ["https://help/zh"]


def test_curated_questions_in_any_language_are_matched_by_the_qa_leg(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("faq", Loaded([], [QAPair("q1", "如何重置密码？", "在登录页面点击“忘记密码”。", "https://help/pw")]),
                             Access("acme"))
        assert _found(engine, "重置密码", Caller("acme"), "qa") == ["https://help/pw"]


@pytest.mark.embedded
def test_a_store_analysed_in_english_before_is_analysed_again_when_it_opens(tmp_path: Path) -> None:
    """A store made before issue 14 (FTS5's porter tokenizer over raw text, no languages, curated
    triggers folded by the old rules) is brought up to date on open, losing nothing: the same
    units, vectors, access, Q&A pairs and curated answers."""
    directory = tmp_path / "d"
    team = Access("acme", principals=("team:x",))
    with Engine.open(directory, Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), team)
        engine.ingest_loaded("faq", Loaded([], [QAPair("q", "Wie setze ich mein Passwort zurück?",
                                                       "Über den Link auf der Anmeldeseite.", "https://help/pw")],
                                           curated=[CuratedAnswer("c", ("पासवर्ड रीसेट",), "लॉगिन पेज पर लिंक दबाएँ।")]),
                             Access("acme"))
        member = Caller("acme", principals=frozenset({"team:x"}))
        before = engine.store.allowed(member).ids.tolist()
        vectors = engine.store.count_vectors(engine.embedder.model_id if engine.embedder else "")
    con = sqlite3.connect(directory / "electa.db")
    with con:  # what an older release left: English analysis inside FTS5, no languages, schema 1
        for table, columns in (("chunk_fts", "title, body, acl"), ("qa_fts", "question, answer, acl")):
            rows = con.execute(f"SELECT rowid, acl FROM {table}").fetchall()
            con.execute(f"DROP TABLE {table}")
            con.execute(f"CREATE VIRTUAL TABLE {table} USING fts5({columns},"
                        " tokenize='porter unicode61 remove_diacritics 2')")
            raw = {i: (t, b) for i, t, b in con.execute("SELECT id, title, text FROM chunks")}
            con.executemany(f"INSERT INTO {table}(rowid, {columns}) VALUES(?,?,?,?)", [(i, *raw[i], acl) for i, acl in rows])
        # The old fold dropped the virama and split words at vowel signs: its triggers cannot be read back.
        con.execute("UPDATE curated_triggers SET trigger='प सवरड र सट'")
        con.execute("DELETE FROM languages")
        con.execute("UPDATE documents SET lang=''")
        con.execute("DELETE FROM meta WHERE key='analysis'")
        con.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
        con.execute("INSERT OR REPLACE INTO meta VALUES('saved:chunk_fts', 'chunk_fts-4-0123456789abcdef:4')")
        generation = int(con.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
    con.close()
    old_image = directory / "lexical" / "chunk_fts-4-0123456789abcdef"
    old_image.mkdir(parents=True)  # an image of the English terms, saved by an earlier merge
    with Engine.open(directory, Settings(), HashEmbedder(dim=32)) as engine:
        store = engine.store
        assert not old_image.exists() and store.meta("saved:chunk_fts") is None
        assert store.allowed(member).ids.tolist() == before
        assert store.count_vectors(engine.embedder.model_id if engine.embedder else "") == vectors
        assert store.generation > generation and store.meta("analysis") == ANALYSIS and store.meta("schema_version") == "2"
        assert store.languages(member) == ("de", "en", "hi", "th", "zh")
        counts = {t: store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("chunk_fts", "qa_fts")}
        assert counts == {"chunk_fts": len(PAGES), "qa_fts": 1}
        assert _found(engine, "退款需要多久？", member, "fulltext")[:1] == ["https://help/zh"]
        assert _found(engine, "Passwörter zurücksetzen", member, "qa") == ["https://help/pw"]
        assert store.curated_answer("पासवर्ड रीसेट", "acme", store.allowed(member).ids) is not None
        # The access tokens came across with each row: the team's pages stay the team's.
        assert store.mentions("退款", member) and not store.mentions("退款", Caller("acme"))


@pytest.mark.embedded
def test_a_store_of_a_newer_release_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    """Review: this release analysed a newer store again (its own analysis over the newer one's)
    before refusing it."""
    from electa.errors import StoreError

    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
    con = sqlite3.connect(tmp_path / "d" / "electa.db")
    with con:
        con.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
        con.execute("UPDATE meta SET value='a9' WHERE key='analysis'")
    before = con.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
    with pytest.raises(StoreError, match="schema 3"):
        Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32))
    assert con.execute("SELECT key, value FROM meta ORDER BY key").fetchall() == before
    with con:
        con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    with pytest.raises(StoreError, match="analysed by a newer release"):
        Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32))
    con.close()


@pytest.mark.embedded
def test_a_new_store_names_the_schema_older_releases_refuse(tmp_path: Path) -> None:
    """A release before issue 14 reads schema 1 only: it refuses this store rather than write raw
    text into its analysed full-text tables."""
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)):
        pass
    con = sqlite3.connect(tmp_path / "d" / "electa.db")
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "2"
    con.close()


def test_a_fixed_language_must_be_one_electa_reads() -> None:
    assert Settings(language="de").language == "de"
    with pytest.raises(ValueError, match="'xx' is no language Electa reads"):
        Settings(language="xx")


def test_a_title_written_with_accents_is_named_by_the_questions_word(tmp_path: Path) -> None:
    """Review (issue 14): the title rescue compared the question's folded words with the title
    as written, so "Rückerstattung" never named the page titled so."""
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", _pages(), Access("acme"))
        hits = engine.search("Rückerstattung für Abonnements", Caller("acme"), top=10, floor=0.99).hits
        assert [(h.url, h.rescued_by) for h in hits if h.passes] == [("https://help/de", "ruckerstattung")]


@pytest.mark.embedded
def test_a_store_analysed_before_identifiers_split_is_analysed_again_when_it_opens(tmp_path: Path) -> None:
    """Issue 10: analysis a4 indexes the words inside ``readFileSync``; a store written by a3
    (the identifier alone) is brought up to it when it opens, so "read a file" finds the page."""
    from electa.text.analysis import term, words

    text = "Returns the contents of the path: fs.readFileSync(path)."
    with Engine.open(tmp_path, Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("api", Loaded([Document("sync", "Reference", text, "https://docs/sync",
                                                     sections=(Section((), text),))]), Access("acme"))
    con = sqlite3.connect(tmp_path / "electa.db")
    with con:  # what a3 wrote: each word's term, none for the words inside an identifier
        for rowid, title, body in con.execute("SELECT c.id, c.title, c.text FROM chunks c JOIN chunk_fts f"
                                              " ON f.rowid = c.id").fetchall():
            old = [" ".join(term(w, "en") for w in words(t)) for t in (title, body)]
            con.execute("UPDATE chunk_fts SET title=?, body=? WHERE rowid=?", (*old, rowid))
        con.execute("UPDATE meta SET value='a3' WHERE key='analysis'")
    con.close()
    with Engine.open(tmp_path, Settings(), HashEmbedder(dim=32)) as engine:
        assert engine.store.meta("analysis") == ANALYSIS == "a5"
        assert _found(engine, "How do I read a file?", Caller("acme"), "fulltext") == ["https://docs/sync"]


def test_a_language_named_by_a_letter_and_a_symbol_is_one_word() -> None:
    """Found on CMake's help: "C++" and "C#" were read as the bare letter "c", so "How do I set
    the C++ standard?" found C_STANDARD first and "Can I build C# projects?" none of the .NET
    pages. Analysis a5 spells them as one word, on both sides, in every language."""
    assert query_terms("How do I set the C++ standard?", ["en"]) == ["en·set", "en·cplusplu", "en·standard"]
    assert index_terms("C# und C++20, Größe", "de") == ["de·csharp", "de·und", "de·cplusplus", "de·20", "de·gross"]
    assert tokens("Q# or F#? libc++, a#b") == ["qsharp", "or", "fsharp", "libc", "a", "b"]
    assert tokens("Ｃ＃、Ｃ＋＋ and C♯") == ["csharp", "cplusplus", "and", "csharp"]  # (full width, as Japanese writes them)
    assert tokens("Ｃ＃の本 C#define")[:2] == ["csharp", "の"] and tokens("C#define")[0] == "c"


def test_a_questions_key_is_the_same_across_analyses() -> None:
    """Review: the key behind engagement counts and a reranker's held-out split hashed the
    analysed words, so a5 moved "Does the SDK support C#?" to the other side of the split."""
    from electa.judges.ltr_features import question_key

    assert question_key("Does the SDK support C#?") == "does the sdk support c"


def test_the_full_text_leg_tells_c_from_c_plus_plus_and_c_sharp(tmp_path: Path) -> None:
    pages = [("c", "C standard", "Set the C standard."),
             ("cpp", "C++ standard", "Set the C++ standard for a project that uses C++ features and C++ modules."),
             ("cs", "C# projects", "Build C# projects with the .NET SDK.")]
    with Engine.open(tmp_path, Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", Loaded([Document(i, t, x, f"https://docs/{i}", sections=(Section((), x),))
                                           for i, t, x in pages]), Access("acme"))
        assert _found(engine, "How do I set the C++ standard?", Caller("acme"), "fulltext")[0] == "https://docs/cpp"
        assert _found(engine, "What is C#?", Caller("acme"), "fulltext") == ["https://docs/cs"]
        assert _found(engine, "How do I set the C standard?", Caller("acme"), "fulltext")[0] == "https://docs/c"


def test_a_curated_answer_about_c_is_not_given_to_a_question_about_c_sharp(tmp_path: Path) -> None:
    """A curated answer is given with full authority, without retrieval: its trigger read "c"
    for "C#" as for "C", so "What is C#?" was answered "C is a programming language"."""
    curated = [CuratedAnswer("c", ("What is C?",), "C is a systems programming language."),
               CuratedAnswer("cpp", ("Is C++ supported?",), "Yes, C++17 and later.")]
    with Engine.open(tmp_path, Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("faq", Loaded([], curated=curated), Access("acme"))
        allowed = engine.store.allowed(Caller("acme")).ids

        def answer(question: str) -> str | None:
            found = engine.store.curated_answer(question, "acme", allowed)
            return found[1] if found else None

        assert answer("what is c") == "C is a systems programming language."
        assert answer("What is C#?") is None and answer("What is C# used for?") is None
        assert answer("Is C supported?") is None and answer("is c++ supported") == "Yes, C++17 and later."


@pytest.mark.embedded
def test_a_process_opened_before_another_release_analysed_the_store_again_writes_nothing(tmp_path: Path) -> None:
    """Review: a worker of the older release, still open while a newer one analyses the store
    again (a rolling upgrade), would write units lacking the new terms for good: it is refused."""
    from electa.errors import StoreError

    page = Loaded([Document("a", "Export", "Error E1042 when exporting.", "https://docs/a",
                            sections=(Section((), "Error E1042 when exporting."),))])
    with Engine.open(tmp_path, Settings(), HashEmbedder(dim=32)) as engine:
        con = sqlite3.connect(tmp_path / "electa.db")
        with con:  # what the newer release's open left
            con.execute("UPDATE meta SET value='a9' WHERE key='analysis'")
        con.close()
        with pytest.raises(StoreError, match="analysed again by another release"):
            engine.ingest_loaded("api", page, Access("acme"))
        assert engine.store.list_sources() == []


def test_a_contraction_adds_no_clitic_to_the_questions_words() -> None:
    """Found reading the stop list: an apostrophe parts words, so "I'm sure I've paid" was
    searched and scored by "m" and "ve", and "doesn't" by "doesn" (the list's "i'm" and "can't"
    can never meet a word :func:`tokens` reads); a lone letter of a name stays a word."""
    from electa.text import content_stems

    assert query_terms("I'm sure I've paid, but it doesn't show. We'd like what you'll send") == [
        "en·sure", "en·paid", "en·show", "en·like", "en·send"]
    assert content_stems("I’m locked out and can't log in, they won't reply") == ["lock", "log", "repli"]
    assert query_terms("Vitamin D levels at G2/M in Apple's store") == [
        "en·vitamin", "en·d", "en·level", "en·g2", "en·m", "en·appl", "en·store"]
    assert query_terms("How do I set up Let's Encrypt?")[:2] == ["en·set", "en·let"]


def test_a_questions_clitic_is_neither_searched_nor_counted_by_coverage(tmp_path: Path) -> None:
    """Coverage counts the question's content words a passage holds: with "m" and "ve" among
    them, "I'm sure I've been charged twice" covered at most two thirds of a page on double
    charges that never writes "I'm"."""
    from electa.text.analysis import coverage_terms

    assert coverage_terms("I'm sure I've been charged twice", ["en"]) == {"en": frozenset({"en·sure", "en·charg", "en·twice"})}
    charge, me = "Charged twice? We refund the second charge.", "I'm Sam. I've run the shop since 2010; I'm here, I'm glad."
    pages = Loaded([Document("charge", "Double charges", charge, "https://help/charge", sections=(Section((), charge),)),
                    Document("me", "About me", me, "https://help/me", sections=(Section((), me),))])
    with Engine.open(tmp_path / "d", Settings(), HashEmbedder(dim=32)) as engine:
        engine.ingest_loaded("kb", pages, Access("acme"))
        assert _found(engine, "I'm sure I've been charged twice", Caller("acme"), "fulltext") == ["https://help/charge"]
