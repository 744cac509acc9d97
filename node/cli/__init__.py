"""The `tangled` command line: this module only wires the command groups, one module each.

Exit codes: 0 success; 1 internal or environment failure; 2 bad usage;
3 bad input (invalid config, content, id or message); 4 not found (no such
store, feed or message); 5 `check` found problems. Results go to stdout,
logs and error messages to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import lmdb

from tanglenode.config.settings import ConfigError
from tanglenode.node.cli.archive import export_command, import_command
from tanglenode.node.cli.daemon import connect_command, disconnect_command, peers, run, status
from tanglenode.node.cli.discover import group_list, tangles, whoami
from tanglenode.node.cli.doc_replay import doc_replay
from tanglenode.node.cli.docs import doc_command
from tanglenode.node.cli.feeds import check, feeds, forks, log_command, publish, show
from tanglenode.node.cli.groups import group_command
from tanglenode.node.cli.init import init
from tanglenode.node.cli.linearize import linearize_command
from tanglenode.node.cli.logs import configure_logging
from tanglenode.node.cli.names import about_command, name_command
from tanglenode.node.cli.support import BadInput, Context, ExitCode, NotFound, log
from tanglenode.node.cli.timelines import timeline, watch
from tanglenode.pipeline.cli import pipeline_command
from tanglenode.protocol.errors import BadIdentifier, LocalProtocolError, TanglenodeError
from tanglenode.storage.bundle import BadRecord
from tanglenode.storage.errors import OwnFeedBehind, UnknownTangle
from tanglenode.storage.linearize import BadEventLine


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", type=click.Path(path_type=Path), help="Config file (tangled.toml).")
@click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory.")
@click.pass_context
def cli(ctx: click.Context, config: Path | None, data_dir: Path | None) -> None:
    """tanglenode: signed append-only feeds, replicated peer to peer."""
    ctx.obj = Context(config, data_dir)
    try:
        settings = ctx.obj.settings
        configure_logging(settings.log_format, settings.log_level)
    except ConfigError:
        configure_logging()  # the command itself reports the config error


for command in (
    init,
    publish,
    log_command,
    show,
    feeds,
    forks,
    check,
    run,
    status,
    peers,
    connect_command,
    disconnect_command,
    export_command,
    import_command,
    pipeline_command,
    timeline,
    watch,
    group_command,
    doc_command,
    linearize_command,
    whoami,
    tangles,
    name_command,
    about_command,
):
    cli.add_command(command)
doc_command.add_command(doc_replay)
group_command.add_command(group_list)


_BAD_INPUT = (
    ConfigError,
    BadInput,
    BadIdentifier,
    BadEventLine,
    LocalProtocolError,
    UnknownTangle,
    OwnFeedBehind,
    BadRecord,
)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code."""
    try:
        result = cli.main(args=argv, prog_name="tangled", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.Abort:
        click.echo("aborted", err=True)
        return ExitCode.INTERNAL
    except click.ClickException as error:  # one line, as every other error
        where = error.ctx.command_path if isinstance(error, click.UsageError) and error.ctx else ""
        hint = f" (see {where} --help)" if where else ""
        message = " ".join(error.format_message().split())
        click.echo(f"tangled: {message}{hint}", err=True)
        return ExitCode.USAGE if isinstance(error, click.UsageError) else ExitCode.BAD_INPUT
    except _BAD_INPUT as error:
        click.echo(f"tangled: {error}", err=True)
        return ExitCode.BAD_INPUT
    except NotFound as error:
        click.echo(f"tangled: {error}", err=True)
        return ExitCode.NOT_FOUND
    except TanglenodeError as error:
        click.echo(f"tangled: {error}", err=True)
        return ExitCode.INTERNAL
    except lmdb.Error as error:  # a damaged page met while reading
        click.echo(f"tangled: the store is damaged ({error}); run `tangled check`", err=True)
        return ExitCode.INTERNAL
    except Exception:
        log.exception("internal error")
        return ExitCode.INTERNAL
    return int(result) if isinstance(result, int) else ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
