"""How the node shows things to people: shared by the command line and the web view.

Theory of operation
-------------------
`tangled` (node/cli) and the web view (node/web) show the same things: feeds
by name, messages in one line, text others chose, IPC replies with their ids
as text. What both show is made here, once, so that a feed, a message or a
tangle's name reads alike in a terminal and in a page, and neither front
end imports the other:

- `text`: text others chose made safe to show (control, format and bidi
  characters as `?`; JSON with them escaped);
- `names`: `Names`, how a feed is shown (petname, `~self-chosen` name, short
  id), and the petnames file it reads;
- `render`: values as JSON-ready data (`jsonable`, `message_dict`,
  `render_body`: an IPC reply with ids as text), tags and times as text;
- `summary`: `Summaries`, a message in one line (private groups' opened
  when our keys open them);
- `digests`: a timeline digest as people compare it.

The rules of the package: it imports neither node/cli nor node/web (nor
click, the CLI's framework, nor Trio): tests/test_layering.py checks it. Each
module loads only what it needs, since every `tangled` command imports some
of them and a one-shot command's start-up is counted (docs/BENCHMARKS.md,
"Start-up"); this `__init__` imports nothing.
"""
