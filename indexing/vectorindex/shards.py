"""Parquet vector shards: an int64 `id` column and a fixed-size float32 `vector` column."""

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def vector_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """An (n, dim) float32 array as an Arrow fixed-size list column, without copying."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])


def vectors_of(column: pa.ChunkedArray | pa.Array, dim: int | None = None) -> np.ndarray:
    """The (n, dim) float32 matrix held by a fixed-size list column."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    size = column.type.list_size
    if dim is not None and size != dim:
        raise ValueError(f"shard vectors have {size} dimensions, expected {dim}")
    flat = column.values.to_numpy(zero_copy_only=False)
    # a sliced column shares its parent's buffer: take only this slice's values
    flat = flat[column.offset * size:(column.offset + len(column)) * size]
    return flat.astype(np.float32, copy=False).reshape(len(column), size)


ROW_GROUP = 16_384  # rows a reader decompresses at once: 48 MiB of 768-d vectors


def write_shard(path: Path, ids: np.ndarray, vectors: np.ndarray) -> Path:
    table = pa.table({"id": pa.array(np.asarray(ids, dtype=np.int64)), "vector": vector_array(vectors)})
    pq.write_table(table, path, compression="zstd", row_group_size=ROW_GROUP)
    return path


def iter_shard(path: Path, *, dim: int | None = None, rows: int = ROW_GROUP,
               id_column: str = "id") -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(ids, vectors) of one shard, a few row groups at a time, so a reader never holds a whole shard."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=rows, columns=[id_column, "vector"]):
        yield (batch.column(id_column).to_numpy().astype(np.int64, copy=False),
               vectors_of(batch.column("vector"), dim))


def read_shard(path: Path, *, dim: int | None = None, id_column: str = "id") -> tuple[np.ndarray, np.ndarray]:
    """(ids int64, vectors float32) of one shard."""
    table = pq.read_table(path, columns=[id_column, "vector"])
    return table[id_column].to_numpy().astype(np.int64, copy=False), vectors_of(table["vector"], dim)


def shard_rows(paths: Iterable[Path]) -> list[int]:
    """Row counts from the Parquet footers, without reading any vectors."""
    return [pq.ParquetFile(p).metadata.num_rows for p in paths]
