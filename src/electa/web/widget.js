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
// localStorage, with the last messages, so a visitor's conversation survives page loads; it is
// forgotten after data-keep-hours without a question (default 24: a shared computer's next
// visitor does not continue it), or kept for the tab alone with data-keep-hours="0".
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
  const KEEP_HOURS = conf.keepHours === undefined || conf.keepHours === "" || !(Number(conf.keepHours) >= 0)
    ? 24 : Number(conf.keepHours);
  // An answer whose stream goes quiet this long is given up (a dead connection never ends);
  // longer than the server's own deadline for a language model (60 s) plus its search.
  const IDLE_S = Number(conf.timeoutS) > 0 ? Number(conf.timeoutS) : 120;
  const KEPT_MESSAGES = 40;
  const MAX_QUESTION = 2000;
  const PREFIX = "electa.chat.v2:";
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
  // With data-keep-hours="0", the tab's sessionStorage: gone when the tab closes.
  const memory = {};
  const area = () => (KEEP_HOURS === 0 ? sessionStorage : localStorage);
  const store = {
    get(name) {
      try { return JSON.parse(area().getItem(name) || "null"); } catch (e) { return memory[name] || null; }
    },
    set(name, value) {
      memory[name] = value;
      try { area().setItem(name, JSON.stringify(value)); } catch (e) { /* memory only */ }
    },
  };

  function hash(text) {
    let h = 2166136261;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    return (h >>> 0).toString(36);
  }

  // Whose conversation it is, as the server binds its ids: a visitor token's organisation and
  // subject (a fresh token for the same visitor continues it), else the key (as a short hash).
  function owner(token) {
    const parts = token.split(".");
    if (parts.length === 3) {
      try {
        const claims = JSON.parse(atob(parts[1].replace(/-/g, "+").replace(/_/g, "/")));
        if (claims && typeof claims.sub === "string") return "visitor:" + hash(String(claims.org) + "\u0000" + claims.sub);
      } catch (e) { /* not a token we can read: the key's hash */ }
    }
    return "key:" + hash(token);
  }
  const slot = () => PREFIX + SERVER + "|" + AGENT + "|" + owner(credential);

  // What is stored, if it has the shape this widget writes (another script of the page, or an
  // older widget, may have left anything there); else a new conversation.
  const blank = () => ({ conversation: null, messages: [], at: Date.now() });
  const isText = (v) => typeof v === "string";
  function valid(record) {
    if (!record || typeof record !== "object" || !isText(record.who) || !isText(record.text)) return false;
    if (record.who === "you") return true;
    return Array.isArray(record.citations || []) && (record.citations || []).every((c) => c && typeof c === "object")
      && isText(record.kind || "");
  }
  function load() {
    const got = store.get(slot());
    if (!got || typeof got !== "object" || !Array.isArray(got.messages) || !got.messages.every(valid)
        || (got.conversation !== null && !isText(got.conversation)) || typeof got.at !== "number"
        || (KEEP_HOURS > 0 && Date.now() - got.at > KEEP_HOURS * 3600e3)) {
      const fresh = blank();
      if (got !== null) store.set(slot(), fresh); // (an expired or broken one is not kept)
      return fresh;
    }
    return got;
  }
  // Other conversations of this widget quiet for 30 days are removed (another page of the site
  // may keep its own for longer than this one does, but not for ever).
  try {
    for (let i = localStorage.length - 1; i >= 0; i--) {
      const name = localStorage.key(i);
      if (!name || !name.startsWith(PREFIX)) continue;
      let at = 0;
      try { at = Number(JSON.parse(localStorage.getItem(name) || "{}").at) || 0; } catch (e) { /* unreadable: removed */ }
      if (Date.now() - at > 30 * 86400e3) localStorage.removeItem(name);
    }
  } catch (e) { /* storage forbidden */ }
  let saved = load();

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
/* The ring in the control's own text colour (white on blue, dark on white: each over 3:1 against
   what it sits on); the launcher's, over any page, dark with a white halo. */
