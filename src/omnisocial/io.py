"""Atomic, deterministic file writes and string-safe table reads.

Every table the workflow writes goes through `write_table`, so an interrupted job never
leaves a half-written file that looks complete, and the same data gives the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

# mkstemp creates files owner-only (0600); a finished output gets the mode a plain open()
# would give it, so collaborators on a shared folder can read results. Read once: the
# umask can only be read by setting it, which is not thread-safe.
_UMASK = os.umask(0o022)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it onto `path` only on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, FILE_MODE)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, data) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_csv(path: str | os.PathLike, frame: pd.DataFrame) -> None:
    """Write a CSV atomically with fixed float formatting and Unix line endings."""
    floats = frame.select_dtypes("float").columns
    if len(floats):
        frame = frame.copy()
        frame[floats] = frame[floats] + 0.0  # -0.0 + 0.0 == 0.0: no "-0" in tables
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, lineterminator="\n", float_format="%.10g")


def read_csv_strings(path: str | os.PathLike, **kwargs) -> pd.DataFrame:
    """Read every column as a string (ids like `0894` must keep their zeros)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False, **kwargs)


TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl",
                 ".parquet": "parquet", ".pq": "parquet"}  # fmt: skip


def read_table_strings(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV, TSV, JSON (records), JSON lines or parquet table with every value as a string.

    The format comes from the file's suffix (`TABLE_FORMATS`; anything else is read as CSV).
    Missing values become "", numbers their shortest text (1.0 -> "1.0", as CSV would hold them).
    Parquet needs pyarrow; without it the error says what to install.
    """
    kind = TABLE_FORMATS.get(Path(path).suffix.lower(), "csv")
    if kind in ("csv", "tsv"):
        return read_csv_strings(path, sep="\t" if kind == "tsv" else ",")
    if kind == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_json(path, lines=kind == "jsonl", orient="records", dtype=False, precise_float=True)
    return frame.astype(object).where(frame.notna(), "").map(str).reset_index(drop=True)


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()
