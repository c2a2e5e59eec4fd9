// The demo help-center page: adds the widget with the search key `electa demo --serve` wrote
// into the page (a site of your own writes the <script> tag itself, as the page shows).
"use strict";

(function () {
  const meta = document.querySelector('meta[name="electa-demo-key"]');
  const key = meta ? meta.content : "";
  if (!key) {
    document.getElementById("missing").hidden = false;
    return;
  }
  const tag = document.createElement("script");
  tag.src = "/ui/widget.js";
  tag.dataset.key = key;
  tag.dataset.agent = "default";
  tag.dataset.title = "Ask Tallyo";
  tag.dataset.handoff = "https://help.tallyo.example/contact";
  document.getElementById("snippet").textContent = '<script src="' + location.origin + '/ui/widget.js" data-key="'
    + key + '" data-agent="default" data-title="Ask Tallyo" data-handoff="https://help.tallyo.example/contact" defer></'
    + 'script>';
  document.head.append(tag);
})();
