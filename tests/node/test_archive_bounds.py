"""Archives that are small on disk and huge decoded: refused from their footers, by record."""

import resource
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tanglenode.node.localnet import TANGLED
from tanglenode.pipeline.export import export
from tanglenode.protocol.wire import BadWire, split_wire, wire
from tanglenode.storage.clients.bundle import (
    BadRecord,
    ImportSummary,
    archive_parts,
    import_messages,
    read_archive,
)
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair

LIMIT = 16384
ADDRESS_SPACE = 800 * 2**20  # the import runs in this; decoding the bomb needs over 1 GiB
STORE_MAP = 64 * 2**20  # LMDB reserves its map in the address space


def _header_and_content(value: bytes) -> tuple[bytes, bytes | None]:
    """A wire form's header and content; any other bytes as a header alone."""
    try:
        return split_wire(value)
    except BadWire:
        return value, None


def write_part(archive, values: list[bytes], **options) -> None:
    """An archive's messages/ of one Parquet file: `values` in the `header` and `content`
    columns `tangled import` reads."""
    (archive / "messages").mkdir(parents=True, exist_ok=True)
    headers, contents = zip(*map(_header_and_content, values), strict=True)
    table = pa.table(
        {
            "header": pa.array(headers, type=pa.binary()),
            "content": pa.array(contents, type=pa.binary()),
        }
    )
    pq.write_table(table, archive / "messages" / "part-00000.parquet", **options)


def bomb(archive) -> None:
    """16 rows of 64 MiB of zeros: a few KiB of zstd on disk, 1 GiB once decoded."""
    write_part(archive, [b"\0" * (64 * 2**20)] * 16, compression="zstd")


def test_a_row_group_larger_than_its_rows_can_hold_is_refused_before_decoding(tmp_path):
    bomb(tmp_path / "archive")
    assert (tmp_path / "archive" / "messages" / "part-00000.parquet").stat().st_size < 8192
    records = read_archive(archive_parts(tmp_path / "archive"), LIMIT)
    with pytest.raises(BadRecord, match=r"row group 0 \(16 rows\) decodes to \d+ bytes") as no:
        next(records)
    assert no.value.record == 1


def test_a_record_over_the_size_limit_is_refused_by_number(tmp_path):
    feed = Feed("small")
    good = [feed.append(n).raw for n in range(3)]
    too_large = wire(b"\x93" * (LIMIT - 4), None)  # its header and content: one byte over
    assert len(too_large) == LIMIT + 1
    write_part(tmp_path / "archive", [*good, too_large])
    with FeedStore(tmp_path / "s", map_size=2**22) as store:
        summary = ImportSummary()
        records = read_archive(archive_parts(tmp_path / "archive"), LIMIT)
        with pytest.raises(BadRecord, match=f"{LIMIT + 1} bytes, over the message size") as no:
            import_messages(store, records, summary)
        assert no.value.record == 4 and summary.records == 3
        assert store.feeds.get_by_seq(feed.public, 3) is not None


def test_an_export_writes_row_groups_import_takes(tmp_path):
    feed = Feed("large")
    with FeedStore(tmp_path / "a", keypair=keypair("me"), map_size=2**26) as original:
        original.writes.ingest(
            [feed.append({"pad": "x" * 12_000, "n": n}).raw for n in range(3000)]
        )
        export(original, tmp_path / "archive")
    part = pq.ParquetFile(archive_parts(tmp_path / "archive")[0])
    assert part.metadata.num_row_groups > 1  # 3000 rows of 12 KB: over 16 MiB in one group
    assert sum(1 for _ in read_archive(archive_parts(tmp_path / "archive"), LIMIT)) == 3000


def _import_within(data_dir, archive) -> subprocess.CompletedProcess:
    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    return subprocess.run(
        [str(TANGLED), "--data-dir", str(data_dir), "import", str(archive)],
        preexec_fn=bounded,
        capture_output=True,
        text=True,
        env={"TANGLED_STORAGE__MAP_SIZE": str(STORE_MAP), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


@pytest.mark.slow
def test_import_of_a_decompression_bomb_exits_3_in_bounded_memory(tmp_path):
    subprocess.run([str(TANGLED), "--data-dir", str(tmp_path / "d"), "init"], check=True)
    feed = Feed("honest")
    write_part(tmp_path / "honest", [feed.append(n).raw for n in range(50)])
    honest = _import_within(tmp_path / "d", tmp_path / "honest")
    assert honest.returncode == 0, honest.stderr  # the bound leaves room for an import
    assert "50 accepted" in honest.stdout

    bomb(tmp_path / "bomb")
    refused = _import_within(tmp_path / "d", tmp_path / "bomb")
    assert refused.returncode == 3, refused.stderr
    assert refused.stderr.startswith(f"tangled: {tmp_path / 'bomb'}: record 1: ")
    assert "row group 0 (16 rows) decodes to" in refused.stderr
    assert "Traceback" not in refused.stderr
