"""Names for feeds: petnames we choose, names feeds choose for themselves, and `tangled name`,
`tangled about`.

Theory of operation
-------------------
How a feed is shown (its petname, else its `~self-chosen` name, else its
short id) and how the petnames file is read are node/present/names.py's,
shared with the web view. This module is the CLI's side: it loads the
names for a command (`load_names`, `lazy_label`; `--json` output carries
ids, never names, so it never reads the petnames file), and it writes the
file (`tangled name`): whole to a temporary file renamed over the old one,
under an advisory lock so two `tangled name` runs never lose each other's
change. A view that finds the file damaged warns once on stderr and shows
feeds without petnames; `tangled name`, which rewrites the file, refuses it
(exit 3) and says how to repair it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from tanglenode.node.cli.lookup import feed_arg, petnames_path, read_petnames
from tanglenode.node.cli.support import (
    BadInput,
    Context,
    NotFound,
    emit_json,
    json_option,
)
from tanglenode.node.present.names import (  # re-exported: the names commands and tests use
    MAX_FILE_BYTES as MAX_FILE_BYTES,
)
from tanglenode.node.present.names import (
    MAX_PETNAMES,
    SELF_CHOSEN,
    Names,
    short_feed,
)
from tanglenode.node.present.names import SHORT_ID_CHARS as SHORT_ID_CHARS
from tanglenode.node.present.text import safe
from tanglenode.protocol import json_depth
from tanglenode.protocol.errors import BadIdentifier, TanglenodeError
from tanglenode.protocol.identity import feed_text, parse_feed
from tanglenode.storage.views.abouts import MAX_NAME_CHARS, clean_name

_RESERVED_STARTS = ("~", "@", "%")


class PetnamesUnwritable(TanglenodeError):
    """The petnames file cannot be written (permissions, a full disk): exit 1."""


def our_feed(obj: Context) -> bytes | None:
    """Our feed from the secret file's public part (no key is derived), or None."""
    try:
        text = obj.settings.secret_path.read_text()[:4096]
        return parse_feed(json_depth.loads(text)["public"])
    except (OSError, ValueError, KeyError, TypeError, BadIdentifier):
        return None


def load_names(obj: Context, store: Any = None, *, strict: bool = False) -> Names:
    """Petnames, the store's self-chosen names and our feed; `store` if one is open already.

    Works with the node running or stopped; with no store yet, only petnames. A damaged
    petnames file is `BadInput` when `strict` (`tangled name`); else a warning on
    stderr (once) and no petnames.
    """
    abouts: dict[bytes, str] = {}
    if store is not None:
        abouts = store.feeds.about_names()
    elif (obj.settings.store_path / "data.mdb").exists():
        with obj.open_store() as opened:
            abouts = opened.feeds.about_names()
    try:
        petnames = read_petnames(petnames_path(obj))
    except BadInput as error:
        if strict:
            raise
        _warn_once(f"tangled: warning: {error}; showing feeds without petnames")
        petnames = {}
    return Names(petnames, abouts, our_feed(obj))


def ids_only(obj: Context) -> Names:
    """Names for `--json` output, which shows ids: only our feed, no file read."""
    return Names(ours=our_feed(obj))


_warned: set[str] = set()


def _warn_once(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        sys.stderr.write(text + "\n")


def lazy_label(obj: Context, *, whole_ids: bool = False) -> Callable[[bytes], str]:
    """`load_names(obj).label`, loading the names only when a feed is first shown.

    With `whole_ids` (where an id is copied into the next command, as from
    `status`), a named feed is `name (@AbCdEfGh…)` and an unnamed one its whole id.
    """
    loaded: list[Names] = []

    def label(feed: bytes) -> str:
        if not loaded:
            loaded.append(load_names(obj))
        if not whole_ids:
            return loaded[0].label(feed)
        name = loaded[0].name(feed)
        return f"{name} ({short_feed(feed)})" if name else feed_text(feed)

    return label


# -- the petnames file ----------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl  # only a change to the petnames loads it, not a view

    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _write_petnames(path: Path, names: dict[bytes, str]) -> None:
    import tempfile  # only a change to the petnames loads it, not a view

    document = {"version": 1, "names": {feed_text(f): n for f, n in sorted(names.items())}}
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".petnames-")
    try:
        with os.fdopen(fd, "w") as file:
            json.dump(document, file, ensure_ascii=False, indent=1)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def checked_name(text: str, what: str = "a name") -> str:
    """`text` if it is a name as given (printable, one line, bounded), else `BadInput`."""
    name = clean_name(text)
    if not name or name != text:
        raise BadInput(
            f"{what} is 1 to {MAX_NAME_CHARS} printable characters on one line, "
            "without leading or trailing spaces"
        )
    return name


