// The one script of the web view: keeps a page live from its server-sent events.
// It reads its settings from data- attributes and builds every node with
// textContent, never innerHTML: text from others is never parsed as HTML.
"use strict";

(function () {
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

  const RECONNECT_MS = 2000;

  // A replica of the tangle's timeline (docs/TIMELINES.md, "Replicas"): the table's
  // rows from data-start on, in order; each command of the stream applied as it comes.

  function tangleRow(row, state) {
    const tr = el("tr", null, state);
    tr.dataset.id = row.id || "";
    tr.dataset.state = state;
    tr.appendChild(el("td", null, "pos"));
    const author = tr.appendChild(el("td", row.author || "?", "author"));
    author.title = row.feed || "";
    tr.appendChild(el("td", row.time || "?", "time"));
    tr.appendChild(el("td", row.text || "(not in the store)", "text"));
    const actions = tr.appendChild(el("td", null, "actions"));
    if (row.erasable) {  // one of ours: erase it everywhere (tangles.py ERASE_BUTTON)
      const button = el("button", "delete", "erase");
      button.type = "button";
      button.dataset.erase = "";
      actions.appendChild(button);
    }
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

    // Returns false when the window cannot follow (a row moved in from before it, or a
    // position the table does not have: the page and the stream disagree): reload.
    function apply(command) {
      const size = rows.rows.length;
      if ("ins" in command) {
        if (command.ins < start) return shift(1), true;
        if (command.ins - start > size) return false;
        const tr = tangleRow(command.row, command.state);
        tr.classList.add("fresh");
        rows.insertBefore(tr, rows.rows[command.ins - start] || null);
      } else if ("del" in command) {
        if (command.del < start) return shift(-1), true;
        if (command.del - start >= size) return false;
        rows.rows[command.del - start].remove();
      } else {
        const src = command.mov[0], dst = command.mov[1];
        if (src < start) return dst < start; // moved within the part not shown, or reload
        if (src - start >= size || dst - start > size - 1) return false;
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

    // EventSource reconnects by itself (with Last-Event-ID) after a dropped connection,
    // but gives up on a reply that is no stream (503 when the node has too many, or the
    // node restarting): then a new one starts from the version applied, a little later.
    function connect() {
      const since = encodeURIComponent(table.dataset.version);
      const source = new EventSource(table.dataset.tangleEvents + "&since=" + since);
      source.onopen = function () { showState(live, "live"); };
      source.onerror = function () {
        showState(live, "reconnecting");
        if (source.readyState === EventSource.CLOSED) setTimeout(connect, RECONNECT_MS);
      };
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
          for (const tr of rows.rows) {
            if (!(tr.dataset.id in body.states)) setRowState(tr, "joined");
          }
        }
        setStates(body.states);
        countPending();
      });
      source.addEventListener("reset", function () {
        source.close();
        location.reload();
      });
      source.addEventListener("failed", function (event) {
        source.close(); // the node said why; reconnecting would meet the same
        showState(live, "stopped: " + JSON.parse(event.data).message);
      });
    }
    // A delete button on one of our messages: its content erased on every node, after
    // asking; the row then says so (the header stays in the timeline).
    table.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-erase]");
      if (!button) return;
      const tr = button.closest("tr");
      if (!window.confirm("Erase this message's content on every node? This cannot be undone.")) {
        return;
      }
      button.disabled = true;
      write("delete", { message: tr.dataset.id }).then(function (answer) {
        const cell = tr.querySelector("td.text");
        if (answer.error) {
          button.disabled = false;
          button.title = answer.error.kind + ": " + answer.error.message;
          return;
        }
        cell.textContent = "(erased)";
      });
    });
    connect();
  }

  // ---------------------------------------------------------------- document view

  // The page's #text is spans of one author each (data-author, title = name, a colour).
  // Here it is runs of code points (the server's positions count code points, JS strings
  // UTF-16 units), spliced as `splice` frames arrive and drawn again whole.

  function documentView(root) {
    const live = document.getElementById("live");
    const textBox = document.getElementById("text");
    const legend = document.getElementById("legend");
    const slider = document.getElementById("version");
    const against = document.getElementById("against");
    const revision = document.getElementById("revision");
    const info = document.getElementById("revision-info");
    let version = Number(textBox.dataset.version);
    let runs = Array.from(textBox.querySelectorAll("span"), function (span) {
      return {
        chars: Array.from(span.textContent),
        author: span.dataset.author || null,
        name: span.title,
        colour: span.style.backgroundColor,
        fresh: false,
      };
    });
    // `?link=`: the range the link points at (docs.py `_linked`), moved by each splice as
    // the link's atoms move: text typed at its start or just after its end stays outside.
    let highlight = textBox.dataset.highlight
      ? textBox.dataset.highlight.split(":").map(Number)
      : null;
    let scrolled = false;
    // #text is the editor too (editor.js): the node's dyed text with what we typed
    const editorArea = window.tanglenodeEditor ? window.tanglenodeEditor.editable(textBox) : null;
    const editor = editorArea && textBox.dataset.doc
      ? documentEditor(editorArea, document.getElementById("editor-state"), version)
      : null;
    if (editor) window.tanglenodeEditor.presence(editorArea, window.tanglenode);
    let incoming = null; // the runs of a snapshot still arriving
    let source = null;
    let following = slider.value === slider.max; // the slider stays on the newest version
    let revisionTimer = null;
    let request = null;

    function runOf(text, who) {
      return { chars: Array.from(text), author: who.author, name: who.name, colour: who.colour };
    }

    function insert(pos, text, who) {
      const run = runOf(text, who);
      run.fresh = true;
      let i = 0;
      while (i < runs.length && pos > runs[i].chars.length) {
        pos -= runs[i].chars.length;
        i += 1;
      }
      if (i === runs.length) {
        if (pos !== 0) throw new Error("an insert past the end of the text");
        runs.push(run);
      } else if (pos === 0) {
        runs.splice(i, 0, run);
      } else {
        const before = runs[i];
        const tail = Object.assign({}, before, { chars: before.chars.slice(pos) });
        before.chars = before.chars.slice(0, pos);
        runs.splice(i + 1, 0, run);
        if (tail.chars.length) runs.splice(i + 2, 0, tail);
      }
    }

    function remove(pos, length) {
      let i = 0;
      while (i < runs.length && pos >= runs[i].chars.length) {
        pos -= runs[i].chars.length;
        i += 1;
      }
      while (length > 0 && i < runs.length) {
        const run = runs[i];
        const taken = Math.min(length, run.chars.length - pos);
        run.chars.splice(pos, taken);
        length -= taken;
        pos = 0;
        if (run.chars.length) i += 1;
        else runs.splice(i, 1);
      }
      if (length > 0) throw new Error("a deletion past the end of the text");
    }

    function merged(list) {
      const out = [];
      list.forEach(function (run) {
        const last = out[out.length - 1];
        if (last && last.author === run.author && last.fresh === run.fresh) {
          last.chars = last.chars.concat(run.chars);
        } else if (run.chars.length) {
          out.push(run);
        }
      });
      return out;
    }

    function draw() {
      runs = merged(runs);
      const pieces = [];
      const fragment = document.createDocumentFragment();
      let at = 0;
      runs.forEach(function (run) {
        // a run the highlight cuts is drawn in up to three spans, the middle one marked
        const cuts = [0, run.chars.length];
        if (highlight) {
          highlight.forEach(function (edge) {
            if (edge > at && edge < at + run.chars.length) cuts.push(edge - at);
          });
        }
        cuts.sort(function (a, b) { return a - b; });
        for (let i = 0; i + 1 < cuts.length; i++) {
          if (cuts[i] === cuts[i + 1]) continue;
          const part = run.chars.slice(cuts[i], cuts[i + 1]).join("");
          const span = el("span", part, run.fresh ? "splice" : "");
          const start = at + cuts[i];
          if (highlight && start >= highlight[0] && start < highlight[1]) {
            span.classList.add("linked");
          }
          span.dataset.author = run.author || "";
          span.title = run.name;
          span.style.backgroundColor = run.colour;
          fragment.appendChild(span);
          pieces.push({ chars: Array.from(part), author: run.author, name: run.name,
            colour: run.colour, className: span.className });
        }
        at += run.chars.length;
        noteAuthor(run);
      });
      if (editorArea) editorArea.paint(pieces);
      else textBox.replaceChildren(fragment);
      textBox.dataset.version = String(version);
      const marked = textBox.querySelector(".linked");
      if (marked && !scrolled) {
        marked.scrollIntoView({ block: "center" });
        scrolled = true;
      }
    }

    function moveHighlight(splice) {
      if (!highlight) return;
      const pos = splice[1];
      if (splice[0] === "ins") {
        const n = Array.from(splice[2]).length;
        if (pos <= highlight[0]) { highlight[0] += n; highlight[1] += n; }
        else if (pos < highlight[1]) highlight[1] += n;
      } else {
        const end = pos + splice[2];
        highlight = highlight.map(function (edge) {
          return edge - Math.max(0, Math.min(end, edge) - pos);
        });
      }
    }

    function noteAuthor(who) {
      const known = Array.prototype.some.call(legend.children, function (span) {
        return (span.dataset.author || null) === who.author;
      });
      if (known) return;
      const span = el("span", who.name);
      span.dataset.author = who.author || "";
      span.title = who.author || "";
      span.style.backgroundColor = who.colour;
      legend.appendChild(span);
    }

    function reached(newVersion) {
      version = newVersion;
      draw();
      if (newVersion > Number(slider.max)) slider.max = String(newVersion);
      if (following) slider.value = slider.max;
      if (following || against.value === "current") showRevisionSoon(300);
    }

    function onSnapshot(event) {
      const data = JSON.parse(event.data);
      if (data.start === 0) {
        incoming = [];
        highlight = null;  // a new text: the range's place in it is not known here
      }
      if (incoming === null) return; // the rest of a snapshot whose start we missed
      data.runs.forEach(function (run) {
        incoming.push(Object.assign(runOf(run.text, run), { fresh: false }));
      });
      if (!data.last) return;
      runs = incoming;
      incoming = null;
      if (editor) {
        editor.snapshot(runs.map(function (run) { return run.chars.join(""); }).join(""),
          data.version);
      }
      reached(data.version);
    }

    function onSplice(event) {
      const data = JSON.parse(event.data);
      if (data.version <= version) return; // already applied
      runs.forEach(function (run) {
        run.fresh = false;
      });
      try {
        data.splices.forEach(function (splice) {
          if (splice[0] === "ins") insert(splice[1], splice[2], data);
          else remove(splice[1], splice[2]);
          moveHighlight(splice);
        });
      } catch (error) {
        restart(null); // our copy is not the server's: start again from a snapshot
        return;
      }
      if (editor) editor.splice(data);
      reached(data.version);
    }

    function restart(since) {
      if (source) source.close();
      connect(since);
    }

    function connect(since) {
      const url = new URL(root.dataset.docEvents, location.href);
      if (since !== null) url.searchParams.set("since", String(since));
      source = new EventSource(url.toString());
      const mine = source;
      source.onopen = function () {
        showState(live, "live");
      };
      source.onerror = function () {
        if (mine.readyState !== EventSource.CLOSED) {
          showState(live, "reconnecting");
          return;
        }
        showState(live, "reconnecting"); // refused (too many views): try again soon
        setTimeout(function () {
          if (source === mine) restart(version);
        }, 3000);
      };
      source.addEventListener("snapshot", onSnapshot);
      source.addEventListener("splice", onSplice);
      source.addEventListener("presence", function (event) {
        if (!editorArea) return;
        const data = JSON.parse(event.data);
        if (data.author === textBox.dataset.self) return;  // ours, from this node
        editorArea.presence(data.author, data.gone ? null : data);
      });
      source.addEventListener("gone", function () {
        mine.close();
        showState(live, "gone");
      });
    }

    // -- the slider: the revision at a version, dyed against the one before or the text now

    function showRevisionSoon(delay) {
      clearTimeout(revisionTimer);
      revisionTimer = setTimeout(showRevision, delay);
    }

    function showRevision() {
      if (request) request.abort();
      request = new AbortController();
      const url = new URL(root.dataset.at, location.href);
      url.searchParams.set("v", slider.value);
      url.searchParams.set("against", against.value);
      fetch(url.toString(), { signal: request.signal })
        .then(function (response) {
          if (!response.ok) throw new Error("the node answered " + response.status);
          return response.json();
        })
        .then(drawRevision)
        .catch(function (error) {
          if (error.name !== "AbortError") info.textContent = String(error.message);
        });
    }

    function drawRevision(body) {
      const fragment = document.createDocumentFragment();
      body.spans.forEach(function (span) {
        let node;
        if (span.inserted_by !== null) {
          node = el("ins", span.text);
          node.title = "inserted by " + span.inserted_by;
        } else if (span.removed_by !== null) {
          node = el("del", span.text);
          node.title = "removed by " + span.removed_by;
        } else {
          node = document.createTextNode(span.text);
        }
        fragment.appendChild(node);
      });
      revision.replaceChildren(fragment);
      revision.dataset.version = String(body.version);
      const who = el("span", body.name);
      who.style.backgroundColor = body.colour;
      const id = el("code", body.msg.slice(0, 9) + "\u2026"); // the version's shared name
      id.title = body.msg;
      info.replaceChildren(
        "v" + body.version + " by ",
        who,
        " at " + body.time + ", +" + body.inserted + " -" + body.deleted + " \u00b7 ",
        id
      );
    }

    slider.addEventListener("input", function () {
      following = slider.value === slider.max;
      showRevisionSoon(60);
    });
    against.addEventListener("change", function () {
      showRevisionSoon(0);
    });
    if (highlight) draw();  // the page came with the text unmarked
    // The margin (commentsMargin) asks for a comment's range: [start, end], or null.
    textBox.addEventListener("highlight", function (event) {
      highlight = event.detail ? event.detail.slice() : null;
      scrolled = false;
      draw();
    });
    connect(version);
    return root;
  }

  // ---------------------------------------------------------------- writing

  // The token travels in a header, never in a URL we make (node/web/actions.py).
  const TOKEN = new URLSearchParams(window.location.search).get("token") || "";

  // POST /api/OP with `body` (JSON); resolves to the node's answer, `{ok}` or `{error}`.
  function write(op, body) {
    return fetch("/api/" + op, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Tanglenode-Token": TOKEN },
      body: JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    }).then(function (response) {
      return response.json().catch(function () {
        return { error: { kind: "http", message: "HTTP " + response.status } };
      });
    }, function (failure) {
      return { error: { kind: "disconnected", message: String(failure) } };
    });
  }

  // Whether a write got no answer from the node: done or not, the page cannot tell.
  function unanswered(answer) {
    return answer.error && (answer.error.kind === "disconnected" || answer.error.kind === "http");
  }

  // A random 128-bit key, in hex, for a write that must be done once.
  function onceKey() {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  // for editor.js: the one door for writes
  window.tanglenode = { write: write, onceKey: onceKey, unanswered: unanswered, token: TOKEN };

  function tanglePath(name, id) {
    return "/t/" + encodeURIComponent(name) + "/" + encodeURIComponent(id.slice(1)) +
      "?token=" + encodeURIComponent(TOKEN);
  }

  // A compose box (page.py's `compose`): what it sends is read from its data- attributes.
  function composeBox(form) {
    const text = form.elements.namedItem("text");
    const nameField = form.elements.namedItem("tangle");
    const result = form.querySelector(".result");
    const button = form.querySelector("button");
    let pending = null;  // {shape, once}: the post last sent that got no answer
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const content = { type: "post", text: text.value };
      const op = form.dataset.api;
      let body;
      if (op === "group-post") {
        body = { group: form.dataset.group, content: content };
      } else if (nameField) {
        const tangles = {};
        tangles[nameField.value] = null;
        body = { content: content, tangles: tangles };
      } else {
        const tangles = {};
        tangles[form.dataset.tangle] = form.dataset.root;
        body = { content: content, tangles: tangles };
      }
      // Sent again after no answer, the same post keeps its key: the node posts it once.
      const shape = op + JSON.stringify(body);
      if (pending === null || pending.shape !== shape) pending = { shape: shape, once: onceKey() };
      body.once = pending.once;
      button.disabled = true;
      result.dataset.state = "sending";
      result.textContent = "sending";
      write(op, body).then(function (answer) {
        button.disabled = false;
        if (!unanswered(answer)) pending = null;
        if (answer.error) {
          result.dataset.state = "error";
          result.textContent = answer.error.kind + ": " + answer.error.message;
          return;
        }
        result.dataset.state = "sent";
        result.textContent = "sent";
        if (nameField) {
          window.location.assign(tanglePath(nameField.value, answer.ok.id));
          return;
        }
        text.value = "";
      });
    });
  }

  // ---------------------------------------------------------------- editing a document

  // The text is an array of code points, as the node counts positions. An op is
  // {t: "i", at, s: [code points]} or {t: "d", at, n}; a list of ops applies in order.

  function applyOps(chars, ops) {
    const out = chars.slice();
    ops.forEach(function (op) {
      if (op.t === "i") Array.prototype.splice.apply(out, [op.at, 0].concat(op.s));
      else out.splice(op.at, op.n);
    });
    return out;
  }

  // `a` rebased over `b` (both made on the same text; `b` applied first): a list of ops.
  // Of two inserts at one place, the one with `aFirst` goes first.
  function over(a, b, aFirst) {
    if (a.t === "i" && b.t === "i") {
      if (a.at < b.at || (a.at === b.at && aFirst)) return [a];
      return [{ t: "i", at: a.at + b.s.length, s: a.s }];
    }
    if (a.t === "i") {  // over a delete
      if (a.at <= b.at) return [a];
      if (a.at >= b.at + b.n) return [{ t: "i", at: a.at - b.n, s: a.s }];
      return [{ t: "i", at: b.at, s: a.s }];
    }
    if (b.t === "i") {  // a delete over an insert
      if (b.at <= a.at) return [{ t: "d", at: a.at + b.s.length, n: a.n }];
      if (b.at >= a.at + a.n) return [a];
      const first = b.at - a.at;  // the insert falls inside: delete around it
      return [{ t: "d", at: a.at, n: first }, { t: "d", at: a.at + b.s.length, n: a.n - first }];
    }
    const aEnd = a.at + a.n;
    const bEnd = b.at + b.n;
    const left = Math.max(0, Math.min(aEnd, b.at) - a.at);
    const right = Math.max(0, aEnd - Math.max(a.at, bEnd));
    if (left + right === 0) return [];
    const at = a.at < b.at ? a.at : (a.at >= bEnd ? a.at - b.n : b.at);
    return [{ t: "d", at: at, n: left + right }];
  }

  // Lists `as` and `bs` made on the same text: [as rebased over bs, bs rebased over as].
  function transform(as, bs, aFirst) {
    if (!as.length || !bs.length) return [as, bs];
    if (as.length > 1) {
      const head = transform(as.slice(0, 1), bs, aFirst);
      const rest = transform(as.slice(1), head[1], aFirst);
      return [head[0].concat(rest[0]), rest[1]];
    }
    if (bs.length > 1) {
      const head = transform(as, bs.slice(0, 1), aFirst);
      const rest = transform(head[0], bs.slice(1), aFirst);
      return [rest[0], head[1].concat(rest[1])];
    }
    return [over(as[0], bs[0], aFirst), over(bs[0], as[0], !aFirst)];
  }

  function opsOfSplices(splices) {
    return splices.map(function (splice) {
      return splice[0] === "ins"
        ? { t: "i", at: splice[1], s: Array.from(splice[2]) }
        : { t: "d", at: splice[1], n: splice[2] };
    });
  }

  function splicesOfOps(ops) {
    return ops.map(function (op) {
      return op.t === "i" ? ["ins", op.at, op.s.join("")] : ["del", op.at, op.n];
    });
  }

  // What changed from `before` to `after` (one edit of a textarea): common ends kept.
  function diffOps(before, after) {
    let start = 0;
    while (start < before.length && start < after.length && before[start] === after[start]) {
      start += 1;
    }
    let end = 0;
    while (end < before.length - start && end < after.length - start &&
           before[before.length - 1 - end] === after[after.length - 1 - end]) {
      end += 1;
    }
    const ops = [];
    const removed = before.length - start - end;
    if (removed) ops.push({ t: "d", at: start, n: removed });
    const added = after.slice(start, after.length - end);
    if (added.length) ops.push({ t: "i", at: start, s: added });
    return ops;
  }

  // A letter of a word (as protocol/doc_diff.py cuts them: letters, digits, `_` and the
  // marks on them).
  const WORD_CHAR = /^[\p{L}\p{N}\p{M}_]$/u;

  // `diffOps(before, after)` for one edit of the textarea, a replacement (a paste over a
  // selection, an autocorrection) widened to whole words at both ends, so blame, links and
  // comments stay on whole words: "bins" -> "boxes" replaces the word, not "ins" by
  // "oxes" after a kept "b". Typing and deleting alone stay as they are: what was typed.
  function editOps(before, after) {
    const ops = diffOps(before, after);
    if (ops.length !== 2) return ops;
    let start = ops[0].at;
    let end = start + ops[0].n;  // in `before`
    let tail = before.length - end;  // kept after the change, in both
    const inWord = function (chars, i) { return i >= 0 && i < chars.length && WORD_CHAR.test(chars[i]); };
    while (start > 0 && inWord(before, start - 1) && (inWord(before, start) || inWord(after, start))) {
      start -= 1;
    }
    while (tail > 0 && inWord(before, end) && (inWord(before, end - 1) || inWord(after, after.length - tail - 1))) {
      end += 1;
      tail -= 1;
    }
    return [
      { t: "d", at: start, n: end - start },
      { t: "i", at: start, s: after.slice(start, after.length - tail) },
    ];
  }

  // A caret (a code point position) after `ops`: text inserted at it goes after it.
  function moveCaret(caret, ops) {
    ops.forEach(function (op) {
      if (op.t === "i") {
        if (op.at < caret) caret += op.s.length;
      } else if (op.at < caret) {
        caret -= Math.min(op.n, caret - op.at);
      }
    });
    return caret;
  }

  const SEND_MS = 150;  // what is typed within this window goes out as one edit
  const MAX_SPLICES = 500;  // a request's splices, at most (the IPC takes 1024)
  const MAX_SENT_CHARS = 50000;  // code points a request inserts, at most: under 256 KiB

  // The first ops of `ops` that fit one request, a long insert cut to fit; and the rest.
  function firstRequest(ops) {
    const taken = [];
    let chars = 0;
    for (let i = 0; i < ops.length && taken.length < MAX_SPLICES; i++) {
      const op = ops[i];
      const size = op.t === "i" ? op.s.length : 0;
      if (chars + size <= MAX_SENT_CHARS) {
        taken.push(op);
        chars += size;
        continue;
      }
      const room = MAX_SENT_CHARS - chars;
      const rest = ops.slice(i + 1);
      if (room > 0) {
        taken.push({ t: "i", at: op.at, s: op.s.slice(0, room) });
        rest.unshift({ t: "i", at: op.at + room, s: op.s.slice(room) });
      } else {
        rest.unshift(op);
      }
      return [taken, rest];
    }
    return [taken, ops.slice(taken.length)];
  }

  // `ops` with `next` added, a run of typing (or of deleting) kept as one op.
  function appendOp(ops, next) {
    const last = ops[ops.length - 1];
    if (last && last.t === "i" && next.t === "i" && next.at === last.at + last.s.length) {
      last.s = last.s.concat(next.s);
      return ops;
    }
    if (last && last.t === "d" && next.t === "d") {
      if (next.at === last.at) { last.n += next.n; return ops; }  // forward delete
      if (next.at + next.n === last.at) { last.at = next.at; last.n += next.n; return ops; }
    }
    ops.push(next);
    return ops;
  }
  const RETRY_MS = 2000;

  // The document page's editor: the textarea shows `server` (the node's text at
  // `version`, as the stream brings it) with our edits not yet in it: `inflight` (sent,
  // waiting for the node to weave them) and `unsent`. Edits go out every SEND_MS, one
  // request at a time, made against `version`: the node merges them with whatever came
  // since. Others' splices are rebased over our pending edits before they reach the
  // textarea, so no keystroke is lost and the caret stays where it was typed.
  function documentEditor(area, state, version) {
    let server = Array.from(JSON.parse(area.dataset.text));
    let local = server.slice();
    let inflight = null;  // {ops, ids: Set of message ids, or null while the reply is awaited}
    let guess = null;  // while `inflight`: the text we expect once the node has woven it
    let unsent = [];
    let held = [];  // splices that came while the reply was awaited: ours, perhaps
    let timer = null;
    let sentAt = 0;  // when the last request went out: one each SEND_MS at most
    area.value = local.join("");
    area.disabled = false;
    say("saved", "saved");

    function say(status, text) {
      state.dataset.state = status;
      state.textContent = text;
    }

    function caretOf() {
      return [area.selectionStart, area.selectionEnd].map(function (units) {
        return Array.from(area.value.slice(0, units)).length;
      });
    }

    function show(chars, carets) {
      const text = chars.join("");
      if (area.value === text) return;
      area.value = text;
      const units = carets.map(function (cp) { return chars.slice(0, cp).join("").length; });
      area.setSelectionRange(units[0], units[1]);
    }

    area.addEventListener("input", function () {
      const now = Array.from(area.value);
      editOps(local, now).forEach(function (op) { appendOp(unsent, op); });
      local = now;
      say("editing", "editing");
      if (timer === null) timer = window.setTimeout(send, SEND_MS);
    });

    function send() {
      timer = null;
      if (inflight !== null || !unsent.length) return;
      sentAt = Date.now();
      const parts = firstRequest(unsent);
      const body = {
        doc: area.dataset.doc, splices: splicesOfOps(parts[0]), base: version, once: onceKey(),
      };
      const sent = { ops: parts[0], ids: null, body: body };
      inflight = sent;
      unsent = parts[1];
      guess = applyOps(server, sent.ops);
      say("sending", "sending");
      post(sent);
    }

    // The edit goes out with a `once` key (docs/IPC.md, "Writes done once"): when no
    // answer comes back, the very same request goes again, and the node does it once.
    function post(sent) {
      write("doc-edit", sent.body).then(function (answer) { answered(sent, answer); });
    }

    function answered(sent, answer) {
      if (unanswered(answer)) {  // done or not, we cannot tell: ask again, the same
        say("error", answer.error.message + " (no answer yet; sending it again)");
        window.setTimeout(function () { post(sent); }, RETRY_MS);
        return;
      }
      if (inflight !== sent) {  // a new text came meanwhile (`snapshot`): it decides
        const kind = answer.error ? answer.error.kind : null;
        if (kind !== null && kind !== "bad-request" && kind !== "sealed" && kind !== "group") {
          unsent = sent.ops.concat(unsent);  // not published: send it again
          if (timer === null) timer = window.setTimeout(send, RETRY_MS);
        }
        return;
      }
      if (answer.error) {
        inflight = null;
        guess = null;
        const kind = answer.error.kind;
        if (kind === "bad-request" || kind === "sealed" || kind === "group") {
          // refused for what it is: it is not in the text, and the page says so
          const carets = caretOf();
          local = applyOps(server, unsent);
          show(local, carets.map(function (c) { return Math.min(c, local.length); }));
          say("error", kind + ": " + answer.error.message + " (that edit was not saved)");
        } else {  // nothing was published: our edits wait to be sent again
          unsent = sent.ops.concat(unsent);
          say("error", kind + ": " + answer.error.message + " (not saved yet; trying again)");
          timer = window.setTimeout(send, RETRY_MS);
        }
        replayHeld();
        return;
      }
      const ids = answer.ok.messages.map(function (m) { return m.msg; });
      inflight.ids = new Set(ids);
      if (!ids.length) finished();
      replayHeld();
    }

    function replayHeld() {
      const waiting = held;
      held = [];
      waiting.forEach(splice);
    }

    function finished() {
      inflight = null;
      if (guess !== null && guess.join("") !== server.join("")) {
        // The node ordered our insert and another's otherwise than we guessed: what we
        // typed since moves with the difference.
        const moved = diffOps(guess, server);
        unsent = transform(unsent, moved, true)[0];
      }
      guess = null;
      const expected = applyOps(server, unsent);
      if (expected.join("") !== local.join("")) {
        const carets = caretOf();
        const change = diffOps(local, expected);
        local = expected;
        show(local, carets.map(function (c) { return Math.min(moveCaret(c, change), local.length); }));
      }
      if (!unsent.length) say("saved", "saved");
      else if (timer === null) {
        timer = window.setTimeout(send, Math.max(0, SEND_MS - (Date.now() - sentAt)));
      }
    }

    // One version's frontier splices, from the document's stream.
    function splice(data) {
      if (data.version <= version) return;
      if (inflight !== null && inflight.ids === null) {
        held.push(data);  // ours or not: the reply tells
        return;
      }
      const ops = opsOfSplices(data.splices);
      server = applyOps(server, ops);
      version = data.version;
      if (inflight !== null && inflight.ids.has(data.msg)) {
        inflight.ids.delete(data.msg);
        if (!inflight.ids.size) finished();
        return;
      }
      const pending = inflight !== null ? inflight.ops : [];
      const first = transform(pending, ops, true);
      if (inflight !== null) {
        inflight.ops = first[0];
        guess = applyOps(guess, first[1]);
      }
      const second = transform(unsent, first[1], true);
      unsent = second[0];
      const carets = caretOf();
      local = applyOps(local, second[1]);
      show(local, carets.map(function (c) { return moveCaret(c, second[1]); }));
    }

    // A new text (the stream restarted): ours not yet sent are laid over it. An edit in
    // flight is forgotten here: if the node wove it, it is in the text (or comes on the
    // stream as anyone's would); its reply is ignored.
    function snapshot(text, newVersion) {
      server = Array.from(text);
      version = newVersion;
      inflight = null;
      guess = null;
      held = [];
      if (unsent.length && timer === null) timer = window.setTimeout(send, SEND_MS);
      const carets = caretOf();
      local = applyOps(server, unsent);
      show(local, carets.map(function (c) { return Math.min(c, local.length); }));
    }

    return { splice: splice, snapshot: snapshot };
  }

  // ---------------------------------------------------------------- peers

  function showResult(output, answer, done) {
    if (answer.error) {
      output.dataset.state = "error";
      output.textContent = answer.error.kind + ": " + answer.error.message;
    } else {
      output.dataset.state = "sent";
      output.textContent = done;
    }
  }

  // The peers page's invites (invites.py): make a code (shown once, with its QR code), or
  // use one. The code never goes into a URL: it travels only in the POST bodies.
  function invitesPanel(panel) {
    const make = panel.querySelector("form.invite-create");
    const made = panel.querySelector(".invite-made");
    const codeBox = panel.querySelector(".invite-code");
    const qr = panel.querySelector(".invite-qr");
    make.addEventListener("submit", function (event) {
      event.preventDefault();
      const body = {
        uses: Number(make.elements.namedItem("uses").value),
        expires: Number(make.elements.namedItem("expires").value),
        follow_back: make.elements.namedItem("follow_back").checked,
      };
      write("invite-create", body).then(function (answer) {
        const ok = answer.ok;
        showResult(make.querySelector(".result"), answer, ok ? "invite " + ok.id + " made" : "");
        if (!ok) return;
        codeBox.value = ok.code;
        qr.src = ok.qr;  // a data: URI drawn by the node
        made.hidden = false;
      });
    });
    panel.querySelector(".invite-copy").addEventListener("click", function () {
      codeBox.select();
      if (navigator.clipboard) navigator.clipboard.writeText(codeBox.value).catch(function () {});
    });
    const use = panel.querySelector("form.invite-use");
    use.addEventListener("submit", function (event) {
      event.preventDefault();
      const code = use.elements.namedItem("code").value.trim();
      write("invite-use", { code: code }).then(function (answer) {
        const ok = answer.ok;
        let said = "";
        if (ok) {
          said = "joined " + ok.inviter + " at " + ok.address + ": following, " +
            (ok.carried ? "carried now" : "not carried") + "; " +
            (ok.follows_back ? "they follow you back" : "they do not follow you back");
          use.elements.namedItem("code").value = "";
        }
        showResult(use.querySelector(".result"), answer, said);
      });
    });
  }

  // The peers page (peers.py): the table redrawn from /peers/state every few seconds,
  // each peer's rates from the counts of two polls.
  function peersView(table) {
    const rows = table.tBodies[0];
    const count = document.getElementById("peer-count");
    const result = document.getElementById("peer-result");
    const every = (Number(table.dataset.poll) || 2) * 1000;
    let last = null;  // {time, counts: {key: [received, sent, bytes_in, bytes_out]}}
    const labels = Array.from(table.tHead.rows[0].cells, function (th) { return th.textContent; });

    function perSecond(now, before, seconds) {
      return Math.max(0, now - before) / seconds;
    }

    // "3.0 msg, 1.2 kB" a second, from the message and byte counts of two polls.
    function rate(messages, bytes, before, seconds) {
      if (before === undefined || seconds <= 0) return "";
      const kilobytes = perSecond(bytes, before[1], seconds) / 1000;
      return perSecond(messages, before[0], seconds).toFixed(1) + " msg, " +
        kilobytes.toFixed(1) + " kB";
    }

    function draw(peers) {
      const time = Date.now();
      const counts = {};
      while (rows.firstChild) rows.removeChild(rows.firstChild);
      peers.forEach(function (peer) {
        counts[peer.key] = [peer.received, peer.sent, peer.bytes_in, peer.bytes_out];
        const before = last ? last.counts[peer.key] : undefined;
        const seconds = last ? (time - last.time) / 1000 : 0;
        const tr = el("tr");
        tr.dataset.key = peer.key;
        tr.dataset.follow = peer.follow;
        const name = tr.appendChild(el("td", null, "peer"));
        name.title = peer.key;
        name.appendChild(el("span", peer.name, "name"));
        name.appendChild(document.createTextNode(" "));
        name.appendChild(el("span", peer.follow, "follow")).dataset.follow = peer.follow;
        [peer.address, peer.state, peer.received, peer.sent,
          rate(peer.received, peer.bytes_in, before && [before[0], before[2]], seconds),
          rate(peer.sent, peer.bytes_out, before && [before[1], before[3]], seconds),
          peer.lack, peer.outside, peer.note].forEach(function (text, i) {
          tr.appendChild(el("td", text)).dataset.label = labels[i + 1] || "";
        });
        const actions = tr.appendChild(el("td", null, "actions"));
        peer.actions.forEach(function (op) {
          const button = actions.appendChild(el("button", op));
          button.type = "button";
          button.dataset.peerAction = op;
          actions.appendChild(document.createTextNode(" "));
        });
        rows.appendChild(tr);
      });
      last = { time: time, counts: counts };
      if (count) count.textContent = String(peers.length);
    }

    let timer = null;
    function poll() {
      fetch(table.dataset.peersState, { cache: "no-store", credentials: "omit" })
        .then(function (response) { return response.json(); })
        .then(function (data) { draw(data.peers); }, function () {})
        .then(function () {
          window.clearTimeout(timer);
          timer = window.setTimeout(poll, every);
        });
    }

    table.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-peer-action]");
      if (!button) return;
      const op = button.dataset.peerAction;
      const key = button.closest("tr").dataset.key;
      const body = op === "disconnect" ? { key: key } : { feed: key, once: onceKey() };
      button.disabled = true;
      write(op, body).then(function (answer) {
        showResult(result, answer, op + ": done");
        window.clearTimeout(timer);
        poll();  // the row's follow state and buttons, now
      });
    });
    poll();
  }

  function connectForm(form) {
    const result = form.querySelector(".result");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const body = {
        address: form.elements.namedItem("address").value,
        key: form.elements.namedItem("key").value.trim(),
        save: form.elements.namedItem("save").checked,
      };
      write("connect", body).then(function (answer) {
        const saved = answer.ok && answer.ok.saved;
        const where = body.save ? (saved ? " (saved in the config)" : " (already in the config)") : "";
        // What the scope will bring of the peer (node/ipc/scope_notes.py): nothing unless carried.
        const standing = answer.ok && answer.ok.standing;
        const scope = standing === "not-followed" ?
          "; not followed: nothing of theirs will be carried (follow them below)" :
          standing === "blocked" ? "; blocked: nothing of theirs will be carried" : "";
        showResult(result, answer, "dialing " + body.address + where + scope);
      });
    });
  }

  // The document's comments in the margin (doc_comments.py): redrawn from the JSON polled
  // every few seconds, when it changed and no reply is being typed; a click on a comment
  // marks its range in the text.
  function commentsMargin(aside) {
    const list = aside.querySelector("#comment-list");
    const count = aside.querySelector("#comment-count");
    const form = aside.querySelector("form.comment-form");
    const textBox = document.getElementById("text");
    const editorArea = document.getElementById("text");
    const editorState = document.getElementById("editor-state");
    const every = (Number(aside.dataset.poll) || 3) * 1000;
    let shown = null;  // the JSON drawn last
    let timer = null;

    function typing() {
      const active = document.activeElement;
      return active && list.contains(active) && active.value;
    }

    function draw(data) {
      list.replaceChildren();
      count.textContent = "(" + data.total + ")";
      data.comments.forEach(function (c) {
        const item = el("li", null, c.deleted ? "comment deleted" : "comment");
        item.dataset.comment = c.comment;
        const quote = el("q", c.quote + (c.quote_cut ? "\u2026" : ""));
        const head = el("p");
        head.append(quote);
        if (c.deleted) head.append(" ", el("span", "(deleted text)", "muted"));
        const by = el("p");
        const who = el("strong", c.name);
        who.title = c.author;
        who.style.backgroundColor = c.colour;
        by.append(who, ": ", el("span", c.text, "comment-text"));
        item.append(head, by);
        const replies = el("ul", null, "replies");
        c.replies.forEach(function (r) {
          const line = el("li");
          const name = el("strong", r.name);
          name.title = r.author;
          line.append(name, ": ", el("span", r.text, "reply-text"));
          replies.append(line);
        });
        item.append(replies);
        const answer = el("form", null, "reply-form");
        const input = el("input");
        input.name = "text";
        input.placeholder = "reply";
        input.required = true;
        const result = el("output", null, "result");
        answer.append(input, result);
        answer.addEventListener("submit", function (event) {
          event.preventDefault();
          send({ reply: c.comment, text: input.value }, result, function () { input.value = ""; });
        });
        item.append(answer);
        item.addEventListener("click", function (event) {
          if (event.target.closest("form")) return;
          list.querySelectorAll(".chosen").forEach(function (li) { li.classList.remove("chosen"); });
          item.classList.add("chosen");
          const range = c.deleted ? null : [c.start, c.start + c.length];
          textBox.dispatchEvent(new CustomEvent("highlight", { detail: range }));
        });
        list.append(item);
      });
    }

    function poll() {
      window.clearTimeout(timer);
      fetch(aside.dataset.comments, { cache: "no-store", credentials: "omit" })
        .then(function (response) { return response.text(); })
        .then(function (text) {
          if (text !== shown && !typing()) {
            draw(JSON.parse(text));
            shown = text;
          }
        }, function () {})
        .then(function () { timer = window.setTimeout(poll, every); });
    }

    // One comment or reply, sent once whatever happens to its answer (`once`).
    function send(body, result, done) {
      body.once = onceKey();
      result.dataset.state = "sending";
      result.textContent = "sending";
      const attempt = function () {
        write("doc-comment", body).then(function (answer) {
          if (unanswered(answer)) {
            window.setTimeout(attempt, 2000);
            return;
          }
          showResult(result, answer, "sent");
          if (!answer.error) {
            done();
            poll();
          }
        });
      };
      attempt();
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const result = form.querySelector(".result");
      const text = form.elements.namedItem("text");
      const units = [editorArea.selectionStart, editorArea.selectionEnd];
      const range = units.map(function (u) { return Array.from(editorArea.value.slice(0, u)).length; });
      if (range[0] === range[1]) {
        result.dataset.state = "error";
        result.textContent = "select the text to comment on in the editor first";
        return;
      }
      if (editorState.dataset.state !== "saved") {
        result.dataset.state = "error";
        result.textContent = "wait until your edits are saved, then comment";
        return;
      }
      const body = { doc: editorArea.dataset.doc, start: range[0], end: range[1], text: text.value };
      send(body, result, function () { text.value = ""; });
    });
    poll();
  }

  // The text with the ranges it includes (doc_transclusion.py): redrawn from the JSON polled
  // every few seconds when it changed; the form includes a link's range at the caret.
  function renderedView(section) {
    const box = section.querySelector("#rendered-text");
    const form = section.querySelector("form.include-form");
    const editorArea = document.getElementById("text");
    const editorState = document.getElementById("editor-state");
    const every = (Number(section.dataset.poll) || 3) * 1000;
    let shown = null;
    let timer = null;

    function build(parts, into) {
      parts.forEach(function (part) {
        if (part.kind === "text") {
          into.append(document.createTextNode(part.text));
        } else if (part.kind === "included") {
          const span = el("span", null, "included");
          span.title = "from " + part.doc;
          span.dataset.doc = part.doc;
          build(part.parts, span);
          into.append(span);
        } else {
          const said = part.kind === "too-many" || part.kind === "cut"
            ? part.kind + ": " + part.text + " more"
            : part.kind + (part.kind === "deleted" ? ": " + part.text : "");
          const span = el("span", "\u27e6" + said + "\u27e7", "not-followed");
          span.dataset.kind = part.kind;
          if (part.doc) span.title = part.doc;
          into.append(span);
        }
      });
    }

    function poll() {
      window.clearTimeout(timer);
      fetch(section.dataset.rendered, { cache: "no-store", credentials: "omit" })
        .then(function (response) { return response.text(); })
        .then(function (text) {
          if (text === shown) return;
          shown = text;
          const parts = JSON.parse(text).parts;
          if (!parts.some(function (part) { return part.kind !== "text"; })) return;
          box.classList.remove("muted");
          box.replaceChildren();
          build(parts, box);
        }, function () {})
        .then(function () { timer = window.setTimeout(poll, every); });
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const result = form.querySelector(".result");
      if (editorState.dataset.state !== "saved") {
        result.dataset.state = "error";
        result.textContent = "wait until your edits are saved, then include";
        return;
      }
      const at = Array.from(editorArea.value.slice(0, editorArea.selectionStart)).length;
      const body = {
        doc: editorArea.dataset.doc, at: at, link: form.elements.namedItem("link").value.trim(),
        once: onceKey(),
      };
      write("doc-include", body).then(function (answer) {
        showResult(result, answer, "included");
        if (!answer.error) poll();
      });
    });
    poll();
  }

  function copyButton(button) {
    button.addEventListener("click", function () {
      const source = document.getElementById(button.dataset.copy);
      if (!source || !navigator.clipboard) return;
      navigator.clipboard.writeText(source.textContent).then(function () {
        button.textContent = "copied";
      }, function () {});
    });
  }

  // ---------------------------------------------------------------- start

  document.addEventListener("DOMContentLoaded", function () {
    const tangle = document.querySelector("[data-tangle-events]");
    if (tangle) tangleView(tangle);
    const doc = document.querySelector("[data-doc-events]");
    if (doc) documentView(doc);
    document.querySelectorAll("form.compose").forEach(composeBox);
    const peers = document.querySelector("[data-peers-state]");
    if (peers) peersView(peers);
    document.querySelectorAll("form.connect").forEach(connectForm);
    const invites = document.getElementById("invites");
    if (invites) invitesPanel(invites);
    document.querySelectorAll("button[data-copy]").forEach(copyButton);
    const margin = document.querySelector("aside[data-comments]");
    if (margin) commentsMargin(margin);
    const rendered = document.querySelector("section[data-rendered]");
    if (rendered) renderedView(rendered);
  });

})();
