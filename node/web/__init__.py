"""The web view and `/metrics`, served by the node when `web.listen` is set.

One module per job: `app` (the ASGI app: token, routes, responses, and
`serve_web`), `http` (what a handler gets and gives), `token` (the
access token's file), `status_page` (`/`),
`metrics` (`/metrics`), `tangles` (`/tangles`, `/t/NAME/ROOT` and its event
stream), `docs`, `doc_events` and `doc_text` (`/docs`, `/doc/ROOT` and its
stream), `groups` (`/groups`, `/groups/ROOT`), `page` (the HTML
shell and escaping every page shares), `events` (server-sent events) and
`view.js`, the one script the pages run. Light on purpose: `token` is
imported by the CLI, so nothing heavy is imported here.
"""