button:focus-visible, a:focus-visible, textarea:focus-visible { outline: 3px solid currentColor; outline-offset: 2px; }
textarea:focus-visible { outline-color: #1c2430; }
.launcher:focus-visible { outline: 3px solid #1c2430; outline-offset: 2px; box-shadow: 0 0 0 7px #ffffff; }
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
  a { color: #8cb8ff; } form button:disabled { background: #4f5966; } textarea:focus-visible { outline-color: #e8edf3; }
}`;

  const ICON_PATH = "M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4H4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 3"
    + " 1.5 1.5 0 0 0 0-3zm5 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm5 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3z";

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
  // (made element by element: a page that enforces Trusted Types refuses innerHTML)
  const icon = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  icon.setAttribute("viewBox", "0 0 24 24");
  icon.setAttribute("aria-hidden", "true");
  icon.setAttribute("focusable", "false");
  const shape = document.createElementNS("http://www.w3.org/2000/svg", "path");
  shape.setAttribute("d", ICON_PATH);
  icon.append(shape);
  launcher.append(icon);
  // A dialog beside the page, not a modal one: the page stays usable; Tab cycles inside it.
  const panel = el("div", { class: "panel", id: "electa-panel", role: "dialog", "aria-labelledby": "electa-title",
    hidden: "" });
  const header = el("header");
  const title = el("h2", { id: "electa-title" }, TITLE);
  const fresh = el("button", { type: "button", class: "new", title: "Start a new conversation" }, "New chat");
  const close = el("button", { type: "button", class: "close", "aria-label": "Close chat" }, "×");
  header.append(title, fresh, close);
  // The conversation is not a live region (a streamed answer would be read token by token, and
  // again when it is finished): each finished answer is said once by ``announcer``.
  const log = el("ol", { class: "log", "aria-label": "Conversation" });
  const announcer = el("div", { class: "hidden", role: "status", "aria-live": "polite" });
  const form = el("form", { "aria-label": "Ask a question" });
  const label = el("label", { for: "electa-question", class: "hidden" }, "Your question");
  const box = el("textarea", { id: "electa-question", rows: "1", maxlength: String(MAX_QUESTION),
    placeholder: "Ask a question…", autocomplete: "off" });
  const send = el("button", { type: "submit" }, "Send");
  form.append(label, box, send);
  panel.append(header, log, form, announcer);
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

  // The finished turn (question and answer) joins the stored conversation; a failed one does not.
  function remember(state, question, record) {
    state.messages = [...state.messages, { who: "you", text: question }, record].slice(-KEPT_MESSAGES);
    state.at = Date.now();
    if (state === saved) store.set(slot(), state);
  }

  function restore() {
    log.replaceChildren();
    for (const record of saved.messages) {
      if (record.who === "you") addMessage("you", record.text);
      else finish(addMessage("bot", ""), record);
    }
  }

  // ---- the stream -----------------------------------------------------------------------

  // Server-Sent Events from a fetch body: frames end with a blank line (LF, CRLF or CR, even one
  // split across reads); "data:" lines join with a newline; a frame that is not JSON is an error.
  async function* events(response, signal, idle) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await idle(reader.read());
      if (signal.aborted) break;
      if (!done) buffer += decoder.decode(value, { stream: true });
      // A lone CR at the end may be the first half of a CRLF: wait for the next read (at the
      // end of the stream there is none).
      const ready = buffer.endsWith("\r") && !done ? buffer.length - 1 : buffer.length;
      const text = buffer.slice(0, ready).replace(/\r\n?/g, "\n");
      buffer = buffer.slice(ready);
      let rest = text, at;
      while ((at = rest.indexOf("\n\n")) >= 0) {
        const frame = rest.slice(0, at);
        rest = rest.slice(at + 2);
        let kind = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) kind = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (!data.length) continue;
        let parsed;
        try { parsed = JSON.parse(data.join("\n")); } catch (e) { throw new Error("The answer arrived garbled. Please try again."); }
        yield { kind, data: parsed };
      }
      buffer = rest + buffer;
      if (done) break;
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

  // The page the visitor is on, without its query and fragment: they can carry tokens, e-mail
  // addresses or text written to steer the assistant, and no stored page's address has them.
  function currentPage() {
    if (!SEND_PAGE || !/^https?:$/.test(location.protocol)) return undefined;
    return (location.origin + location.pathname).slice(0, 2000);
  }

  function post(question, conversation, signal) {
    const body = { question, agent: AGENT };
    if (conversation) body.conversation_id = conversation;
    const page = currentPage();
    if (page) body.page_url = page;
    return fetch(SERVER + "/v1/ask", { method: "POST", mode: "cors", credentials: "omit", signal,
      headers: { "Authorization": "Bearer " + credential, "Content-Type": "application/json" },
      body: JSON.stringify(body) });
  }

  // The ask in flight (one at a time): "New chat" or a new token stops it, and its outcome then
  // goes nowhere (never into the conversation that replaced its own).
  let flight = null;

  function stop() {
    if (flight) flight.abort();
    flight = null;
    send.disabled = false;
  }

  async function ask(question) {
    question = question.trim().slice(0, MAX_QUESTION);
    if (!question || flight) return false;
    const control = new AbortController();
    flight = control;
    const state = saved; // the conversation this ask belongs to
    send.disabled = true;
    addMessage("you", question);
    const shown = addMessage("bot", "");
    shown.item.setAttribute("aria-busy", "true");
    const typing = el("span", { class: "typing" });
    typing.append(el("i"), el("i"), el("i"), el("span", { class: "hidden" }, "Answering…"));
    shown.body.append(typing);
    announcer.textContent = "Answering…";
    const record = { who: "bot", text: "", citations: [], kind: "answer", handoff: false };
    // Each read must bring something within IDLE_S, or the answer is given up.
    const idle = (promise) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => { control.abort(); reject(new Error("The answer stopped arriving. Please try again.")); },
        IDLE_S * 1000);
      promise.then((v) => { clearTimeout(timer); resolve(v); }, (e) => { clearTimeout(timer); reject(e); });
    });
    try {
      let response = await idle(post(question, state.conversation, control.signal));
      if (response.status === 403 && state.conversation) {
        const said = await idle(response.clone().text());
        if (/conversation_id/.test(said)) {
          // An id this credential did not get (the key was changed): a new conversation.
          state.conversation = null;
          response = await idle(post(question, null, control.signal));
        }
      }
      if (!response.ok) throw new Error(await idle(refusal(response)));
      let text = null, finished = false;
      for await (const { kind, data } of events(response, control.signal, idle)) {
        if (kind === "token") {
          if (text === null) { shown.body.replaceChildren(); text = document.createTextNode(""); shown.body.append(text); }
          record.text += String(data.token);
          text.appendData(String(data.token));
          log.scrollTop = log.scrollHeight;
        } else if (kind === "reset") {
          record.text = "";
          if (text !== null) text.data = "";
        } else if (kind === "citations") {
          record.citations = Array.isArray(data.citations) ? data.citations.filter((c) => c && typeof c === "object") : [];
        } else if (kind === "done") {
          finished = true;
          if (typeof data.conversation_id === "string") state.conversation = data.conversation_id;
          record.kind = data.small_talk ? "small-talk" : data.curated ? "curated" : data.strict ? "strict" : "answer";
          record.handoff = Boolean(data.strict || data.low_confidence);
        } else if (kind === "error") {
          throw new Error("Sorry, the answer could not be completed (incident " + data.incident + "). Please try again.");
        }
      }
      if (control.signal.aborted) throw new Error("stopped");
      if (!finished) throw new Error("The answer was cut off. Please try again.");
      finish(shown, record);
      remember(state, question, record);
      announcer.textContent = "Answer: " + record.text + (record.handoff && HANDOFF ? " " + HANDOFF_LABEL + " is offered." : "");
    } catch (error) {
      if (flight !== control && control.signal.aborted) return false; // stopped by New chat or a new token: shown nowhere
      const said = error instanceof TypeError ? "Could not reach the assistant. Check your connection and try again."
        : String(error.message || error);
      shown.body.replaceChildren(el("span", { class: "error" }, said));
      shown.item.dataset.kind = "error";
      shown.item.removeAttribute("aria-busy");
      announcer.textContent = "Error: " + said;
    } finally {
      control.abort(); // (the body of an answer left early is not read on)
      if (flight === control) { flight = null; send.disabled = false; }
      log.scrollTop = log.scrollHeight;
    }
    return true;
  }

  // ---- opening, closing, the keyboard ----------------------------------------------------

  function setOpen(open, focus) {
    panel.hidden = !open;
    root.classList.toggle("open", open);
    launcher.setAttribute("aria-expanded", String(open));
    launcher.setAttribute("aria-label", (open ? "Close chat: " : "Open chat: ") + TITLE);
    if (open) {
      log.scrollTop = log.scrollHeight;
      if (focus) box.focus();
    } else if (focus) {
      launcher.focus();
    }
  }

  // Another conversation (a new one, or a new credential's): whatever was in flight stops.
  function switchTo(state) {
    stop();
    saved = state;
    store.set(slot(), saved);
    restore();
  }

  launcher.addEventListener("click", () => setOpen(panel.hidden, true));
  close.addEventListener("click", () => setOpen(false, true));
  fresh.addEventListener("click", () => {
    switchTo(blank());
    box.focus();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = box.value;
    if (!question.trim() || flight) return;
    box.value = "";
    ask(question);
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit ? form.requestSubmit() : form.dispatchEvent(new Event("submit", { cancelable: true }));
    }
  });
  // Escape closes the panel; Tab and Shift+Tab cycle among its controls.
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
    if (event.shiftKey && at === first) { event.preventDefault(); last.focus(); }
    else if (!event.shiftKey && at === last) { event.preventDefault(); first.focus(); }
  });

  (document.body || document.documentElement).append(host);
  try {
    restore();
  } catch (e) { // (whatever was stored, the widget is there, with a new conversation)
    switchTo(blank());
  }

  // For the host page: open or close the panel, ask on the visitor's behalf (false when an
  // answer is still coming), or hand in a fresh visitor token (they expire) without reloading.
  window.ElectaChat = Object.freeze({
    open: () => setOpen(true, true),
    close: () => setOpen(false, true),
    ask: (question) => { setOpen(true, false); return ask(String(question)); },
    setToken: (token) => {
      const before = slot();
      credential = String(token);
      if (slot() !== before) switchTo(load()); // (the same visitor's new token: the conversation goes on)
    },
  });
})();
