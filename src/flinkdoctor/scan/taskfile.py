"""A scan task's own Parquet file (its events, its measured rows), written whole or not at all.

The file is written under a name Spark and the driver skip (`_`) and renamed when whole, so a task Spark retries
replaces it and a failed one leaves nothing a reader would take. Tables are gathered into row groups of about
`row_group_bytes`: a task over thousands of small files would otherwise write thousands of tiny row groups.

A short column whose values are nearly all distinct (a line number, a time, an epoch) is written without a
dictionary (`plain`): Parquet's writer would otherwise hash a row group's values into a dictionary until its page is
full, most or all of them when they are short, which was a third of writing a production JobManager part's events
(the values read back the same). A long text keeps its dictionary: its page fills after a few thousand distinct
texts, and where texts repeat (a warning's message) it makes the file smaller.

A column no reader filters on by its values (a text, a nested list, every column of the measured rows, which the
driver reads whole) is written without statistics (`unstated`): their minimum and maximum cost a tenth of writing
a production JobManager part's events. Spark's filters on the events table (its level, its source) keep theirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq


def filesystem_of(path: str) -> tuple[pafs.FileSystem, str]:
    """(pyarrow file system, path in it) for a local path or a URI."""
    from pyarrow import fs

    if "://" in path:
        filesystem, inner = fs.FileSystem.from_uri(path)
        return filesystem, inner
    return fs.LocalFileSystem(), path


def null_where(values: pa.Array, flags: npt.NDArray[np.bool_]) -> pa.Array:
    """The array with the rows of `flags` null: its own buffers under a new validity bitmap (Arrow's if_else
    copies every value, a JobManager part's lines tens of MB)."""
    import numpy as np
    import pyarrow as pa

    valid = values.is_valid().to_numpy(zero_copy_only=False) & ~flags
    bits = np.packbits(np.concatenate([np.zeros(values.offset, dtype=bool), valid]), bitorder="little")
    return pa.Array.from_buffers(
        values.type, len(values), [pa.py_buffer(bits), *values.buffers()[1:]], offset=values.offset
    )


def leaf_paths(schema: pa.Schema) -> list[str]:
    """Each leaf column's path as Parquet names it (`measures.list.element.line`), in the schema's order."""
    import pyarrow as pa

    def paths(name: str, kind: pa.DataType) -> list[str]:
        if pa.types.is_map(kind):
            return paths(f"{name}.key_value.key", kind.key_type) + paths(f"{name}.key_value.value", kind.item_type)
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return paths(f"{name}.list.element", kind.value_type)
        if pa.types.is_struct(kind):
            return [path for child in kind for path in paths(f"{name}.{child.name}", child.type)]
        return [name]

    return [path for column in schema for path in paths(column.name, column.type)]


Written = TypeVar("Written", bound="TaskFile")


class TaskFile:
    """One task's `part-<task>.parquet` under `out_dir`; `metadata` is written in its footer when it is closed."""

    def __init__(
        self,
        out_dir: str,
        task: int,
        row_group_bytes: int,
        plain: frozenset[str] = frozenset(),
        unstated: frozenset[str] | None = frozenset(),
    ):
        self.filesystem, directory = filesystem_of(out_dir)
        self.plain = plain  # the columns' paths (leaf_paths) written without a dictionary
        self.unstated = unstated  # the (top-level) columns written without statistics; None: all of them
        self.final = f"{directory}/part-{task:05d}.parquet"
        self.temporary = f"{directory}/_part-{task:05d}.parquet.tmp"
        self.row_group_bytes = row_group_bytes
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[pa.Table] = []
        self.pending_bytes = 0
        self.metadata: dict[bytes, bytes] = {}

    def write_table(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        self.pending.append(table)
        self.pending_bytes += table.nbytes
        if self.pending_bytes >= self.row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.pending:
            return
        table = pa.concat_tables(self.pending)
        if self.writer is None:
            paths = leaf_paths(table.schema)
            dictionary = [path for path in paths if path not in self.plain]
            stated = [path for path in paths if self.unstated is not None and path.split(".")[0] not in self.unstated]
            self.writer = pq.ParquetWriter(
                self.temporary,
                table.schema,
                filesystem=self.filesystem,
                compression="lz4",
                use_dictionary=dictionary,
                write_statistics=stated,
            )
        self.writer.write_table(table, row_group_size=len(table))
        self.pending, self.pending_bytes = [], 0

    def __enter__(self: Written) -> Written:
        return self

    def __exit__(self, failed: type[BaseException] | None, *_: object) -> Literal[False]:
        if failed is None:
            self._flush()
        if self.writer is not None:
            if self.metadata:
                self.writer.add_key_value_metadata(self.metadata)
            self.writer.close()
            if failed is None:
                self.filesystem.move(self.temporary, self.final)
        return False
