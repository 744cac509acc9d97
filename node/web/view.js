// The one script of the web view: keeps a page live from its server-sent events.
// It reads its settings from data- attributes and builds every node with
// textContent, never innerHTML: text from others is never parsed as HTML.
"use strict";

(function () {
  const token = new URLSearchParams(location.search).get("token") || "";

  function withToken(path, query) {
    const params = new URLSearchParams(query || {});
    params.set("token", token);
    return path + "?" + params.toString();
  }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function showState(indicator, state) {
    if (indicator) {
      indicator.dataset.state = state;
      indicator.textContent = state;
    }
  }

  // ---------------------------------------------------------------- tangle view

  function tangleView(root) {
    return root;
  }

  // ---------------------------------------------------------------- document view

  function documentView(root) {
    return root;
  }

  // ---------------------------------------------------------------- start

  document.addEventListener("DOMContentLoaded", function () {
    const tangle = document.querySelector("[data-tangle-events]");
    if (tangle) tangleView(tangle);
    const doc = document.querySelector("[data-doc-events]");
    if (doc) documentView(doc);
  });

  window.tanglenode = { withToken: withToken, el: el, showState: showState };
})();
