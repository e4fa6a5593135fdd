"""`omnisocial.io.read_table_strings`: every format gives the same strings, integers stay integers.

A FriendBench-style release codes labels and responses 1 / 0 as integers with nulls for
skipped trials; read through a float column they would become "1.0" / "0.0" and match no
mapping. Each format is written as its own tools write it (JSON by the json module, parquet
by pyarrow with int64 columns holding nulls, and by pandas from nullable columns).
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from omnisocial.io import read_table_strings, record_label, table_kind

# the release's values: string ids with zeros, numeric ids, 1 / 0 codes, nulls, a float
RECORDS = [
    {
        "rater": 17,
        "dyad_id": "fb_0007",
        "label": 1,
        "response": 1,
        "relationship": "friends",
        "p": 0.5,
        "ok": True,
    },
    {
        "rater": 18,
        "dyad_id": "fb_0008",
        "label": 0,
        "response": None,
        "relationship": "strangers",
        "p": 1.0,
        "ok": False,
    },
    {
        "rater": None,
        "dyad_id": None,
        "label": None,
        "response": 0,
        "relationship": None,
        "p": None,
        "ok": None,
    },
    {
        "rater": 2**60 + 1,
        "dyad_id": "0894",
        "label": 1,
        "response": 0,
        "relationship": "Friends",
        "p": 0.125,
        "ok": True,
    },
]
EXPECTED = pd.DataFrame(
    {
        "rater": ["17", "18", "", str(2**60 + 1)],  # beyond a float's 53 bits: exact
        "dyad_id": ["fb_0007", "fb_0008", "", "0894"],
        "label": ["1", "0", "", "1"],
        "response": ["1", "", "0", "0"],
        "relationship": ["friends", "strangers", "", "Friends"],
        "p": ["0.5", "1.0", "", "0.125"],  # a float keeps its point, as CSV would hold it
        "ok": ["True", "False", "", "True"],
    }
)
CSV_TEXT = (
    "rater,dyad_id,label,response,relationship,p,ok\n"
    "17,fb_0007,1,1,friends,0.5,True\n"
    "18,fb_0008,0,,strangers,1.0,False\n"
    ",,,0,,,\n"
    f"{2**60 + 1},0894,1,0,Friends,0.125,True\n"
)


def write_format(folder, fmt: str):
    path = folder / f"ratings.{fmt}"
    if fmt == "csv":
        path.write_text(CSV_TEXT)
    elif fmt == "tsv":
        path.write_text(CSV_TEXT.replace(",", "\t"))
    elif fmt == "json":
        path.write_text(json.dumps(RECORDS))
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS) + "\n")  # a trailing blank line
    elif fmt == "parquet":  # pyarrow, no pandas metadata: int64 columns with nulls
        table = pa.table(
            {
                "rater": pa.array([r["rater"] for r in RECORDS], pa.int64()),
                "dyad_id": pa.array([r["dyad_id"] for r in RECORDS], pa.string()),
                "label": pa.array([r["label"] for r in RECORDS], pa.int8()),
                "response": pa.array([r["response"] for r in RECORDS], pa.int64()),
                "relationship": pa.array([r["relationship"] for r in RECORDS]).dictionary_encode(),
                "p": pa.array([r["p"] for r in RECORDS], pa.float64()),
                "ok": pa.array([r["ok"] for r in RECORDS], pa.bool_()),
            }
        )
        pq.write_table(table, path)
    return path


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "jsonl", "parquet"])
def test_every_format_reads_to_the_same_strings_with_integers_kept(tmp_path, fmt):
    got = read_table_strings(write_format(tmp_path, fmt))
    pd.testing.assert_frame_equal(got.astype(object), EXPECTED.astype(object))
    assert list(got.index) == [0, 1, 2, 3]


def test_parquet_written_by_pandas_from_nullable_columns(tmp_path):
    frame = pd.DataFrame(
        {
            "rater": pd.array([17, 18, None, 2**60 + 1], dtype="Int64"),
            "dyad_id": ["fb_0007", "fb_0008", None, "0894"],
            "label": pd.array([1, 0, None, 1], dtype="Int64"),
            "response": pd.array([1, None, 0, 0], dtype="Int32"),
            "relationship": pd.Categorical(["friends", "strangers", None, "Friends"]),
            "p": [0.5, 1.0, None, 0.125],
            "ok": pd.array([True, False, None, True], dtype="boolean"),
        }
    )
    frame.to_parquet(tmp_path / "r.parquet", index=False)
    got = read_table_strings(tmp_path / "r.parquet")
    pd.testing.assert_frame_equal(got.astype(object), EXPECTED.astype(object))


def test_json_records_may_lack_keys_and_nest(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1, "b": [1, 2]}\n{"c": {"x": "é"}, "a": 2.50}\n')
    got = read_table_strings(path)
    assert got.to_dict("records") == [
        {"a": "1", "b": "[1, 2]", "c": ""},
        {"a": "2.5", "b": "", "c": '{"x": "é"}'},
    ]


def test_bad_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": 2\n')
    with pytest.raises(ValueError, match=r"r\.jsonl: line 2 is not valid JSON"):
        read_table_strings(path)
    path = tmp_path / "r.json"
    path.write_text('{"data": []}')
    with pytest.raises(ValueError, match=r"r\.json: expected a JSON list of records, got a dict"):
        read_table_strings(path)
    path.write_text('[{"a": 1}, 7]')
    with pytest.raises(ValueError, match=r"r\.json: record 2 is a JSON int, not an object"):
        read_table_strings(path)


def test_record_labels_follow_each_formats_convention():
    assert [table_kind(p) for p in ("a.CSV", "a.tsv", "a.json", "a.ndjson", "a.pq", "a.txt")] == [
        "csv",
        "tsv",
        "json",
        "jsonl",
        "parquet",
        "csv",
    ]
    assert record_label("a.csv", 0) == "row 2"  # the header is row 1, as a spreadsheet shows it
    assert record_label("a.tsv", 3) == "row 5"
    assert record_label("a.jsonl", 0) == "record 1"
    assert record_label("a.parquet", 3) == "record 4"
    assert record_label("a.json", 9) == "record 10"
