"""The `tangled` command line: one table of commands, each loaded only when it is used.

`COMMANDS` maps a command's path (`"publish"`, `"doc replay"`) to where it
is defined (`"module:attribute"`, a leading "." meaning this package) and,
for a top-level command, the summary `tangled --help` lists (the first
paragraph of its help; tests/node/test_cli_shell.py checks they agree).
Adding a command is one row. `tangled --help` prints the summaries without
importing any command's module; `tangled NAME` imports NAME's module only,
and a group's module brings in its subcommands' rows when it loads. So a
command costs the start-up of what it uses (docs/BENCHMARKS.md, "Start-up"),
not of every command.

Exit codes: `exits.EXIT_CODES`, listed at the end of `tangled --help`.
Results go to stdout, logs and error messages to stderr.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click

from tanglenode.node.cli.exits import EXIT_CODES, ExitCode, Interrupted

# path: (module:attribute, summary for `tangled --help` -- top-level commands only)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (".init:init", "Write a config and a new keypair, create the store, print the feed id."),  # noqa: E501
    "publish": (".feeds:publish", "Sign and publish a message whose CONTENT is JSON ('-' reads stdin), through the node."),  # noqa: E501
    "log": (".feeds:log_command", "List FEED's messages (default: our own feed); --json gives JSON lines."),  # noqa: E501
    "show": (".feeds:show", "Print the message MESSAGE_ID: who wrote it, when, what it says, then its fields."),  # noqa: E501
    "feeds": (".feeds:feeds", "List the feeds in the store: our own marked, names, head seq, where invalid ones end."),  # noqa: E501
    "forks": (".feeds:forks", "List the evidence held: fork proofs (two messages at one seq), then suspected forks (one seq named with two tags)."),  # noqa: E501
    "check": (".feeds:check", "Re-verify every stored message and every index."),
    "compact": (".maintenance:compact_command", "Give the store's free pages back to the disk (a copy of its rows, checked, then renamed over the old file); the node must be stopped."),  # noqa: E501
    "reindex": (".maintenance:reindex_command", "Rebuild the derived VIEWS (default: every view the node keeps) from the stored messages; the node must be stopped."),  # noqa: E501
    "run": (".daemon:run", "Run the node: peers, gossip and the IPC socket, until SIGTERM or SIGINT."),  # noqa: E501
    "status": (".daemon:status", "The running node's feed, counts, finality, peers and each timeline's digest."),  # noqa: E501
    "peers": (".daemon:peers", "The running node's peers: where we reach each, its state, its last error and when."),  # noqa: E501
    "disconnect": (".daemon:disconnect_command", "Make the running node stop dialing the peer FEED_ID and close its connections."),  # noqa: E501
    "whoami": (".discover:whoami", "Our feed id, data directory, config file and whether the node runs (stopped or not)."),  # noqa: E501
    "tangles": (".discover:tangles", "The tangles held: name/root, messages, joined and pending members, last activity."),  # noqa: E501
    "name": (".names:name_command", "Give @FEED a petname NAME (kept only here), show its names, or list every name."),  # noqa: E501
    "about": (".names:about_command", "Publish an `about` message naming our own feed NAME, through the node."),  # noqa: E501
    "group list": (".discover:group_list", ""),
    "follow": (".scope:follow_command", "Follow FEED (@id, ~name or a petname): the node carries it, and those it follows within [replication] hops."),  # noqa: E501
    "unfollow": (".scope:unfollow_command", "Stop following FEED: the node no longer carries it unless another path reaches it."),  # noqa: E501
    "block": (".scope:block_command", "Block FEED: the node neither asks for, stores nor serves it, whoever follows it."),  # noqa: E501
    "unblock": (".scope:unblock_command", "Take back a block of FEED (it is not followed again by this)."),  # noqa: E501
    "scope": (".scope:scope_command", "The feeds carried and why (ours, followed, hop N, a group's), the blocked, the left out."),  # noqa: E501
    "delete": (".erase:delete_command", "Erase our message MSG on every node: its content goes, its header (and links) stay."),  # noqa: E501
    "purge": (".erase:purge_command", "Drop the contents of MSG... here only (headers stay); `tangled compact` frees the space."),  # noqa: E501
    "invite": (".invite:invite_command", "Invites: create a code for someone to join this node, use one, list, revoke."),  # noqa: E501
    "connect": (".daemon:connect_command", "Make the running node dial the peer FEED_ID at HOST:PORT (and keep redialing it)."),  # noqa: E501
    "export": (".archive:export_command", "Write the store as a Parquet archive or a bundle, even while the node runs."),  # noqa: E501
    "import": (".archive:import_command", "Ingest PATH, a bundle ('-': stdin) or an archive; the node must be stopped."),  # noqa: E501
    "pipeline": ("tanglenode.pipeline.cli:pipeline_command", "Run JOB over the archives and write its result under OUT as Parquet."),  # noqa: E501
    "timeline": (".timelines:timeline", "Print a tangle's timeline (NAME/ROOT) or the spacetime: order, position or commands."),  # noqa: E501
    "watch": (".timelines:watch", "Follow NAME/ROOT (or --spacetime) live: its snapshot, or the commands after VERSION, then each change."),  # noqa: E501
    "group": (".groups:group_command", "Private groups: create, add, exclude, post, members, epochs, timeline."),  # noqa: E501
    "doc": (".docs:doc_command", "Text documents: create, edit, insert, delete, show, log, diff, blame, watch, list, link, resolve, comment, include, export, import."),  # noqa: E501
    "doc replay": (".doc_replay:doc_replay", ""),
    "doc export": (".doc_weave:doc_export", ""),
    "doc import": (".doc_weave:doc_import", ""),
    "sim": (".sim:sim_command", "Simulate NODES real nodes (each its own store) gossiping on virtual time, and report."),  # noqa: E501
    "linearize": (".linearize:linearize_command", "Linearize JSON-lines events {\"id\", \"after\"|\"links\", \"time\"} from FILE or stdin."),  # noqa: E501
}  # fmt: skip


def load_command(path: str) -> click.Command:
    """The command at `path` in `COMMANDS`, imported, with its subcommands' rows attached."""
    where, _summary = COMMANDS[path]
    module_name, _sep, attribute = where.partition(":")
    if module_name.startswith("."):
        module_name = __name__ + module_name
    command = getattr(importlib.import_module(module_name), attribute)
    if isinstance(command, click.Group):
        for child in COMMANDS:
            parent, _sep, name = child.rpartition(" ")
            if parent == path and name not in command.commands:
                command.add_command(load_command(child), name)
    return command


