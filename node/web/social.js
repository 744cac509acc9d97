// The home, thread and group pages' script (node/web/home.py, thread.py, groups.py):
// starting a conversation, a thread kept live, groups made and managed.
// Every write is `POST /api/OP` with the token in a header and a `once` key
// (node/web/actions.py; docs/IPC.md, "Writes done once"); everything shown is
// built from text (`textContent`), never from HTML.
(function () {
  "use strict";

  const TOKEN = new URLSearchParams(window.location.search).get("token") || "";

  // POST /api/OP with `body`; resolves to the node's answer, `{ok}` or `{error}`.
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

  function onceKey() {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  function link(path) {
    return path + "?token=" + encodeURIComponent(TOKEN);
  }

  function show(output, answer, done) {
    if (answer.error) {
      output.dataset.state = "error";
      output.textContent = answer.error.kind + ": " + answer.error.message;
    } else {
      output.dataset.state = "sent";
      output.textContent = done;
    }
  }

  // A form whose submit sends one write, done once: sent again after no answer (the
  // connection failed), the same request keeps its key. `request()` gives [op, body]
  // (null: nothing to send); `done(ok)` follows a success.
  function onceForm(form, request, done) {
    const result = form.querySelector(".result");
    const button = form.querySelector("button[type=submit]");
    let pending = null;  // {shape, once}
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const asked = request();
      if (!asked) return;
      const op = asked[0];
      const body = asked[1];
      const shape = op + JSON.stringify(body);
      if (pending === null || pending.shape !== shape) pending = { shape: shape, once: onceKey() };
      body.once = pending.once;
      if (button) button.disabled = true;
      result.dataset.state = "sending";
      result.textContent = "sending";
      write(op, body).then(function (answer) {
        if (button) button.disabled = false;
        const lost = answer.error &&
          (answer.error.kind === "disconnected" || answer.error.kind === "http");
        if (!lost) pending = null;
        show(result, answer, "done");
        if (!answer.error) done(answer.ok);
      });
    });
  }

  // ------------------------------------------------------------ home: a new conversation

  function newThread(form) {
    const text = form.elements.namedItem("text");
    const name = form.dataset.tangle;
    onceForm(form, function () {
      if (!text.value.trim()) return null;
      const tangles = {};
      tangles[name] = null;
      return ["publish", { content: { type: "post", text: text.value }, tangles: tangles }];
    }, function (ok) {
      window.location.assign(link("/thread/" + encodeURIComponent(name) + "/" +
        encodeURIComponent(ok.id.slice(1))));
    });
  }

  // ------------------------------------------------------------ a thread, live

  // The tangle's stream (tangles.py; on a group's page, its `group` tangle's): a change
  // of its timeline draws the page again, once the box is empty (what is being typed is
  // never lost).
  function threadView(list) {
    const url = new URL(list.dataset.threadEvents, window.location.href);
    url.searchParams.set("since", list.dataset.version);
    const box = document.querySelector("form.compose textarea");
    let changed = false;
    let source = null;

    function redraw() {
      if (box && box.value !== "") {
        window.setTimeout(redraw, 500);
        return;
      }
      if (source) source.close();
      window.location.reload();
    }

    function open() {
      source = new EventSource(url);
      function change() {
        if (!changed) {
          changed = true;
          redraw();
        }
      }
      source.addEventListener("commands", change);
      source.addEventListener("states", change);  // a post waiting for another joined
      source.addEventListener("reset", change);
      source.addEventListener("failed", function () { source.close(); });
      source.addEventListener("error", function () {
        if (source.readyState === EventSource.CLOSED) window.setTimeout(open, 2000);
      });
    }
    open();

    // A delete button on one of our posts (thread.py): its content erased on every node,
    // after asking; the post then says so (it keeps its place in the thread).
    list.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-erase]");
      if (!button) return;
      const post = button.closest("li.post");
      if (!window.confirm("Erase this post's content on every node? This cannot be undone.")) {
        return;
      }
      button.disabled = true;
      write("delete", { message: post.dataset.id, once: onceKey() }).then(function (answer) {
        if (answer.error) {
          button.disabled = false;
          button.title = answer.error.kind + ": " + answer.error.message;
          return;
        }
        post.querySelector(".text").textContent = "(erased)";
        button.remove();
      });
    });
  }

  // ------------------------------------------------------------ groups

  function groupCreate(form) {
    const name = form.elements.namedItem("name");
    onceForm(form, function () {
      if (!name.value.trim()) return null;
      return ["group-create", { name: name.value }];
    }, function (ok) {
      window.location.assign(link("/groups/" + encodeURIComponent(ok.group.slice(1))));
    });
  }

  function groupAdd(form) {
    const member = form.elements.namedItem("member");
    onceForm(form, function () {
      const feed = member.value.trim();
      if (!feed) return null;
      return ["group-add", { group: form.dataset.group, members: [feed] }];
    }, function () { window.location.reload(); });
  }

  function groupExclude(list) {
    const result = document.getElementById("members-result");
    list.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-exclude]");
      if (!button) return;
      const who = button.dataset.name;
      if (!window.confirm("Exclude " + who + "? The group moves to a new key they do not get."))
        return;
      button.disabled = true;
      // One key per member's button until an answer comes: a click again after a lost
      // answer (no connection) sends the same request, which the node carries out once.
      if (!button.dataset.once) button.dataset.once = onceKey();
      const body = {
        group: list.dataset.group, members: [button.dataset.exclude], once: button.dataset.once,
      };
      write("group-exclude", body).then(function (answer) {
        button.disabled = false;
        const lost = answer.error &&
          (answer.error.kind === "disconnected" || answer.error.kind === "http");
        if (!lost) delete button.dataset.once;
        show(result, answer, who + " excluded");
        if (!answer.error) window.location.reload();
      });
    });
  }

  // ------------------------------------------------------------ start

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form.new-thread").forEach(newThread);
    const posts = document.querySelector("[data-thread-events]");
    if (posts) threadView(posts);
    document.querySelectorAll("form.group-create").forEach(groupCreate);
    document.querySelectorAll("form.group-add").forEach(groupAdd);
    const members = document.querySelector("#members[data-group]");
    if (members) groupExclude(members);
  });
})();
