// Electa's search page (issue 13): POST /v1/search with the key typed in, each hit shown with its
// score, whether it passes the floor, and every leg's vote (rank, raw score, contribution) as a bar.
// Nothing the server returns is parsed as HTML: every text goes in as a text node, and a link only
// when its URL is http(s) (a page's URL is whatever its source said, "javascript:" included).
"use strict";

(function () {
  const { el, safeUrl } = window.ElectaUi;
  const $ = (id) => document.getElementById(id);
  const form = $("search"), key = $("key"), agent = $("agent"), q = $("q"), source = $("source");
  const status = $("status"), timings = $("timings"), results = $("results");
  const KEY_ITEM = "electa.search.key";
  const SNIPPET_CHARS = 320;

  key.value = sessionStorage.getItem(KEY_ITEM) || "";

  // Words too common to be worth marking (English; the server's own analysis knows every
  // language's, this is only what the eye is drawn to).
  const COMMON = new Set(("a an and are as at be by can do does for from get got has have how i if in is it its me my"
    + " no not of on or our so that the their there this to was we what when where which who why will with you your")
    .split(" "));

  // The question's words (letters and digits, any script), longest first so that a longer word
  // is marked whole before a shorter one inside it.
  function words(query) {
    const found = query.toLocaleLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}\p{M}'’-]*/gu) || [];
    return [...new Set(found.filter((w) => !COMMON.has(w) && (w.length > 1 || /\p{Script=Han}/u.test(w))))]
      .sort((a, b) => b.length - a.length);
  }

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  // Lookbehind is missing from older browsers (Safari before 16.4): there a word is marked
  // wherever it starts, inside a longer one too.
  const LOOKBEHIND = (() => { try { return Boolean(new RegExp("(?<!a)b")); } catch (e) { return false; } })();

  // A word of the question as the page may write it: from the start of a word, with an ending
  // after it when it is longer than three letters ("refund" marks "refunds", "on" not "only");
  // anywhere in a script written without spaces.
  function wordPattern(word) {
    if (/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}]/u.test(word)) return escapeRegExp(word);
    const tail = word.length > 3 ? "[\\p{L}\\p{M}]*" : "";
    return (LOOKBEHIND ? "(?<![\\p{L}\\p{N}])" : "") + escapeRegExp(word) + tail + "(?![\\p{L}\\p{N}])";
  }

  // ``text`` as text nodes and <mark> elements around the question's words (case folded).
  function highlighted(text, query) {
    const out = document.createDocumentFragment();
    const list = words(query);
    if (!list.length) {
      out.append(document.createTextNode(text));
      return out;
    }
    const pattern = new RegExp(list.map(wordPattern).join("|"), "giu");
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (match.index > last) out.append(document.createTextNode(text.slice(last, match.index)));
      out.append(el("mark", "", match[0]));
      last = match.index + match[0].length;
    }
    if (last < text.length) out.append(document.createTextNode(text.slice(last)));
    return out;
  }

  // The passage around the first word of the question it holds, cut at word boundaries.
  function snippet(text, query) {
    const flat = text.replace(/\s+/g, " ").trim();
    if (flat.length <= SNIPPET_CHARS) return flat;
    const lower = flat.toLocaleLowerCase();
    const at = Math.min(...words(query).map((w) => lower.indexOf(w)).filter((i) => i >= 0), Infinity);
    let start = at === Infinity ? 0 : Math.max(0, at - 80);
    if (start > 0) start = flat.indexOf(" ", start) + 1 || start;
    const end = Math.min(flat.length, start + SNIPPET_CHARS);
    return (start > 0 ? "… " : "") + flat.slice(start, end).trim() + (end < flat.length ? " …" : "");
  }

  function sourceOf(hit) {
    const url = safeUrl(hit.url);
    if (url) return new URL(url).host;
    return hit.ext_id ? hit.ext_id.split("/")[0] : "(no source name)";
  }

  // The answer to the newest search only: an older one that arrives later is dropped.
  let asked = 0;

  function votes(hit) {
    const box = el("div", "votes");
    box.setAttribute("role", "list");
    box.setAttribute("aria-label", "Each leg's vote");
    const total = hit.votes.reduce((sum, v) => sum + v.contribution, 0) || 1;
    for (const v of hit.votes) {
      const row = [el("span", "leg", v.leg)];
      const track = el("div", "track");
      const fill = el("div", "fill " + v.leg);
      fill.style.width = Math.max(2, Math.round((100 * v.contribution) / total)) + "%";
      track.append(fill);
      const share = Math.round((100 * v.contribution) / total);
      track.setAttribute("role", "img");
      track.setAttribute("aria-label", v.leg + ": " + share + "% of the fused score");
      row.push(track, el("span", "nums", "#" + v.rank + " · raw " + v.raw_score + " · " + share + "%"));
      const item = el("div", "vote");
      item.setAttribute("role", "listitem");
      item.dataset.leg = v.leg;
      item.append(...row);
      box.append(item);
    }
    return box;
  }

  function render(data, query) {
    results.replaceChildren();
    const hits = data.hits || [];
    hits.forEach((hit, i) => {
      const li = el("li", "hit");
      li.tabIndex = 0;
      li.dataset.index = String(i);
      li.dataset.source = sourceOf(hit);
      const h2 = el("h2");
      const url = safeUrl(hit.url);
      const title = hit.title || "(untitled)";
      if (url) {
        const a = el("a", "", title);
        a.href = url;
        a.rel = "noopener noreferrer";
        a.tabIndex = -1;  // (one stop per result: the result itself; Enter opens its link)
        h2.append(a);
      } else {
        h2.append(el("span", "", title));
      }
      const meta = el("div", "meta");
      meta.append(el("span", "score", "score " + hit.score.toFixed(2)),
                  el("span", "badge " + (hit.passes ? "pass" : "fail"), hit.passes ? "passes the floor" : "below the floor"),
                  el("span", "", hit.kind), el("span", "", li.dataset.source));
      if (hit.lang) meta.append(el("span", "", hit.lang));
      const p = el("p", "snippet");
      p.append(highlighted(snippet(hit.text || "", query), query));
      li.append(h2, meta, p, votes(hit));
      results.append(li);
    });
    const sources = [...new Set(hits.map(sourceOf))].sort();
    source.replaceChildren(new Option("every source", ""), ...sources.map((s) => new Option(s, s)));
    source.disabled = sources.length < 2;
    timings.replaceChildren();
    for (const leg of data.legs || []) {
      timings.append(el("span", "timing", leg.leg + " " + leg.status + " " + leg.ms + " ms"));
    }
    for (const stage of data.stages || []) {
      const what = stage.ran ? (stage.changed ? "changed the order" : "ran") : "did not run";
      timings.append(el("span", "timing", stage.judge + " " + what + " " + stage.ms + " ms"));
    }
    for (const [name, ms] of Object.entries(data.timings_ms || {})) {
      timings.append(el("span", "timing", name + " " + ms + " ms"));
    }
    timings.hidden = false;
    status.className = "";
    const passing = hits.filter((h) => h.passes).length;
    status.textContent = hits.length ? hits.length + " results, " + passing + " passing the floor"
      + (data.cached ? " (from the cache)" : "") : "No results.";
  }

  // What went wrong, in a sentence: the server's own words when it said any.
  function failure(response, data) {
    let detail = "";
    if (data && typeof data.detail === "string") detail = data.detail;
    else if (data && Array.isArray(data.detail)) detail = data.detail.map((d) => d.msg || String(d)).join("; ");
    else detail = response.statusText || "no reason given";
    if (response.status === 429) {
      detail += " (try again in " + (response.headers.get("Retry-After") || "a few") + " s)";
    }
    return new Error(response.status + ": " + detail);
  }

  async function search(event) {
    event.preventDefault();
    const query = q.value.trim();
    if (!query) return;
    const mine = ++asked;
    status.className = "";
    status.textContent = "Searching…";
    const body = { query: query, top: 10 };
    if (agent.value.trim()) body.agent = agent.value.trim();
    try {
      const response = await fetch("/v1/search", {
        method: "POST",
        headers: { "Content-Type": "application/json", "Authorization": "Bearer " + key.value.trim() },
        body: JSON.stringify(body),
      });
      let data = null;
      try { data = await response.json(); } catch (e) { data = null; }
      if (mine !== asked) return;
      if (!response.ok) throw failure(response, data);
      if (!data || !Array.isArray(data.hits)) throw new Error("the server's answer was not a search result");
      sessionStorage.setItem(KEY_ITEM, key.value);
      render(data, query);
    } catch (error) {
      if (mine !== asked) return;
      results.replaceChildren();
      timings.replaceChildren();
      timings.hidden = true;
      status.className = "error";
      status.textContent = "The search failed: " + error.message;
    }
  }

  function filterBySource() {
    for (const li of results.children) li.hidden = Boolean(source.value) && li.dataset.source !== source.value;
  }

  function visibleHits() {
    return [...results.querySelectorAll(".hit:not([hidden])")];
  }

  document.addEventListener("keydown", (event) => {
    if (event.isComposing || event.ctrlKey || event.metaKey || event.altKey) return;
    const inField = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement;
    if (event.key === "/" && !inField) {
      event.preventDefault();
      q.focus();
      q.select();
      return;
    }
    const hits = visibleHits();
    const current = document.activeElement ? document.activeElement.closest(".hit") : null;
    const at = hits.indexOf(current);
    if (event.key === "ArrowDown" && (at >= 0 || event.target === q) && hits.length) {
      event.preventDefault();
      hits[Math.min(hits.length - 1, at + 1)].focus();
    } else if (event.key === "ArrowUp" && at >= 0) {
      event.preventDefault();
      if (at === 0) q.focus(); else hits[at - 1].focus();
    } else if (event.key === "Enter" && at >= 0) {
      const link = hits[at].querySelector("h2 a");
      if (link) link.click();
    } else if (event.key === "Escape" && at >= 0) {
      q.focus();
    }
  });

  form.addEventListener("submit", search);
  source.addEventListener("change", filterBySource);
})();
