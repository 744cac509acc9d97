"""What the `tangled` commands share: exit codes, errors, the lazy context, output, the node.

Exit codes: `EXIT_CODES` (listed by `tangled --help`).

Start-up matters here: every command imports this module, so it imports
only what a one-shot command needs (click, settings, the light parts of
protocol/). The store and the message renderer load inside the functions
that use them; commands ask the node, or the store opened here, through
node/cli/backend.py, and `log` writes its lines without structlog
(node/cli/logs.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tanglenode.config.settings import Settings, config_path, load_settings
from tanglenode.node.cli.exits import EXIT_CODES as EXIT_CODES  # re-exported for the commands
from tanglenode.node.cli.exits import ExitCode as ExitCode
from tanglenode.node.cli.logs import command_log
from tanglenode.node.ipc.oneshot import NodeError
from tanglenode.node.present.render import render_body as render_body  # the commands' name
from tanglenode.protocol.canonical import NonFiniteFloat, TooDeep, canonical_value
from tanglenode.protocol.errors import LocalProtocolError, Reason, TanglenodeError
from tanglenode.protocol.identity import parse_message_id
from tanglenode.protocol.ipc_fields import ErrorKind
from tanglenode.protocol.limits import MAX_SEQ, MAX_TANGLE_NAME_BYTES

if TYPE_CHECKING:
    from tanglenode.protocol.identity import Keypair
    from tanglenode.storage.engine.command_log import LogRetention
    from tanglenode.storage.feeds.datalock import DataDirLock
    from tanglenode.storage.store import FeedStore

log = command_log


class NotFound(TanglenodeError):
    """What the user named is not in the store."""


class BadInput(TanglenodeError):
    """What the user gave us cannot be used."""


class Ambiguous(BadInput):
    """What the user typed names several things (a short id, a name, a title): exit 3, the
    message listing them (at most a few) so the user can pick one by its id."""


class Context:
    """Global options, and the settings and store they lead to (loaded lazily)."""

    def __init__(self, config: Path | None, data_dir: Path | None) -> None:
        self.config_file = config_path(config, data_dir)
        self.data_dir_flag = data_dir
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(
                self.config_file,
                overrides={"data_dir": str(self.data_dir_flag) if self.data_dir_flag else None},
            )
        return self._settings

    def require_data_dir(self) -> Path:
        """The data directory; `NotFound` (exit 4) if there is none, as after a typo."""
        data_dir = self.settings.data_dir
        if not data_dir.is_dir():
            raise NotFound(f"{data_dir}: no data directory here; `tangled init` makes one")
        return data_dir

    def open_store(
        self,
        *,
        with_keypair: bool = False,
        keypair: Keypair | None = None,
        create: bool = False,
        choose_views: bool = False,
        retention: LogRetention | None = None,
    ) -> FeedStore:
        """The store, to read (or to write with `keypair`, or our key read from the secret
        file `with_keypair`); `NotFound` without a data directory or a store in it.

        A store opened to write (or `choose_views`) takes the config's optional views
        (`[views]`: one turned off is dropped, storage/view_choice.py); one opened to read
        keeps what it has, so a reader beside a running node never changes its views. Its
        command logs keep `[timelines] keep_commands`, or `retention`."""
        from tanglenode.config.secret import read_secret
        from tanglenode.storage.engine.command_log import LogRetention
        from tanglenode.storage.errors import StoreNotFound
        from tanglenode.storage.store import FeedStore

        self.require_data_dir()
        settings = self.settings
        if with_keypair and keypair is None:
            keypair = read_secret(settings.secret_path)
        writes = keypair is not None or create
        try:
            return FeedStore(
                settings.store_path,
                keypair=keypair,
                limits=settings.limits.to_protocol(),
                map_size=settings.storage.map_size,
                create=create,
                views=settings.views.wanted() if writes or choose_views else None,
                retention=retention or LogRetention.keeping(settings.timelines.keep_commands),
            )
        except StoreNotFound:
            raise NotFound(f"no store at {settings.store_path}; run `tangled init` first") from None

    def lock_data_dir(self, purpose: str) -> DataDirLock:
        """Hold the data directory for a write without the daemon (storage/feeds/datalock.py)."""
        from tanglenode.storage.feeds.datalock import DataDirLock

        return DataDirLock(self.require_data_dir(), purpose).acquire()


json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


# IPC error kinds (docs/IPC.md) that mean the user's input was refused: exit 3.
BAD_INPUT_KINDS = frozenset(
    {
        ErrorKind.BAD_REQUEST,
        ErrorKind.INVALID_MESSAGE,
        ErrorKind.UNKNOWN_TANGLE,
        ErrorKind.GROUP,
        ErrorKind.OWN_FEED_BEHIND,
    }
)


def translated(error: NodeError) -> TanglenodeError:
    """The CLI's error for an error reply: `NotFound` (exit 4), `BadInput` (3), else itself."""
    if error.kind in (ErrorKind.NOT_FOUND, ErrorKind.SEALED):  # as the store's own not-found is
        return NotFound(error.message)
    if error.kind in BAD_INPUT_KINDS:
        return BadInput(str(error))
    return error