def checked_petname(text: str) -> str:
    """A petname as given, refused if it could pass for an id or a self-chosen name."""
    name = checked_name(text, "a petname")
    if name.startswith(_RESERVED_STARTS):
        raise BadInput("a petname may not start with ~, @ or % (ids and self-chosen names do)")
    return name


def change_petname(obj: Context, feed: bytes, name: str | None) -> None:
    """Set (or with None, clear) our petname for `feed`."""
    obj.require_data_dir()
    path = petnames_path(obj)
    try:
        with _locked(path):
            names = read_petnames(path)
            if name is None:
                names.pop(feed, None)
            else:
                if feed not in names and len(names) >= MAX_PETNAMES:
                    raise BadInput(f"at most {MAX_PETNAMES} petnames; clear some first")
                names[feed] = name
            _write_petnames(path, names)
    except OSError as error:
        raise PetnamesUnwritable(f"{path}: cannot write the petnames: {error.strerror}") from None


# -- commands ---------------------------------------------------------------------------


@click.command("name")
@click.argument("feed", required=False, metavar="[@FEED]")
@click.argument("name", required=False)
@click.option("--clear", is_flag=True, help="Forget our petname for @FEED.")
@json_option
@click.pass_obj
def name_command(
    obj: Context, feed: str | None, name: str | None, clear: bool, as_json: bool
) -> None:
    """Give @FEED a petname NAME (kept only here), show its names, or list every name.

    Without arguments, every feed that has a petname or named itself; a petname
    is shown as is, a name a feed chose itself as ~name. @FEED may also be ~NAME,
    a petname, or enough of an id's start to be the only one. Works whether the
    node runs or not.
    """
    obj.require_data_dir()
    if feed is None:
        if clear or name is not None:
            raise click.UsageError("--clear and NAME need a @FEED")
        names = load_names(obj, strict=True)
        for author in sorted(set(names.petnames) | set(names.abouts)):
            _echo_names(names, author, as_json)
        return
    author = feed_arg(obj, feed)
    if clear and name is not None:
        raise click.UsageError("give NAME or --clear, not both")
    if clear or name is not None:
        change_petname(obj, author, None if clear else checked_petname(name or ""))
    names = load_names(obj, strict=True)
    _echo_names(names, author, as_json)


def _echo_names(names: Names, feed: bytes, as_json: bool) -> None:
    petname, about = names.petnames.get(feed), names.abouts.get(feed)
    if as_json:
        emit_json({"feed": feed_text(feed), "petname": petname, "about": about})
        return
    shown = [petname or ""]
    if about:
        shown.append(SELF_CHOSEN + about)
    click.echo(safe(f"{feed_text(feed)}  {'  '.join(part for part in shown if part) or '-'}"))


@click.command("about")
@click.argument("name")
@json_option
@click.pass_obj
def about_command(obj: Context, name: str, as_json: bool) -> None:
    """Publish an `about` message naming our own feed NAME, through the node.

    Peers show the name as ~NAME (a name a feed chose itself) unless they gave
    our feed a petname; the latest `about` wins.
    """
    from tanglenode.node.cli.backend import publish_content

    obj.require_data_dir()
    me = our_feed(obj)
    if me is None:
        raise NotFound(f"no secret key at {obj.settings.secret_path}; run `tangled init` first")
    content = {"type": "about", "about": feed_text(me), "name": checked_name(name)}
    body = publish_content(obj, content, {})
    if as_json:
        emit_json(body)
    else:
        click.echo(body["id"])
