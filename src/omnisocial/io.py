"""Atomic, deterministic file writes and string-safe table reads.

Every table the workflow writes goes through `write_table`, so an interrupted job never
leaves a half-written file that looks complete, and the same data gives the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
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


def table_kind(path: str | os.PathLike) -> str:
    """The format `read_table_strings` reads `path` as: its suffix in `TABLE_FORMATS`, else csv."""
    return TABLE_FORMATS.get(Path(path).suffix.lower(), "csv")


def record_label(path: str | os.PathLike, position: int) -> str:
    """Where the table's record at 0-based `position` is, in the file's own convention.

    CSV / TSV: "row N" as a spreadsheet shows it (the header is row 1, so the first record is
    row 2); JSON, JSON lines and parquet: "record N", counting records from 1.
    """
    if table_kind(path) in ("csv", "tsv"):
        return f"row {position + 2}"
    return f"record {position + 1}"


def _text(value) -> str:
    """A JSON or parquet value as a CSV cell would hold it: ints stay ints (1 -> "1", never "1.0")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)  # "True" / "False", as pandas writes them to CSV
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)  # int: its digits; float: the shortest text that reads back (repr)


def _frame_of_records(records: list, path) -> pd.DataFrame:
    """Records (dicts) into a frame of strings, columns in first-seen order, absent keys ""."""
    columns: dict[str, None] = {}
    for position, record in enumerate(records):
        if not isinstance(record, dict):
            raise ValueError(
                f"{path}: {record_label(path, position)} is a JSON {type(record).__name__}, not an object"
            )
        columns.update(dict.fromkeys(record))
    return pd.DataFrame(
        {c: [_text(r.get(c)) for r in records] for c in columns}, index=pd.RangeIndex(len(records))
    )


def _json_records(path) -> list:
    text = Path(path).read_text(encoding="utf-8-sig")
    if table_kind(path) == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
            ) from None
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of records, got a {type(data).__name__}")
        return data
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue  # blank lines (a trailing newline) hold no record
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{path}: line {number} is not valid JSON ({error.msg}, column {error.colno})"
            ) from None
    return records


def read_table_strings(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV, TSV, JSON (records), JSON lines or parquet table with every value as a string.

    The format comes from the file's suffix (`table_kind`; anything else is read as CSV).
    Missing values become "", numbers their shortest text as the file holds them: an integer
    stays an integer when its column has nulls (JSON `1` and parquet int64 1 -> "1"), a float
    keeps its point (1.0 -> "1.0", as CSV would hold it), booleans are "True" / "False".
    JSON and parquet are read value by value (the json module, pyarrow), never through a
    float column. Rows are numbered 0.. in file order (`record_label` names them).
    Parquet needs pyarrow; without it the error says what to install.
    """
    kind = table_kind(path)
    if kind in ("csv", "tsv"):
        return read_csv_strings(path, sep="\t" if kind == "tsv" else ",")
    if kind in ("json", "jsonl"):
        return _frame_of_records(_json_records(path), path)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
    table = pq.read_table(path)
    return pd.DataFrame(
        {name: [_text(v) for v in table.column(name).to_pylist()] for name in table.column_names},
        index=pd.RangeIndex(table.num_rows),
    )


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()