# -- bounded command-line input ----------------------------------------------------------

SEQ = click.IntRange(1, MAX_SEQ)  # a feed position
COUNT = click.IntRange(1, MAX_SEQ)  # how many
INDEX = click.IntRange(0, MAX_SEQ)  # a position or version from 0


def read_content(text: str, settings: Settings) -> Any:
    """JSON CONTENT ('-': stdin, bounded) as a value a message may hold, else `BadInput`."""
    limit = settings.limits.max_message_bytes
    if text == "-":
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise BadInput(
                f"{Reason.TOO_LARGE}: content is over {limit} bytes; no message holds it"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput("content is not UTF-8 text") from None
    elif len(text.encode("utf-8", "surrogatepass")) > limit:
        raise BadInput(f"{Reason.TOO_LARGE}: content is over {limit} bytes; no message holds it")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise BadInput(f"content is not JSON: {error}") from None
    except RecursionError:
        raise BadInput("content is not JSON a message can hold: nested too deeply") from None
    except ValueError as error:  # e.g. an integer of more than 4300 digits
        raise BadInput(f"content is not JSON a message can hold: {error}") from None
    try:
        canonical_value(value, settings.limits.max_content_depth)
    except (TooDeep, NonFiniteFloat) as error:
        reason = Reason.TOO_DEEP if isinstance(error, TooDeep) else Reason.NON_FINITE_FLOAT
        raise BadInput(f"{reason}: content: {error}") from None
    except LocalProtocolError as error:  # an integer outside the int64/uint64 range
        raise BadInput(f"content: {error}") from None
    return value


def _no_constant(name: str) -> Any:
    raise BadInput(f"{Reason.NON_FINITE_FLOAT}: content: {name} is not a finite number")


def tangle_name(name: str) -> str:
    if not name or len(name.encode("utf-8", "surrogatepass")) > MAX_TANGLE_NAME_BYTES:
        raise BadInput(f"a tangle name is 1 to {MAX_TANGLE_NAME_BYTES} bytes of text")
    return name


def parse_timeline(
    spec: str | None, spacetime: bool, root_id: Callable[[str], bytes] = parse_message_id
) -> tuple[str, bytes] | None:
    """NAME/ROOT as (tangle name, root id); None for --spacetime. Exactly one is given.
    `root_id` reads ROOT (node/cli/lookup.py's `message_arg` takes an id cut short too)."""
    if spacetime == bool(spec):
        raise click.UsageError("name one timeline: NAME/ROOT or --spacetime")
    if spacetime:
        return None
    name, _sep, root = spec.rpartition("/")  # type: ignore[union-attr]  # ids never hold "/"
    if not name:
        raise BadInput(f"{spec[:80]!r}: expected NAME/ROOT, e.g. chat/%AbC...")
    return tangle_name(name), root_id(root)


def timeline_spec(
    spec: str | None,
    spacetime: bool,
    joined: bool = False,
    order: str = "rank",
    root_id: Callable[[str], bytes] = parse_message_id,
) -> dict[str, Any]:
    """The timeline named on the command line, as the IPC requests name it."""
    parsed = parse_timeline(spec, spacetime, root_id)
    if parsed is None:
        if joined:
            raise BadInput("--joined is a tangle's view; the spacetime has no pending members")
        return {"spacetime": True, "order": order}
    if joined and order != "rank":
        raise BadInput("the joined view comes in rank order: drop --order or --joined")
    name, root = parsed
    return {"tangle": name, "root": root, "view": "joined" if joined else "all", "order": order}


ORDER_OPTION = click.option(
    "--order",
    type=click.Choice(["rank", "causal-time"]),
    default="rank",
    show_default=True,
    help="rank: ScuttleSort's (rank, id); causal-time: causality, then claimed time, then id.",
)
JOINED_OPTION = click.option(
    "--joined",
    is_flag=True,
    help="Only messages joined to the tangle's root (all their previous present, transitively).",
)
