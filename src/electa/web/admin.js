// Electa's admin console (issue 13): an organisation's sources (upload, list, delete, flagged),
// its content gaps with "write an answer", the probe, the agent's settings, usage and feedback,
// and the agent measured on its golden set, over the HTTP API with an ingest or admin key.
// Nothing the server returns is parsed as HTML: every text goes in as a text node, a link only
// when its URL is http(s), and the charts are SVG elements made one by one.
"use strict";

(function () {
  const { el, safeUrl } = window.ElectaUi;
  const $ = (id) => document.getElementById(id);
  const KEY_ITEM = "electa.admin.key", AGENT_ITEM = "electa.admin.agent";
  const SVG = "http://www.w3.org/2000/svg";
  const key = $("key"), agent = $("agent"), status = $("status");
  key.value = sessionStorage.getItem(KEY_ITEM) || "";
  agent.value = sessionStorage.getItem(AGENT_ITEM) || "default";

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function link(url, text) {
    const href = safeUrl(url);
    return href ? el("a", { href, target: "_blank", rel: "noopener noreferrer" }, text || url) : el("span", {}, text || url || "");
  }

  function row(cells) {
    const tr = el("tr");
    for (const cell of cells) {
      const td = el("td");
      if (cell instanceof Node) td.append(cell); else td.textContent = cell === null || cell === undefined ? "" : String(cell);
      tr.append(td);
    }
    return tr;
  }

  function fill(table, rows, empty) {
    const body = $(table).querySelector("tbody");
    body.replaceChildren(...rows);
    if (!rows.length) {
      const cols = $(table).querySelectorAll("thead th").length || 1;
      const tr = el("tr");
      tr.append(el("td", { colspan: String(cols), class: "empty" }, empty));
      body.append(tr);
    }
  }

  const when = (seconds) => seconds ? new Date(Number(seconds) * 1000).toISOString().slice(0, 16).replace("T", " ") : "";

  function say(text, error) {
    status.textContent = text;
    status.className = error ? "error" : "";
  }

  // The server's own words for a refusal (a 422's list of fields too).
  async function refusal(response) {
    let detail = "";
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail
        : Array.isArray(body.detail) ? body.detail.map((d) => (d.loc || []).slice(1).join(".") + ": " + d.msg).join("; ") : "";
    } catch (e) { /* not JSON */ }
    const wait = response.headers.get("Retry-After");
    return response.status + (detail ? ": " + detail : "") + (wait ? " (try again in " + wait + " s)" : "");
  }

  async function api(method, path, body) {
    const headers = { Authorization: "Bearer " + key.value.trim() };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!response.ok) throw new Error(method + " " + path.split("?")[0] + " failed: " + await refusal(response));
    return response.json();
  }

  // Runs ``work``, saying ``doing`` meanwhile and the outcome after; an error is said, not thrown.
  // Only the newest work speaks: a tab's load that ends after another began says nothing.
  let newest = 0;
  async function run(doing, work) {
    const mine = ++newest;
    say(doing);
    try {
      const done = await work();
      if (mine === newest) say(done || "");
      return true;
    } catch (error) {
      if (mine === newest) say(String(error.message || error), true);
      return false;
    }
  }

  const list = (text) => text.split(",").map((t) => t.trim()).filter(Boolean);
  const agentName = () => agent.value.trim() || "default";
  const q = (params) => "?" + new URLSearchParams(params).toString();

  // ---- tabs -----------------------------------------------------------------------------

  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const loaders = {};
  let opened = false;

  function show(tab, focus) {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
    if (focus) tab.focus();
    const load = loaders[tab.getAttribute("aria-controls")];
    if (opened && load) run("Loading…", async () => { await load(); return ""; });
  }

  for (const tab of tabs) {
    tab.addEventListener("click", () => show(tab, false));
    tab.addEventListener("keydown", (event) => {
      const at = tabs.indexOf(tab);
      const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
      if (to === undefined) return;
      event.preventDefault();
      show(tabs[(to + tabs.length) % tabs.length], true);
    });
  }
  const current = () => tabs.find((t) => t.getAttribute("aria-selected") === "true");

  $("who").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_ITEM, key.value.trim());
    sessionStorage.setItem(AGENT_ITEM, agentName());
    opened = true;
    show(current(), false);
  });

  // ---- sources --------------------------------------------------------------------------

  function readable(access) {
    if (!access || access.public) return "everyone";
    return (access.principals || []).join(", ") || "nobody";
  }

  function deleteButton(source) {
    const button = el("button", { type: "button", class: "danger", "aria-label": "Delete " + source.uri }, "Delete");
    let armed = false;
    button.addEventListener("click", async () => {
      if (!armed) { // a second press confirms: nothing is deleted by one stray click
        armed = true;
        button.textContent = "Confirm delete";
        button.setAttribute("aria-label", "Confirm: delete " + source.uri);
        return;
      }
      button.disabled = true;
      await run("Deleting " + source.uri + "…", async () => {
        const gone = await api("DELETE", "/v1/sources" + q({ uri: source.uri, agent: source.agent }));
        await loaders.sources();
        return "Deleted " + source.uri + " (" + gone.removed_units + " units).";
      });
    });
    return button;
  }

  loaders.sources = async () => {
    const [sources, flagged] = await Promise.all([api("GET", "/v1/sources"), api("GET", "/v1/sources/flagged")]);
    fill("source-list", sources.map((s) => row([link(s.url, s.uri), s.agent, s.kind, s.documents, readable(s.access),
      when(s.updated_at), deleteButton(s)])), "No sources yet: upload a file above.");
    fill("flagged", flagged.map((f) => row([f.source, f.title, (f.rules || []).join(", "), (f.excerpts || []).join(" … ")])),
      "Nothing flagged.");
  };

  function base64(buffer) {
    const bytes = new Uint8Array(buffer);
    let text = "";
    for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(text);
  }

  // Each file its own source, one after another; a file refused is said and the rest go on.
  $("upload").addEventListener("submit", async (event) => {
    event.preventDefault();
    const files = [...$("file").files];
    if (!files.length) return;
    const principals = list($("principals").value);
    const url = files.length === 1 ? $("file-url").value.trim() : "";
    await run("Uploading " + (files.length === 1 ? files[0].name : files.length + " files") + "…", async () => {
      const done = [], failed = [];
      for (const file of files) {
        try {
          const content = base64(await file.arrayBuffer());
          const made = await api("POST", "/v1/sources", { name: file.name, content, base64: true, agent: agentName(),
            url, principals });
          done.push(made);
        } catch (error) {
          failed.push(file.name + " (" + String(error.message || error) + ")");
        }
      }
      $("upload").reset();
      await loaders.sources();
      const said = done.length === 1 && !failed.length
        ? "Uploaded " + done[0].uri + ": " + done[0].status + ", " + done[0].documents + " documents."
        : "Uploaded " + done.length + " of " + files.length + " files.";
      if (failed.length) throw new Error(said + " Refused: " + failed.join("; "));
      return said;
    });
  });

  // ---- content gaps ---------------------------------------------------------------------

  function answerForm(gap, after) {
    const tr = el("tr", { class: "answer-row" });
    const td = el("td", { colspan: "5" });
    const form = el("form", { class: "grid", "aria-label": "Answer: " + gap.question });
    const id = "answer-" + Math.random().toString(36).slice(2);
    const text = el("textarea", { id, rows: "3", required: "", maxlength: "4000" });
    const url = el("input", { id: id + "-url", type: "url", placeholder: "https://help.example.com/page" });
    const a = el("div", { class: "field wide" });
    a.append(el("label", { for: id }, "Answer to “" + gap.question + "”"), text);
    const u = el("div", { class: "field" });
    u.append(el("label", { for: id + "-url" }, "Page it points to (optional)"), url);
    const save = el("button", { type: "submit" }, "Save the answer");
    form.append(a, u, save);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      save.disabled = true;
      const ok = await run("Saving…", async () => {
        await api("POST", "/v1/curated", { question: gap.question, answer: text.value, url: url.value.trim(), agent: agentName() });
        await loaders.gaps();
        return "Saved: “" + gap.question + "” is answered from now on.";
      });
      if (!ok) save.disabled = false;
    });
    td.append(form);
    tr.append(td);
    after.after(tr);
    text.focus();
  }

  loaders.gaps = async () => {
    const rows = await api("GET", "/v1/gaps" + q({ agent: agentName() }));
    // One line per question (as asked, folded), most asked first.
    const groups = new Map();
    for (const g of rows) {
      const name = g.question.trim().toLocaleLowerCase().replace(/\s+/g, " ");
      const seen = groups.get(name) || { question: g.question, count: 0, last: 0, reasons: new Set(), answered: g.answered };
      seen.count += 1;
      seen.last = Math.max(seen.last, Number(g.created_at) || 0);
      seen.reasons.add(g.reason);
      groups.set(name, seen);
    }
    const ordered = [...groups.values()].sort((a, b) => b.count - a.count || b.last - a.last);
    fill("gap-list", ordered.map((gap) => {
      let state;
      if (gap.answered) {
        state = el("span", { class: "badge pass" }, "answered");
      } else {
        state = el("button", { type: "button", "aria-label": "Write an answer to: " + gap.question }, "Write an answer");
        state.addEventListener("click", () => { state.disabled = true; answerForm(gap, state.closest("tr")); });
      }
      const tr = row([gap.question, gap.count, when(gap.last), [...gap.reasons].join(", "), state]);
      tr.dataset.question = gap.question;
      return tr;
    }), "No gaps recorded for this agent.");
  };

  // ---- probe ----------------------------------------------------------------------------

  $("probe-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = $("probe-q").value.trim();
    if (!query) return;
    await run("Probing…", async () => {
      const result = await api("POST", "/v1/probe", { query, agent: agentName(), principals: list($("probe-principals").value), top: 20 });
      const legs = [...new Set(result.hits.flatMap((h) => h.votes.map((v) => v.leg)))].sort();
      const head = el("tr");
      for (const name of ["#", "Title", "Score", "Passes", ...legs.map((l) => l + " (rank · raw)")]) head.append(el("th", { scope: "col" }, name));
      $("probe-table").querySelector("thead").replaceChildren(head);
      const rows = [];
      let floorShown = false;
      result.hits.forEach((hit, i) => {
        if (!hit.passes && !floorShown) {
          floorShown = true;
          const line = el("tr", { class: "floor" });
          line.append(el("td", { colspan: String(4 + legs.length) }, "the floor: candidates below it do not pass"));
          rows.push(line);
        }
        const votes = new Map(hit.votes.map((v) => [v.leg, v]));
        const tr = row([i + 1, link(hit.url, hit.title || hit.ext_id || "(untitled)"), hit.score.toFixed(3),
          hit.passes ? "yes" : "no", ...legs.map((l) => votes.has(l) ? "#" + votes.get(l).rank + " · " + votes.get(l).raw_score : "–")]);
        tr.className = hit.passes ? "pass" : "fail";
        rows.push(tr);
      });
      fill("probe-table", rows, "No candidate at all.");
      const passing = result.hits.filter((h) => h.passes).length;
      return result.hits.length + " candidates, " + passing + " pass the floor.";
    });
  });

  // ---- agent settings -------------------------------------------------------------------

  const PROFILE = { "a-name": "name", "a-business": "business", "a-tone": "tone", "a-language": "language", "a-prompt": "custom_prompt" };
  const LEGS = ["fulltext", "dense", "qa", "sparse"];

  loaders["agent-settings"] = async () => {
    const stored = await api("GET", "/v1/agents/" + encodeURIComponent(agentName()));
    const profile = stored.profile || {}, retrieval = stored.retrieval || {};
    for (const [id, field] of Object.entries(PROFILE)) $(id).value = profile[field] !== undefined ? profile[field] : "";
    if (!profile.name) $("a-name").value = "Assistant";
    $("a-avoid").value = (profile.avoid_topics || []).join(", ");
    $("a-max").value = profile.max_chars || 1200;
    $("a-topk").value = retrieval.top_k || 4;
    $("a-threshold").value = retrieval.threshold === null || retrieval.threshold === undefined ? "" : retrieval.threshold;
    $("a-calibrated").value = retrieval.calibrated_floor === null || retrieval.calibrated_floor === undefined ? "" : retrieval.calibrated_floor;
    for (const leg of LEGS) $("w-" + leg).value = retrieval.weights && retrieval.weights[leg] !== undefined ? retrieval.weights[leg] : "";
    const extra = Object.fromEntries(Object.entries(stored).filter(([k]) => k !== "profile" && k !== "retrieval"));
    $("agent-extra").textContent = Object.keys(extra).length ? JSON.stringify(extra, null, 2) : "nothing else";
  };

  const number = (id) => $(id).value === "" ? null : Number($(id).value);

  $("agent-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const weights = Object.fromEntries(LEGS.filter((l) => $("w-" + l).value !== "").map((l) => [l, Number($("w-" + l).value)]));
    const body = { name: $("a-name").value || "Assistant", business: $("a-business").value, tone: $("a-tone").value || "friendly and concise",
      custom_prompt: $("a-prompt").value, avoid_topics: list($("a-avoid").value), max_chars: number("a-max") || 1200,
      language: $("a-language").value || "the language of the visitor's question", top_k: number("a-topk") || 4,
      threshold: number("a-threshold"), calibrated_floor: number("a-calibrated"),
      weights: Object.keys(weights).length ? weights : null };
    await run("Saving…", async () => {
      await api("PUT", "/v1/agents/" + encodeURIComponent(agentName()), body);
      await loaders["agent-settings"]();
      return "Saved the settings of " + agentName() + ".";
    });
  });

  // ---- usage and feedback ---------------------------------------------------------------

  // Bars with their values written on them: ``items`` as [label, value].
  function barChart(items, title, max) {
    const width = 640, bar = 22, gap = 8, left = 190, height = items.length * (bar + gap) + 34;
    const top = max || Math.max(1, ...items.map(([, v]) => v));
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, class: "bars" });
    chart.append(svg("title", {}, title), svg("text", { x: 0, y: 16, class: "chart-title" }, title));
    items.forEach(([label, value], i) => {
      const y = 28 + i * (bar + gap);
      const w = Math.max(1, ((width - left - 60) * value) / top);
      chart.append(svg("text", { x: left - 8, y: y + bar * 0.7, "text-anchor": "end" }, label),
        svg("rect", { x: left, y, width: w, height: bar, rx: 3, class: "bar" }),
        svg("text", { x: left + w + 6, y: y + bar * 0.7 }, Number.isInteger(value) ? value : value.toFixed(3)));
    });
    return chart;
  }

  loaders.usage = async () => {
    const [usage, feedback] = await Promise.all([api("GET", "/v1/usage"),
      api("GET", "/v1/feedback" + q({ agent: agentName(), visitors: "true" }))]);
    const days = usage.usage;
    fill("usage-table", days.map((d) => row([d.day, d.agent, d.questions, d.answer_chars])), "No questions answered yet.");
    const perDay = new Map();
    for (const d of days) perDay.set(d.day, (perDay.get(d.day) || 0) + Number(d.questions));
    const recent = [...perDay.entries()].sort().slice(-14);
    $("usage-chart").replaceChildren(...(recent.length ? [barChart(recent, "Questions answered per day (last 14 days)")] : []));
    fill("feedback-table", feedback.map((f) => {
      // (as text: a visitor's vote names any address it likes, and a console is no place to click it)
      const tr = row([f.query, f.url, (f.net > 0 ? "+" : "") + f.net]);
      tr.className = f.net > 0 ? "pass" : f.net < 0 ? "fail" : "";
      return tr;
    }), "No feedback for this agent yet.");
  };

  // ---- evaluation -----------------------------------------------------------------------

  // Recall against depth, one line per configuration, depth on a log scale.
  function recallChart(curves) {
    const width = 640, height = 300, left = 46, right = 150, top = 30, bottom = 40;
    const configs = Object.keys(curves);
    const ks = [...new Set(configs.flatMap((c) => Object.keys(curves[c]).map(Number)))].sort((a, b) => a - b);
    const title = "Recall against depth: how deep each must look";
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, class: "lines" });
    chart.append(svg("title", {}, title), svg("text", { x: 0, y: 16, class: "chart-title" }, title));
    if (!ks.length) return chart;
    const lo = Math.log(ks[0]), hi = Math.log(ks[ks.length - 1]) || 1;
    const x = (k) => left + ((Math.log(k) - lo) / (hi - lo || 1)) * (width - left - right);
    const y = (r) => top + (1 - r) * (height - top - bottom);
    for (const r of [0, 0.5, 1]) {
      chart.append(svg("line", { x1: left, x2: width - right, y1: y(r), y2: y(r), class: "grid" }),
        svg("text", { x: left - 6, y: y(r) + 4, "text-anchor": "end" }, r));
    }
    for (const k of ks) chart.append(svg("text", { x: x(k), y: height - bottom + 16, "text-anchor": "middle" }, k));
    chart.append(svg("text", { x: (left + width - right) / 2, y: height - 6, "text-anchor": "middle" }, "depth k"));
    configs.forEach((c, i) => {
      const points = Object.entries(curves[c]).map(([k, r]) => [Number(k), r]).sort((a, b) => a[0] - b[0]);
      chart.append(svg("polyline", { points: points.map(([k, r]) => x(k) + "," + y(r)).join(" "), class: "line s" + (i % 6) }));
      chart.append(svg("text", { x: width - right + 8, y: top + 14 + i * 16, class: "key s" + (i % 6) }, c));
    });
    return chart;
  }

  $("eval-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    await run("Measuring " + agentName() + " on its golden set…", async () => {
      const report = await api("POST", "/v1/eval", { agent: agentName(), visitors: $("eval-visitors").checked });
      const configs = Object.keys(report.metrics);
      const names = ["ndcg@10", "mrr@10", "recall@10", "recall@100", "map@100"];
      const head = el("tr");
      for (const n of ["configuration", ...names]) head.append(el("th", { scope: "col" }, n));
      $("eval-table").querySelector("thead").replaceChildren(head);
      fill("eval-table", configs.map((c) => row([c, ...names.map((n) => (report.metrics[c][n] || 0).toFixed(4))])), "");
      $("eval-charts").replaceChildren(
        barChart(configs.map((c) => [c, report.metrics[c]["ndcg@10"] || 0]), "nDCG@10 per configuration", 1),
        recallChart(report.recall_curve));
      const p50 = report.latency_ms.search ? report.latency_ms.search.p50 : null;
      return "Measured on " + report.queries + " questions" + (p50 !== null ? "; search p50 " + p50.toFixed(1) + " ms." : ".");
    });
  });

  // With the key kept in this tab, the console opens where it was.
  if (key.value) {
    opened = true;
    show(current(), false);
  }
})();