def _epilog() -> str:
    codes = "\n".join(f"  {int(code)}  {meaning}" for code, meaning in EXIT_CODES.items())
    return (
        "\b\nExit codes:\n" + codes + "\n\n"
        "Each command's own help: tangled COMMAND --help. Shell completion: see README.md."
    )


class CommandTable(click.Group):
    """A group whose commands are the top-level rows of `COMMANDS`, loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *(path for path in COMMANDS if " " not in path)})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and " " not in name and name in COMMANDS:
            self.add_command(load_command(name), name)
        return self.commands.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, from the summaries: `tangled --help` imports no command."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            command = self.commands.get(name) or click.Command(name, help=COMMANDS[name][1])
            rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=CommandTable, epilog=_epilog(), context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    help="Config file (default: $TANGLED_CONFIG, else DATA_DIR/tangled.toml).",
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    help="Data directory (default: $TANGLED_DATA_DIR, else $XDG_DATA_HOME/tangled, "
    "~/.local/share/tangled when that is unset).",
)
@click.version_option(
    None, "-V", "--version", package_name="tanglenode", message="%(prog)s %(version)s"
)
@click.pass_context
def cli(ctx: click.Context, config: Path | None, data_dir: Path | None) -> None:
    """tanglenode: signed append-only feeds, replicated peer to peer."""
    from tanglenode.config.settings import ConfigError
    from tanglenode.node.cli.logs import configure_logging_on_import
    from tanglenode.node.cli.support import Context, log

    ctx.obj = Context(config, data_dir)
    try:
        settings = ctx.obj.settings
        log_format, level = settings.log_format, settings.log_level
    except ConfigError:
        log_format, level = "auto", "info"  # the command itself reports the config error
    log.configure(log_format, level)
    configure_logging_on_import(log_format, level)  # for modules that log through structlog


# Errors by class, looked up only among modules already imported: an error of a class
# whose module never loaded cannot have been raised, and this keeps main() light.
_BAD_INPUT = (
    "tanglenode.config.settings:ConfigError",
    "tanglenode.node.cli.support:BadInput",
    "tanglenode.protocol.errors:BadIdentifier",
    "tanglenode.storage.engine.linearize:BadEventLine",
    "tanglenode.protocol.errors:LocalProtocolError",
    "tanglenode.storage.errors:UnknownTangle",
    "tanglenode.storage.errors:OwnFeedBehind",
    "tanglenode.storage.clients.bundle:BadRecord",
)


def _loaded(names: tuple[str, ...]) -> tuple[type, ...]:
    classes = []
    for name in names:
        module, _sep, attribute = name.partition(":")
        if module in sys.modules:
            classes.append(getattr(sys.modules[module], attribute))
    return tuple(classes)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code."""
    try:
        result = cli.main(args=argv, prog_name="tangled", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.Abort as error:  # click's word for a ^C (KeyboardInterrupt) or an EOF
        if isinstance(error.__cause__, KeyboardInterrupt):
            click.echo("tangled: interrupted", err=True)
            return ExitCode.INTERRUPTED
        click.echo("aborted", err=True)
        return ExitCode.INTERNAL
    except Interrupted as error:  # a ^C the command caught, to say what it had done
        _say(error)
        return ExitCode.INTERRUPTED
    except click.exceptions.NoArgsIsHelpError as error:  # `tangled`, `tangled group`: the help
        click.echo(error.ctx.get_help() if error.ctx else error.format_message())
        return ExitCode.USAGE
    except click.ClickException as error:  # one line, as every other error
        where = error.ctx.command_path if isinstance(error, click.UsageError) and error.ctx else ""
        hint = f" (see {where} --help)" if where else ""
        from tanglenode.node.present.text import safe  # an argument may hold escapes

        message = " ".join(error.format_message().split())
        click.echo(f"tangled: {safe(message)}{hint}", err=True)
        return ExitCode.USAGE if isinstance(error, click.UsageError) else ExitCode.BAD_INPUT
    except Exception as error:
        return _report(error)
    return int(result) if isinstance(result, int) else ExitCode.OK


def _report(error: Exception) -> int:
    """The message (or, for a bug, the logged traceback) and exit code for `error`."""
    from tanglenode.node.cli.support import NotFound, log
    from tanglenode.protocol.errors import TanglenodeError

    if isinstance(error, _loaded(_BAD_INPUT)):
        _say(error)
        return ExitCode.BAD_INPUT
    if isinstance(error, NotFound):
        _say(error)
        return ExitCode.NOT_FOUND
    if isinstance(error, TanglenodeError):
        _say(error)
        return ExitCode.INTERNAL
    lmdb: Any = sys.modules.get("lmdb")
    if lmdb is not None and isinstance(error, lmdb.Error):  # a damaged page met while reading
        click.echo(f"tangled: the store is damaged ({error}); run `tangled check`", err=True)
        return ExitCode.INTERNAL
    log.exception("internal error")  # called while main() handles `error`
    return ExitCode.INTERNAL


def _say(error: Exception) -> None:
    """`tangled: MESSAGE` on stderr. A message of several lines (an invalid configuration
    names each bad key on a line of its own) keeps them, each made safe for a terminal:
    a message may quote names others chose."""
    from tanglenode.node.present.text import safe

    first, *more = str(error).split("\n")
    click.echo("\n".join(safe(line) for line in (f"tangled: {first}", *more)), err=True)


if __name__ == "__main__":
    sys.exit(main())
