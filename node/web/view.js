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

  // A replica of the tangle's timeline (seed 000 §1.2): the table's rows from
  // data-start on, in order; each command of the stream applied as it comes.

  function tangleRow(row, state) {
    const tr = el("tr", null, state);
    tr.dataset.id = row.id || "";
    tr.dataset.state = state;
    tr.appendChild(el("td", null, "pos"));
    const author = tr.appendChild(el("td", row.author || "?", "author"));
    author.title = row.feed || "";
    tr.appendChild(el("td", row.time || "?", "time"));
    tr.appendChild(el("td", row.text || "(not in the store)", "text"));
    return tr;
  }

  function setRowState(tr, state) {
    tr.dataset.state = state;
    tr.className = state;
  }

  function tangleView(table) {
    const rows = table.tBodies[0];
    const live = document.getElementById("live");
    const pendingCount = document.getElementById("pending-count");
    const count = document.getElementById("count");
    let start = Number(table.dataset.start) || 0;

    function shift(by) {
      start += by;
      table.dataset.start = String(start);
      rows.style.counterReset = "pos " + start;
    }

    function rowById(id) {
      for (const tr of rows.rows) if (tr.dataset.id === id) return tr;
      return null;
    }

    function setStates(states) {
      for (const id of Object.keys(states)) {
        const tr = rowById(id);
        if (tr) setRowState(tr, states[id]);
      }
    }

    // Returns false when the window cannot follow (a row moved in from before it).
    function apply(command) {
      if ("ins" in command) {
        if (command.ins < start) return shift(1), true;
        const tr = tangleRow(command.row, command.state);
        tr.classList.add("fresh");
        rows.insertBefore(tr, rows.rows[command.ins - start] || null);
      } else if ("del" in command) {
        if (command.del < start) return shift(-1), true;
        rows.rows[command.del - start].remove();
      } else {
        const src = command.mov[0], dst = command.mov[1];
        if (src < start) {
          if (dst >= start - 1) return false;
          return true; // moved within the part not shown
        }
        const tr = rows.rows[src - start];
        tr.remove();
        if (dst < start) return shift(1), true;
        tr.classList.remove("fresh", "moved");
        void tr.offsetWidth; // restart the highlight
        tr.classList.add("moved");
        rows.insertBefore(tr, rows.rows[dst - start] || null);
      }
      return true;
    }

    function countPending() {
      if (count) count.textContent = String(start + rows.rows.length);
      if (pendingCount) {
        pendingCount.textContent = String(rows.querySelectorAll("tr[data-state=pending]").length);
      }
    }

    const url = table.dataset.tangleEvents + "&since=" + encodeURIComponent(table.dataset.version);
    const source = new EventSource(url);
    source.onopen = function () { showState(live, "live"); };
    source.onerror = function () { showState(live, "reconnecting"); };
    source.addEventListener("commands", function (event) {
      const body = JSON.parse(event.data);
      for (const command of body.commands) {
        if (!apply(command)) {
          source.close();
          location.reload();
          return;
        }
      }
      if (body.states) setStates(body.states);
      table.dataset.version = event.lastEventId;
      countPending();
    });
    source.addEventListener("states", function (event) {
      setStates(JSON.parse(event.data).states);
      countPending();
    });
    source.addEventListener("unjoined", function (event) {
      const body = JSON.parse(event.data);
      if (body.complete) {
        for (const tr of rows.rows) if (!(tr.dataset.id in body.states)) setRowState(tr, "joined");
      }
      setStates(body.states);
      countPending();
    });
    source.addEventListener("reset", function () {
      source.close();
      location.reload();
    });
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
