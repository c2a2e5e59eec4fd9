// What Electa's own pages (search, admin) share. The chat widget keeps its own copies: it is
// one file that other sites load alone.
"use strict";

window.ElectaUi = Object.freeze({
  // An element with attributes (or, given a string, that class) and text, as a text node.
  el(tag, attrs, text) {
    const node = document.createElement(tag);
    if (typeof attrs === "string") {
      if (attrs) node.className = attrs;
    } else {
      for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  },

  // An absolute http(s) URL, else null: a page stored without one (its URL "") or with a
  // relative one or "javascript:…" is shown without a link, never resolved against this page.
  safeUrl(url) {
    if (!url) return null;
    try {
      const parsed = new URL(url);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch (e) {
      return null;
    }
  },
});
