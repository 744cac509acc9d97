// tanglenode's document editor: one element that shows the text dyed by author and takes
// typing in place (docs/WEB.md, "The document page"), others' carets and selections drawn
// in it live; and the form that starts a document (`/docs`).
//
// `#text` is a contenteditable element. Its text is a model kept here (the exact text,
// code points), never read back from the DOM: every `beforeinput` is taken (prevented)
// and applied to the model, which is drawn again whole, each character in the colour of
// who typed it (the runs view.js hands over with `paint`), a character not yet woven by
// the node in ours, and each control, format or private-use character as `?`, one for
// one, as the pages show them. The element then looks to view.js as a textarea does:
// `value`, `selectionStart`, `selectionEnd`, `setSelectionRange`, `disabled`, and an
// `input` event after each change, so the editing logic (sending, rebasing others'
// splices, once keys) is view.js's, unchanged. An IME's composition is let through and
// read back once it ends. Built from text only (`textContent`), never from HTML.
//
// Loaded before view.js; both run at DOMContentLoaded.

(function () {
  "use strict";

  const UNSAFE = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Zl}\p{Zp}]/u;
  const PRESENCE_MS = 400;  // a caret's moves go out at most this often (the first at once)
  const PRESENCE_IDLE_MS = 15000;  // and again after this, while the page is open
  const PRESENCE_STALE_MS = 35000;  // others' carets not said again within this are gone

  function shown(ch) {
    return ch !== "\n" && ch !== "\t" && ch !== "\r" && UNSAFE.test(ch) ? "?" : ch;
  }

  // UTF-16 units of `chars` (code points) before code point `cp`.
  function unitsOf(chars, cp) {
    let units = 0;
    for (let i = 0; i < cp && i < chars.length; i++) units += chars[i].length;
    return units;
  }

  // Code points of `chars` within its first `units` UTF-16 units.
  function pointsOf(chars, units) {
    let i = 0;
    while (i < chars.length && units >= chars[i].length) {
      units -= chars[i].length;
      i += 1;
    }
    return i;
  }

  function countPoints(text) {
    let n = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0xdc00 || c > 0xdfff) n += 1;  // a low surrogate ends a pair already counted
    }
    return n;
  }

  function editable(box) {
    let chars = [];  // the model: the exact text, code points
    let pieces = [];  // the node's text as view.js dyes it: {chars, author, name, colour, ...}
    let sel = [0, 0];  // code points
    let disabled = true;
    let composing = false;
    let others = new Map();  // author -> {name, colour, start, end} (code points, node text)
    const self = {
      author: box.dataset.self || "",
      name: box.dataset.selfName || "you",
      colour: box.dataset.selfColour || "#eee",
    };

    // -- DOM positions <-> code points

    function pointAt(node, offset) {
      if (!box.contains(node)) return null;
      const range = document.createRange();
      range.setStart(box, 0);
      try {
        range.setEnd(node, offset);
      } catch (error) {
        return null;
      }
      return Math.min(countPoints(range.toString()), chars.length);
    }

    function domAt(cp) {
      const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
      let node = walker.nextNode();
      let last = null;
      while (node) {
        const n = countPoints(node.data);
        if (cp <= n) return [node, unitsOf(Array.from(node.data), cp)];
        cp -= n;
        last = node;
        node = walker.nextNode();
      }
      return last ? [last, last.data.length] : [box, 0];
    }

    function readSelection() {
      const s = window.getSelection();
      if (!s || !s.rangeCount) return null;
      const r = s.getRangeAt(0);
      const a = pointAt(r.startContainer, r.startOffset);
      const b = pointAt(r.endContainer, r.endOffset);
      if (a === null || b === null) return null;
      return [Math.min(a, b), Math.max(a, b)];
    }

    function placeSelection() {
      if (document.activeElement !== box) return;
      const a = domAt(sel[0]);
      const b = domAt(sel[1]);
      const s = window.getSelection();
      s.setBaseAndExtent(a[0], a[1], b[0], b[1]);
    }

    // Focus from a script or the keyboard finds the caret where it was (a textarea's does);
    // a click puts it where it clicked.
    let pointing = false;
    box.addEventListener("pointerdown", function () { pointing = true; });
    box.addEventListener("focus", function () {
      if (!pointing) placeSelection();
      pointing = false;
    });

    document.addEventListener("selectionchange", function () {
      if (composing) return;
      const found = readSelection();
      if (found === null) return;
      if (found[0] === sel[0] && found[1] === sel[1]) return;
      sel = found;
      box.dispatchEvent(new CustomEvent("caret"));
    });

    // -- drawing

    // Which piece each character of the model comes from (-1: not in the node's text yet):
    // the model is the node's text with our unsent edits, so the common ends line up.
    function origins() {
      const server = [];
      const from = [];
      pieces.forEach(function (piece, p) {
        piece.chars.forEach(function (ch) { server.push(ch); from.push(p); });
      });
      const ends = commonEnds(server);
      const start = ends[0];
      const end = ends[1];
      const out = new Int32Array(chars.length);
      for (let i = 0; i < chars.length; i++) {
        if (i < start) out[i] = from[i];
        else if (i >= chars.length - end) out[i] = from[i - chars.length + server.length];
        else out[i] = -1;
      }
      return out;
    }

    // The one change from `before` to `after` (common ends kept): [where, how many removed,
    // the characters put there].
    function change(before, after) {
      let start = 0;
      while (start < before.length && start < after.length && before[start] === after[start]) {
        start += 1;
      }
      let end = 0;
      while (end < before.length - start && end < after.length - start &&
             before[before.length - 1 - end] === after[after.length - 1 - end]) {
        end += 1;
      }
      return [start, before.length - start - end, after.slice(start, after.length - end)];
    }

    // How many characters the model and the node's text share at the start, and at the end.
    function commonEnds(server) {
      let start = 0;
      // the node's text comes as the pages show it (`?` for an unsafe character)
      const same = function (a, b) { return a === b || shown(a) === b; };
      while (start < chars.length && start < server.length && same(chars[start], server[start])) {
        start += 1;
      }
      let end = 0;
      while (end < chars.length - start && end < server.length - start &&
             same(chars[chars.length - 1 - end], server[server.length - 1 - end])) {
        end += 1;
      }
      return [start, end];
    }

    // A position of the model as a position of the node's text: what we typed and the node
    // has not woven yet is around the caret, so the common ends place it.
    function toNode(cp) {
      const server = [];
      pieces.forEach(function (piece) { Array.prototype.push.apply(server, piece.chars); });
      const ends = commonEnds(server);
      if (cp <= ends[0]) return cp;
      if (cp >= chars.length - ends[1]) return cp - chars.length + server.length;
      return Math.min(server.length - ends[1], Math.max(ends[0], cp));
    }

    // Others' carets and selections, in the model's code points (they come in the node's).
    function marks() {
      const starts = new Map();  // position -> [caret]
      const covered = new Array(chars.length);
      others.forEach(function (who) {
        const a = Math.min(who.start, chars.length);
        const b = Math.min(Math.max(who.end, a), chars.length);
        for (let i = a; i < b; i++) covered[i] = who;
        const at = b;
        if (!starts.has(at)) starts.set(at, []);
        starts.get(at).push(who);
      });
      return { starts: starts, covered: covered };
    }

    function caretMark(who) {
      const mark = document.createElement("mark");
      mark.className = "presence";
      mark.contentEditable = "false";
      mark.dataset.presence = who.name;
      mark.dataset.author = who.author;
      mark.title = who.name;
      mark.style.borderColor = who.caret;
      mark.style.setProperty("--who", who.caret);
      return mark;
    }

    function draw() {
      if (composing) return;  // the IME owns the DOM until it ends: drawn then
      const from = origins();
      const m = marks();
      const fragment = document.createDocumentFragment();
      let i = 0;
      const put = function (at) {
        (m.starts.get(at) || []).forEach(function (who) { fragment.appendChild(caretMark(who)); });
      };
      while (i < chars.length) {
        put(i);
        const p = from[i];
        const over = m.covered[i];
        let j = i + 1;
        while (j < chars.length && from[j] === p && m.covered[j] === over && !m.starts.has(j)) {
          j += 1;
        }
        let text = "";
        for (let k = i; k < j; k++) text += shown(chars[k]);
        const span = document.createElement("span");
        span.textContent = text;
        const piece = p >= 0 ? pieces[p] : null;
        span.dataset.author = piece ? piece.author || "" : self.author;
        span.title = piece ? piece.name : self.name + " (not saved yet)";
        span.style.backgroundColor = piece ? piece.colour : self.colour;
        if (!piece) span.className = "unsaved";
        else if (piece.className) span.className = piece.className;
        if (over) {
          span.classList.add("selected-by");
          span.dataset.selectedBy = over.name;
          span.style.boxShadow = "inset 0 -3px 0 " + over.caret;
        }
        fragment.appendChild(span);
        i = j;
      }
      put(chars.length);
      // a last line break shows as a line only with something after it
      if (!chars.length || chars[chars.length - 1] === "\n") {
        fragment.appendChild(document.createElement("br"));
      }
      box.replaceChildren(fragment);
      placeSelection();
    }

    // -- typing

    function replace(a, b, text) {
      const inserted = Array.from(text);
      chars = chars.slice(0, a).concat(inserted, chars.slice(b));
      sel = [a + inserted.length, a + inserted.length];
      draw();
      box.dispatchEvent(new Event("input"));
    }

    function targetOf(event) {
      const ranges = event.getTargetRanges ? event.getTargetRanges() : [];
      if (!ranges.length) return null;
      const a = pointAt(ranges[0].startContainer, ranges[0].startOffset);
      const b = pointAt(ranges[0].endContainer, ranges[0].endOffset);
      return a === null || b === null ? null : [Math.min(a, b), Math.max(a, b)];
    }

    box.addEventListener("beforeinput", function (event) {
      if (event.inputType === "insertCompositionText") return;  // read back at its end
      event.preventDefault();
      if (disabled) return;
      const type = event.inputType;
      // where it goes: the browser's own target (a drop's place), else the selection
      const at = (type.startsWith("insert") && targetOf(event)) || readSelection() || sel;
      let text = null;
      if (type === "insertParagraph" || type === "insertLineBreak") text = "\n";
      else if (type.startsWith("insert")) {
        text = event.data;
        if (text === null && event.dataTransfer) text = event.dataTransfer.getData("text/plain");
        if (text === null) return;
        text = text.replace(/\r\n?/g, "\n");
      }
      if (text !== null) {
        replace(at[0], at[1], text);
        return;
      }
      if (!type.startsWith("delete")) return;  // formatting, undo: not in a plain text
      let range = at[0] !== at[1] ? at : targetOf(event);
      if (range === null || range[0] === range[1]) {
        if (type === "deleteContentBackward" && at[0] > 0) range = [at[0] - 1, at[0]];
        else if (type === "deleteContentForward" && at[0] < chars.length) range = [at[0], at[0] + 1];
        else return;
      }
      replace(range[0], range[1], "");
    });

    // What the DOM shows at a composition's start: what the IME's text is read against.
    let drawn = [];
    // Copying (and cutting) takes the exact text, not the `?`s drawn for unsafe characters.
    const copy = function (event) {
      const found = readSelection() || sel;
      if (found[0] === found[1] || !event.clipboardData) return;
      event.clipboardData.setData("text/plain", chars.slice(found[0], found[1]).join(""));
      event.preventDefault();
    };
    box.addEventListener("copy", copy);
    box.addEventListener("cut", copy);  // the deletion is its `beforeinput` (deleteByCut)

    box.addEventListener("compositionstart", function () {
      composing = true;
      drawn = chars.slice();
    });
    box.addEventListener("compositionend", function () {
      composing = false;
      // what the IME wrote: the DOM's text (the drawing at its start plus its characters)
      const [at, gone, added] = change(drawn.map(shown), Array.from(box.textContent));
      // others' splices that came meanwhile went to the model only: the IME's text moves past
      // a change before it
      const [moved, removed, inserted] = change(drawn, chars);
      let start = at;
      if (at >= moved + removed) start += inserted.length - removed;
      else if (at > moved) start = moved + inserted.length;
      const end = Math.min(chars.length, start + gone);
      replace(start, end, added.join(""));
    });

    // -- as a textarea, for view.js

    Object.defineProperty(box, "value", {
      get: function () { return chars.join(""); },
      set: function (text) {
        const next = Array.from(String(text));
        if (next.join("") === chars.join("")) return;
        chars = next;
        sel = [Math.min(sel[0], chars.length), Math.min(sel[1], chars.length)];
        draw();
      },
    });
    Object.defineProperty(box, "selectionStart", { get: function () { return unitsOf(chars, sel[0]); } });
    Object.defineProperty(box, "selectionEnd", { get: function () { return unitsOf(chars, sel[1]); } });
    Object.defineProperty(box, "disabled", {
      get: function () { return disabled; },
      set: function (value) {
        disabled = Boolean(value);
        box.contentEditable = disabled ? "false" : "plaintext-only";
        if (box.contentEditable !== "plaintext-only" && !disabled) box.contentEditable = "true";
      },
    });
    box.setSelectionRange = function (a, b) {
      const was = sel.join(":");
      sel = [pointsOf(chars, a), pointsOf(chars, b === undefined ? a : b)];
      placeSelection();
      if (sel.join(":") !== was) box.dispatchEvent(new CustomEvent("caret"));
    };
    // As a textarea's (units), the caret after the text in "end" mode; no input event.
    box.setRangeText = function (text, a, b, mode) {
      const from = pointsOf(chars, a === undefined ? unitsOf(chars, sel[0]) : a);
      const to = pointsOf(chars, b === undefined ? unitsOf(chars, sel[1]) : b);
      const inserted = Array.from(String(text));
      chars = chars.slice(0, from).concat(inserted, chars.slice(to));
      const end = from + inserted.length;
      sel = mode === "end" ? [end, end] : mode === "select" ? [from, end] : [from, from];
      draw();
    };
    // The node's text in dyed pieces (view.js `draw`), for the colours.
    box.paint = function (list) {
      pieces = list;
      draw();
      // our caret in the node's text moved with it: said again (if it changed)
      if (document.activeElement === box) box.dispatchEvent(new CustomEvent("caret"));
    };
    // Where others are: author -> {name, colour, start, end} in the node's text, or null.
    box.presence = function (author, where) {
      if (where === null) others.delete(author);
      else others.set(author, Object.assign({ seen: Date.now() }, where));
      draw();
    };
    // Where we are, in the node's text.
    box.caret = function () { return [toNode(sel[0]), toNode(sel[1])]; };
    window.setInterval(function () {  // a caret not said again for a while has left
      let stale = false;
      others.forEach(function (who, author) {
        if (Date.now() - who.seen > PRESENCE_STALE_MS) { others.delete(author); stale = true; }
      });
      if (stale) draw();
    }, 5000);

    chars = Array.from(JSON.parse(box.dataset.text || '""'));
    pieces = Array.from(box.querySelectorAll("span"), function (span) {
      return { chars: Array.from(span.textContent), author: span.dataset.author || null,
        name: span.title, colour: span.style.backgroundColor, className: span.className };
    });
    draw();
    return box;
  }

  // -- presence: our caret to the node, others' from the stream

  function presence(box, api) {
    let timer = null;
    let sentAt = 0;
    let last = "";
    function send() {
      timer = null;
      if (Date.now() - sentAt < PRESENCE_MS) {
        timer = window.setTimeout(send, PRESENCE_MS - (Date.now() - sentAt));
        return;
      }
      const at = box.caret();
      const key = at.join(":");
      if (key === last && Date.now() - sentAt < PRESENCE_IDLE_MS) return;
      last = key;
      sentAt = Date.now();
      api.write("doc-presence", { doc: box.dataset.doc, start: at[0], end: at[1] });
    }
    function soon() {
      if (timer === null) timer = window.setTimeout(send, PRESENCE_MS);
    }
    box.addEventListener("caret", soon);
    box.addEventListener("input", soon);
    box.addEventListener("focus", soon);
    window.setInterval(function () {
      if (document.activeElement === box) { last = ""; soon(); }
    }, PRESENCE_IDLE_MS);
  }

  // -- /docs: a new document

  function newDocument(form, api) {
    let pending = null;  // the request sent and not answered: sent again as it was
    const result = form.querySelector("output");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (pending === null) {
        const group = form.elements.namedItem("group").value;
        pending = { title: form.elements.namedItem("title").value, once: api.onceKey() };
        if (group) pending.group = group;
      }
      const sent = pending;
      result.dataset.state = "sending";
      result.textContent = "creating";
      api.write("doc-create", sent).then(function (answer) {
        if (answer.ok) {
          const url = new URL("/doc/" + encodeURIComponent(answer.ok.doc.slice(1)), location.href);
          url.searchParams.set("token", api.token);
          location.assign(url.toString());
          return;
        }
        if (!api.unanswered(answer)) pending = null;  // refused: nothing was made
        result.dataset.state = "error";
        result.textContent = answer.error.kind + ": " + answer.error.message +
          (pending ? " (press Create again: it is made once)" : "");
      });
    });
  }

  window.tanglenodeEditor = { editable: editable, presence: presence };

  document.addEventListener("DOMContentLoaded", function () {
    const api = window.tanglenode;
    const form = document.getElementById("new-doc");
    if (form && api) newDocument(form, api);
  });
})();
