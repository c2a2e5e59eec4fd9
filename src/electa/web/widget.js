// Electa's chat widget (issue 13): one <script> tag adds a launcher and a chat panel to any page.
//
//   <script src="https://electa.example.com/ui/widget.js" data-key="SEARCH_KEY_OR_VISITOR_TOKEN"
//           data-agent="default" data-title="Ask Acme" data-handoff="https://acme.com/contact" defer></script>
//
// The panel lives in a shadow root under <electa-chat>, so the host page's CSS cannot reach it
// (and its own cannot leak out); the host element's few properties are set inline and
// !important, which no stylesheet of the page outranks. Answers stream over Server-Sent Events
// read from a fetch() body (POST /v1/ask; EventSource can send neither a body nor a header).
// Nothing the server returns is parsed as HTML: text goes in as text nodes, and a citation becomes
// a link only when its URL is http(s). The conversation id the server issues is kept in
// localStorage, with the last messages, so a visitor's conversation survives page loads.
"use strict";

(function () {
  const script = document.currentScript;
  if (!script || document.querySelector("electa-chat")) return; // (one widget per page)
  const conf = script.dataset;
  const SERVER = (conf.server || new URL(script.src, location.href).origin).replace(/\/+$/, "");
  const AGENT = conf.agent || "default";
  const TITLE = conf.title || "Ask us";
  const HANDOFF = safeUrl(conf.handoff || "", true);
  const HANDOFF_LABEL = conf.handoffLabel || "Talk to a person";
  const SEND_PAGE = conf.page !== "none";
  const KEPT_MESSAGES = 40;
  const MAX_QUESTION = 2000;
  let credential = conf.key || "";

  // An absolute http(s) URL (or mailto: where allowed), else null: a page stored without a URL,
  // or with "javascript:…", is shown without a link.
  function safeUrl(url, mail) {
    if (!url) return null;
    try {
      const parsed = new URL(url);
      const ok = parsed.protocol === "http:" || parsed.protocol === "https:" || (mail && parsed.protocol === "mailto:");
      return ok ? parsed.href : null;
    } catch (e) {
      return null;
    }
  }

  // Storage the page may forbid (a sandboxed frame, a blocked third party): then memory only.
  const memory = {};
  const store = {
    get(name) {
      try { return JSON.parse(localStorage.getItem(name) || "null"); } catch (e) { return memory[name] || null; }
    },
    set(name, value) {
      memory[name] = value;
      try { localStorage.setItem(name, JSON.stringify(value)); } catch (e) { /* memory only */ }
    },
  };

  // One conversation per server, agent and credential (an id is bound to the credential that
  // got it): the credential enters the name only as a short hash.
  function hash(text) {
    let h = 2166136261;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    return (h >>> 0).toString(36);
  }
  const slot = () => "electa.chat:" + SERVER + "|" + AGENT + "|" + hash(credential);
  let saved = store.get(slot()) || { conversation: null, messages: [], open: false };

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  const CSS = `
:host { all: initial !important; display: block !important; position: static !important; }
* { box-sizing: border-box; }
.root { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: #1c2430; --bg: #ffffff; --soft: #f1f4f8; --line: #c9d1dc; --accent: #1f5fbf; --accent-text: #ffffff;
  --muted: #4a5565; --error: #a5281b; }
.launcher { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; width: 56px; height: 56px;
  border-radius: 50%; border: 2px solid #ffffff; background: var(--accent); color: var(--accent-text);
  cursor: pointer; box-shadow: 0 4px 16px rgba(0,0,0,.28); display: grid; place-items: center; padding: 0; }
.launcher svg { width: 26px; height: 26px; fill: currentColor; }
.launcher:focus-visible, button:focus-visible, a:focus-visible, textarea:focus-visible {
  outline: 3px solid #ffb020; outline-offset: 2px; }
.panel { position: fixed; right: 20px; bottom: 88px; z-index: 2147483000; width: 380px; height: min(580px, calc(100vh - 110px));
  display: flex; flex-direction: column; background: var(--bg); color: #1c2430; border: 1px solid var(--line);
  border-radius: 14px; box-shadow: 0 10px 40px rgba(0,0,0,.3); overflow: hidden; }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; gap: 8px; padding: 10px 12px; background: var(--accent); color: var(--accent-text); }
h2 { font-size: 16px; font-weight: 650; margin: 0; flex: 1; color: inherit; }
header button { background: transparent; color: inherit; border: 1px solid rgba(255,255,255,.75); border-radius: 8px;
  font: inherit; font-size: 13px; padding: 4px 9px; cursor: pointer; }
header button.close { font-size: 18px; line-height: 1; padding: 3px 9px; }
ol.log { list-style: none; margin: 0; padding: 12px; flex: 1; overflow-y: auto; display: flex; flex-direction: column; gap: 10px; }
.msg { max-width: 88%; padding: 8px 11px; border-radius: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.you { align-self: flex-end; background: var(--accent); color: var(--accent-text); border-bottom-right-radius: 4px; }
.bot { align-self: flex-start; background: var(--soft); color: #1c2430; border-bottom-left-radius: 4px; }
.bot p { margin: 0 0 6px; } .bot p:last-child { margin-bottom: 0; }
.bot ul.points { margin: 0 0 6px; padding-left: 20px; white-space: normal; }
a { color: #174ea6; }
a.cite { text-decoration: none; font-size: 12px; vertical-align: super; margin-left: 1px; }
.sources { margin: 8px 0 0; padding: 6px 0 0 0; border-top: 1px solid var(--line); list-style: none; font-size: 13px; white-space: normal; }
.sources li { margin: 2px 0; }
.sources .label, .meta { font-size: 12px; color: var(--muted); }
.handoff { margin: 8px 0 0; white-space: normal; }
.handoff a { display: inline-block; padding: 5px 10px; border-radius: 8px; background: var(--accent); color: var(--accent-text);
  text-decoration: none; font-weight: 600; }
.error { color: var(--error); }
.typing { display: inline-flex; gap: 4px; padding: 4px 0; }
.typing i { width: 7px; height: 7px; border-radius: 50%; background: var(--muted); display: block; }
form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid var(--line); background: var(--bg); }
textarea { flex: 1; resize: none; font: inherit; color: #1c2430; background: #ffffff; border: 1px solid #77808d;
  border-radius: 10px; padding: 8px 10px; height: 42px; max-height: 120px; }
form button { font: inherit; font-weight: 600; border: 0; border-radius: 10px; padding: 0 14px; background: var(--accent);
  color: var(--accent-text); cursor: pointer; }
form button:disabled { background: #6b7685; cursor: default; }
.hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (prefers-reduced-motion: no-preference) {
  .panel { animation: rise .16s ease-out; }
  .typing i { animation: blink 1.2s infinite ease-in-out; }
  .typing i:nth-child(2) { animation-delay: .2s; } .typing i:nth-child(3) { animation-delay: .4s; }
  @keyframes rise { from { opacity: 0; transform: translateY(8px); } to { opacity: 1; transform: none; } }
  @keyframes blink { 0%, 80%, 100% { opacity: .25; } 40% { opacity: 1; } }
}
@media (max-width: 480px) {
  .panel { inset: 0; width: 100%; height: 100%; border-radius: 0; border: 0; }
  .launcher { right: 14px; bottom: 14px; }
  .open .launcher { display: none; } /* (the panel covers the screen; its header closes it) */
}
@media (prefers-color-scheme: dark) {
  .root { --bg: #161b22; --soft: #242c37; --line: #3d4756; --accent: #2f6fd0; --muted: #a9b4c2; --error: #ff8f80; }
  .panel, .bot, textarea { color: #e8edf3; } textarea { background: #0f1318; border-color: #8792a1; }
  a { color: #8cb8ff; } form button:disabled { background: #4f5966; }
}`;

  const ICON = '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9'
    + 'l-5 4v-4H4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm5 0a1.5 1.5 0 1 0 0 3 1.5'
    + ' 1.5 0 0 0 0-3zm5 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3z"/></svg>';

  const host = document.createElement("electa-chat");
  // Inline and !important: outranks any rule of the page (display: none !important included).
  for (const [name, value] of [["all", "initial"], ["display", "block"], ["position", "static"], ["visibility", "visible"]]) {
    host.style.setProperty(name, value, "important");
  }
  const shadow = host.attachShadow({ mode: "open" });
  if ("adoptedStyleSheets" in shadow && typeof CSSStyleSheet === "function" && "replaceSync" in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS); // (a constructed sheet is not an inline style: a strict page policy allows it)
    shadow.adoptedStyleSheets = [sheet];
  } else {
    shadow.append(el("style", {}, CSS));
  }

  const root = el("div", { class: "root" });
  const launcher = el("button", { class: "launcher", type: "button", "aria-haspopup": "dialog",
    "aria-expanded": "false", "aria-controls": "electa-panel", "aria-label": "Open chat: " + TITLE });
  launcher.innerHTML = ICON; // (a constant of this file, never server text)
  const panel = el("div", { class: "panel", id: "electa-panel", role: "dialog", "aria-modal": "true",
    "aria-labelledby": "electa-title", hidden: "" });
  const header = el("header");
  const title = el("h2", { id: "electa-title" }, TITLE);
  const fresh = el("button", { type: "button", class: "new", "aria-label": "Start a new conversation" }, "New chat");
  const close = el("button", { type: "button", class: "close", "aria-label": "Close chat" }, "×");
  header.append(title, fresh, close);
  const log = el("ol", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Conversation" });
  const form = el("form", { "aria-label": "Ask a question" });
  const label = el("label", { for: "electa-question", class: "hidden" }, "Your question");
  const box = el("textarea", { id: "electa-question", rows: "1", maxlength: String(MAX_QUESTION),
    placeholder: "Ask a question…", autocomplete: "off" });
  const send = el("button", { type: "submit" }, "Send");
  form.append(label, box, send);
  panel.append(header, log, form);
  root.append(panel, launcher);
  shadow.append(root);

  // ---- messages -------------------------------------------------------------------------

  // The answer's text as paragraphs and bullet points, its [n] markers as links to the sources.
  function renderText(target, text, citations) {
    target.replaceChildren();
    const byId = new Map((citations || []).map((c) => [Number(c.id), c]));
    const inline = (parent, line) => {
      let last = 0;
      for (const m of line.matchAll(/\[(\d{1,2})\]|\*\*([^*]+)\*\*/g)) {
        if (m.index > last) parent.append(document.createTextNode(line.slice(last, m.index)));
        const cited = m[1] !== undefined ? byId.get(Number(m[1])) : undefined;
        const href = cited && safeUrl(cited.url);
        if (m[2] !== undefined) {
          parent.append(el("strong", {}, m[2]));
        } else if (href) {
          parent.append(el("a", { class: "cite", href, target: "_blank", rel: "noopener noreferrer",
            "aria-label": "Source " + m[1] + ": " + (cited.title || href) }, "[" + m[1] + "]"));
        } else {
          parent.append(document.createTextNode(m[0]));
        }
        last = m.index + m[0].length;
      }
      if (last < line.length) parent.append(document.createTextNode(line.slice(last)));
    };
    for (const block of text.trim().split(/\n\s*\n/)) {
      const lines = block.split("\n");
      if (lines.every((l) => /^\s*[-*•]\s+/.test(l))) {
        const list = el("ul", { class: "points" });
        for (const l of lines) { const item = el("li"); inline(item, l.replace(/^\s*[-*•]\s+/, "")); list.append(item); }
        target.append(list);
      } else {
        const p = el("p");
        inline(p, block);
        target.append(p);
      }
    }
  }

  function addMessage(who, text) {
    const item = el("li", { class: "msg " + who });
    if (who === "you") item.append(el("span", { class: "hidden" }, "You: "));
    const body = el("div", { class: "text" });
    if (text) body.textContent = text;
    item.append(body);
    log.append(item);
    log.scrollTop = log.scrollHeight;
    return { item, body };
  }

  // A finished answer: its text, sources, what kind of reply it was, and the hand-off when the
  // knowledge base had nothing (the strict reply) or too little (low confidence).
  function finish(shown, record) {
    const { item, body } = shown;
    item.dataset.kind = record.kind;
    renderText(body, record.text, record.citations);
    const cited = record.citations || [];
    if (cited.length) {
      // Each source the answer cites; a link only to an http(s) page (a source may have none).
      const list = el("ul", { class: "sources", "aria-label": "Sources" });
      for (const c of cited) {
        const href = safeUrl(c.url);
        const name = "[" + c.id + "] " + (c.title || (href ? new URL(href).host : "source " + c.id));
        const entry = el("li");
        entry.append(href ? el("a", { href, target: "_blank", rel: "noopener noreferrer" }, name) : el("span", {}, name));
        list.append(entry);
      }
      item.append(list);
    }
    if (record.handoff && HANDOFF) {
      const offer = el("p", { class: "handoff" });
      offer.append(el("a", { href: HANDOFF, target: "_blank", rel: "noopener noreferrer" }, HANDOFF_LABEL));
      item.append(offer);
    }
    item.removeAttribute("aria-busy");
  }

  function remember(record) {
    saved.messages = [...saved.messages, record].slice(-KEPT_MESSAGES);
    store.set(slot(), saved);
  }

  function restore() {
    log.replaceChildren();
    for (const record of saved.messages) {
      if (record.who === "you") addMessage("you", record.text);
      else finish(addMessage("bot", ""), record);
    }
  }

  // ---- the stream -----------------------------------------------------------------------

  async function* events(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let at;
      while ((at = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        let kind = "message", data = "";
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) kind = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
        }
        if (data) yield { kind, data: JSON.parse(data) };
      }
    }
  }

  // What went wrong, in words a visitor can act on (the server's own, where it gives them).
  async function refusal(response) {
    let detail = "";
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail : "";
    } catch (e) { /* not JSON */ }
    if (response.status === 429) {
      const wait = response.headers.get("Retry-After");
      return "Too many questions right now" + (wait ? "; please try again in " + wait + " s." : "; please try again shortly.");
    }
    if (response.status === 401 || response.status === 403) {
      return "This chat is not set up correctly (" + response.status + (detail ? ": " + detail : "") + ").";
    }
    return "Sorry, the answer could not be given (" + response.status + (detail ? ": " + detail : "") + ").";
  }

  function post(question) {
    const body = { question, agent: AGENT };
    if (saved.conversation) body.conversation_id = saved.conversation;
    if (SEND_PAGE) body.page_url = location.href.slice(0, 2000);
    return fetch(SERVER + "/v1/ask", { method: "POST", mode: "cors", credentials: "omit",
      headers: { "Authorization": "Bearer " + credential, "Content-Type": "application/json" },
      body: JSON.stringify(body) });
  }

  let busy = false;

  async function ask(question) {
    question = question.trim().slice(0, MAX_QUESTION);
    if (!question || busy) return;
    busy = true;
    send.disabled = true;
    addMessage("you", question);
    remember({ who: "you", text: question });
    const shown = addMessage("bot", "");
    shown.item.setAttribute("aria-busy", "true");
    const typing = el("span", { class: "typing" });
    typing.append(el("i"), el("i"), el("i"), el("span", { class: "hidden" }, "Answering…"));
    shown.body.append(typing);
    const record = { who: "bot", text: "", citations: [], kind: "answer", handoff: false };
    try {
      let response = await post(question);
      if (response.status === 403 && saved.conversation) {
        // An id this credential did not get (the key was changed): a new conversation.
        saved.conversation = null;
        response = await post(question);
      }
      if (!response.ok) throw new Error(await refusal(response));
      let text = null, finished = false;
      for await (const { kind, data } of events(response)) {
        if (kind === "token") {
          if (text === null) { shown.body.replaceChildren(); text = document.createTextNode(""); shown.body.append(text); }
          record.text += String(data.token);
          text.appendData(String(data.token));
          log.scrollTop = log.scrollHeight;
        } else if (kind === "reset") {
          record.text = "";
          if (text !== null) text.data = "";
        } else if (kind === "citations") {
          record.citations = Array.isArray(data.citations) ? data.citations : [];
        } else if (kind === "done") {
          finished = true;
          if (data.conversation_id) saved.conversation = data.conversation_id;
          record.kind = data.small_talk ? "small-talk" : data.curated ? "curated" : data.strict ? "strict" : "answer";
          record.handoff = Boolean(data.strict || data.low_confidence);
        } else if (kind === "error") {
          throw new Error("Sorry, the answer could not be completed (incident " + data.incident + "). Please try again.");
        }
      }
      if (!finished) throw new Error("The answer was cut off. Please try again.");
      finish(shown, record);
      remember(record);
    } catch (error) {
      const said = error instanceof TypeError ? "Could not reach the assistant. Check your connection and try again."
        : String(error.message || error);
      shown.body.replaceChildren(el("span", { class: "error", role: "alert" }, said));
      shown.item.dataset.kind = "error";
      shown.item.removeAttribute("aria-busy");
    } finally {
      busy = false;
      send.disabled = false;
      log.scrollTop = log.scrollHeight;
    }
  }

  // ---- opening, closing, the keyboard ----------------------------------------------------

  function setOpen(open, focus) {
    panel.hidden = !open;
    root.classList.toggle("open", open);
    launcher.setAttribute("aria-expanded", String(open));
    launcher.setAttribute("aria-label", (open ? "Close chat: " : "Open chat: ") + TITLE);
    saved.open = open;
    store.set(slot(), saved);
    if (open) {
      log.scrollTop = log.scrollHeight;
      if (focus) box.focus();
    } else if (focus) {
      launcher.focus();
    }
  }

  launcher.addEventListener("click", () => setOpen(panel.hidden, true));
  close.addEventListener("click", () => setOpen(false, true));
  fresh.addEventListener("click", () => {
    saved = { conversation: null, messages: [], open: true };
    store.set(slot(), saved);
    restore();
    box.focus();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = box.value;
    if (!question.trim() || busy) return;
    box.value = "";
    ask(question);
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit ? form.requestSubmit() : form.dispatchEvent(new Event("submit", { cancelable: true }));
    }
  });
  // A modal dialog: Escape closes it, and Tab stays inside it while it is open.
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      setOpen(false, true);
      return;
    }
    if (event.key !== "Tab") return;
    const stops = [...panel.querySelectorAll("a[href], button:not([disabled]), textarea:not([disabled])")]
      .filter((n) => n.getClientRects().length);
    if (!stops.length) return;
    const first = stops[0], last = stops[stops.length - 1], at = shadow.activeElement;
    if (event.shiftKey && (at === first || !panel.contains(at))) { event.preventDefault(); last.focus(); }
    else if (!event.shiftKey && (at === last || !panel.contains(at))) { event.preventDefault(); first.focus(); }
  });

  restore();
  (document.body || document.documentElement).append(host);
  if (saved.open) setOpen(true, false);

  // For the host page: open or close the panel, ask on the visitor's behalf, or hand in a
  // fresh visitor token (they expire) without reloading.
  window.ElectaChat = Object.freeze({
    open: () => setOpen(true, true),
    close: () => setOpen(false, true),
    ask: (question) => { setOpen(true, false); return ask(String(question)); },
    setToken: (token) => { credential = String(token); saved = store.get(slot()) || { conversation: null, messages: [], open: !panel.hidden }; restore(); },
  });
})();
