"""Seamless Interaction ingest on small hand-built corpora in the real layout."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, SPEECH
from omnisocial.familiarity.corpus.seamless import ingest
from omnisocial.familiarity.corpus.seamless.files import CorpusError, parse_file_id, parse_participant_json

LABEL = "naturalistic"
FOLDER = ("train", "0000", "0000")


def transcript(offset: float, words: tuple[str, ...] = ("would", "you", "rather")) -> list[dict]:
    return [
        {
            "start": offset,
            "end": offset + 1.5,
            "transcript": " ".join(words),
            "words": [
                {"word": w, "start": offset + 0.5 * i, "end": offset + 0.5 * i + 0.4, "score": 0.9}
                for i, w in enumerate(words)
            ],
        },
        {"start": offset + 3.0, "end": offset + 4.0, "transcript": "sure", "words": []},
    ]


def payload(file_id: str, offset: float = 0.0, with_transcript: bool = True) -> dict:
    data = {
        "id": file_id,
        "metadata:vad": [{"start": offset, "end": offset + 1.5}, [offset + 3.0, offset + 4.0]],
    }
    if with_transcript:
        data["metadata:transcript"] = transcript(offset)
    return data


def add_participant(
    root: Path,
    file_id: str,
    folder: tuple[str, str, str] = FOLDER,
    data: dict | None = None,
    json_text: str | None = None,
    json_suffix: str = ".json",
    wav: bool = True,
    mp4: bool = True,
) -> Path:
    directory = root / LABEL / Path(*folder)
    directory.mkdir(parents=True, exist_ok=True)
    if wav:
        sf.write(directory / f"{file_id}.wav", np.zeros(1600, dtype=np.float32), 16000, subtype="PCM_16")
    if mp4:
        (directory / f"{file_id}.mp4").write_bytes(b"not a real video; ingest only checks existence")
    text = json_text if json_text is not None else json.dumps(data if data is not None else payload(file_id))
    (directory / f"{file_id}{json_suffix}").write_text(text, encoding="utf-8")
    return directory


def write_tables(root: Path, genders: bool = True) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "interactions.csv").write_text(
        ",prompt_hash,prompt_id_unique,participant_a_prompt_text,participant_b_prompt_text,ipc_a,ipc_b,"
        "interaction_type\n"
        '0,00000042,P_EO_001,"Would you rather fly, or be invisible?",Same prompt,1,2,naturalistic\n'
        "1,00000043,P_OPEN_002,Tell me about your week,Same prompt,1,2,naturalistic\n",
        encoding="utf-8",
    )
    # vendor spelled both ways (`V00`, `01`), session ids with leading zeros.
    (root / "relationships.csv").write_text(
        "vendor_id,session_id,relationship,relationship_detail\n"
        "V00,0894,familiar,friends\n"
        "01,0012,stranger,\n",
        encoding="utf-8",
    )
    (root / "participants.csv").write_text(
        "vendor_id,participant_id,openness\n00,0001,3.5\n00,0299A,4.0\n", encoding="utf-8"
    )
    if genders:
        (root / "participant_genders.csv").write_text(
            "participant_id,gender\nP0001,female\nP0299A,male\nP0002,F\nP0003,female\n", encoding="utf-8"
        )


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "seamless"
    write_tables(root)
    # A-suffixed participant id, leading-zero session: the good pair.
    add_participant(root, "V00_S0894_I00000042_P0299A", data=payload("V00_S0894_I00000042_P0299A", 1.0))
    add_participant(root, "V00_S0894_I00000042_P0001")
    # Second pair in vendor V01, session 0012, in another batch folder.
    add_participant(root, "V01_S0012_I00000043_P0002", folder=("dev", "0001", "0003"))
    add_participant(root, "V01_S0012_I00000043_P0003", folder=("dev", "0001", "0003"))
    # Files that are not participant files are ignored.
    (root / LABEL / "train" / "0000" / "0000" / "notes.json").write_text("{}", encoding="utf-8")
    return root


def run(root: Path, genders: bool = True):
    table = root / "participant_genders.csv" if genders else None
    return ingest(root, LABEL, gender_table=table)


def row(interactions: pd.DataFrame, interaction_id: str) -> pd.Series:
    found = interactions[interactions["interaction_id"] == interaction_id]
    assert len(found) == 1, f"{interaction_id} not in {interactions['interaction_id'].tolist()}"
    return found.iloc[0]


def test_parse_file_id_keeps_suffix_and_zeros():
    fid = parse_file_id("V00_S0809_I00000582_P0299A")
    assert (fid.vendor, fid.session, fid.prompt_hash, fid.participant) == ("00", "0809", "00000582", "0299A")
    assert fid.interaction_id == "V00_S0809_I00000582"
    assert fid.participant_id == "P0299A"
    assert parse_file_id("V00_S0809_I00000582") is None
    assert parse_file_id("notes") is None


def test_good_pairs(corpus: Path):
    interactions, segments, speech = run(corpus)
    assert interactions.columns.tolist() == INTERACTIONS.names
    assert interactions["interaction_id"].tolist() == ["V00_S0894_I00000042", "V01_S0012_I00000043"]
    first = row(interactions, "V00_S0894_I00000042")
    assert first["ingest_ok"], first["ingest_reason"]
    assert first["ingest_reason"] == ""
    assert (first["vendor_id"], first["session_id"], first["prompt_hash"]) == ("V00", "0894", "00000042")
    assert first["site"] == "V00"
    assert (first["participant_a"], first["participant_b"]) == ("P0001", "P0299A")
    assert (first["relationship"], first["relationship_detail"]) == ("familiar", "friends")
    assert first["prompt_id"] == "P_EO_001"
    assert first["prompt_text"] == "Would you rather fly, or be invisible?"
    assert (first["gender_a"], first["gender_b"], first["gender_mix"]) == ("female", "male", "female-male")
    assert first["n_participants"] == 2
    assert first["has_transcript"]
    assert first["audio_b"].endswith("V00_S0894_I00000042_P0299A.wav")
    assert first["video_a"].endswith("V00_S0894_I00000042_P0001.mp4")
    assert first["json_a"].endswith("V00_S0894_I00000042_P0001.json")
    assert Path(first["audio_a"]).is_file()

    second = row(interactions, "V01_S0012_I00000043")
    assert second["ingest_ok"], second["ingest_reason"]
    assert (second["session_id"], second["relationship"], second["relationship_detail"]) == (
        "0012",
        "stranger",
        "",
    )
    assert second["gender_mix"] == "female-female"  # `F` spelled out

    assert segments.columns.tolist() == SEGMENTS.names
    pair = segments[segments["interaction_id"] == "V00_S0894_I00000042"]
    assert len(pair) == 4
    assert set(pair["source"]) == {"transcript"}
    b_rows = pair[pair["speaker"] == "b"]
    assert b_rows["start"].tolist() == [1.0, 4.0]  # P0299A's transcript was offset by 1 s
    assert b_rows["text"].tolist() == ["would you rather", "sure"]
    assert speech.columns.tolist() == SPEECH.names
    assert len(speech) == 8 and set(speech["source"]) == {"corpus_vad"}
    # Deterministic order: by interaction, then time.
    for frame in (segments, speech):
        keys = list(zip(frame["interaction_id"], frame["start"], strict=True))
        assert keys == sorted(keys)


def test_ids_stay_strings_through_csv_roundtrip(corpus: Path, tmp_path: Path):
    interactions, _, _ = run(corpus)
    path = tmp_path / "interactions.csv"
    INTERACTIONS.write(path, interactions)
    again = INTERACTIONS.read(path)
    assert again["session_id"].tolist() == ["0894", "0012"]
    assert again["prompt_hash"].tolist() == ["00000042", "00000043"]
    pd.testing.assert_frame_equal(again, interactions)


def test_deterministic(corpus: Path):
    first, second = run(corpus), run(corpus)
    for a, b in zip(first, second, strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_one_participant_group(corpus: Path):
    add_participant(corpus, "V00_S0894_I00000043_P0001")
    interactions, segments, speech = run(corpus)
    single = row(interactions, "V00_S0894_I00000043")
    assert not single["ingest_ok"]
    assert single["ingest_reason"] == "one participant (V00_S0894_I00000043_P0001)"
    assert single["n_participants"] == 1 and single["participant_b"] == ""
    assert "V00_S0894_I00000043" not in set(segments["interaction_id"]) | set(speech["interaction_id"])


def test_more_than_two_participants(corpus: Path):
    add_participant(corpus, "V00_S0894_I00000042_P0005")
    interactions, _, _ = run(corpus)
    group = row(interactions, "V00_S0894_I00000042")
    assert not group["ingest_ok"]
    assert group["ingest_reason"].startswith("more than two participants (")
    assert group["n_participants"] == 3


def test_missing_transcript_is_not_fatal(corpus: Path):
    file_id = "V01_S0012_I00000043_P0003"
    add_participant(
        corpus, file_id, folder=("dev", "0001", "0003"), data=payload(file_id, with_transcript=False)
    )
    interactions, segments, speech = run(corpus)
    pair = row(interactions, "V01_S0012_I00000043")
    assert pair["ingest_ok"] and not pair["has_transcript"]
    # No half transcript: ASR transcribes both speakers; VAD still comes through.
    assert "V01_S0012_I00000043" not in set(segments["interaction_id"])
    assert len(speech[speech["interaction_id"] == "V01_S0012_I00000043"]) == 4


def test_unreadable_json(corpus: Path):
    add_participant(corpus, "V01_S0012_I00000043_P0003", folder=("dev", "0001", "0003"), json_text="not json")
    interactions, _, _ = run(corpus)
    pair = row(interactions, "V01_S0012_I00000043")
    assert not pair["ingest_ok"] and not pair["has_transcript"]
    assert pair["ingest_reason"].startswith(
        f"unreadable json for P0003 in {LABEL}/dev/0001/0003/V01_S0012_I00000043_P0003.json: "
        "Expecting value line 1"
    )


def test_malformed_segment_is_unreadable(corpus: Path):
    file_id = "V01_S0012_I00000043_P0003"
    data = payload(file_id)
    data["metadata:vad"][0]["end"] = "soon"
    add_participant(corpus, file_id, folder=("dev", "0001", "0003"), data=data)
    interactions, _, _ = run(corpus)
    reason = row(interactions, "V01_S0012_I00000043")["ingest_reason"]
    assert reason == (
        f"unreadable json for P0003 in {LABEL}/dev/0001/0003/V01_S0012_I00000043_P0003.json: "
        "metadata:vad item 1 has no numeric end ('soon')"
    )


def test_jsonl_variants(corpus: Path):
    file_id = "V01_S0012_I00000043_P0003"
    lines = [
        {"id": file_id},
        {"key": "metadata:vad", "value": [{"start": 0.0, "end": 1.0}]},
        {"metadata:vad": {"start": 2.0, "end": 2.5}},
        {"metadata:transcript": transcript(0.0)[0]},
        {"metadata:transcript": [{"start": 2.0, "end": 2.5, "transcript": "", "words": [{"word": "yes"}]}]},
    ]
    folder = ("dev", "0001", "0003")
    directory = add_participant(
        corpus,
        file_id,
        folder=folder,
        json_text="\n".join(map(json.dumps, lines)) + "\n",
        json_suffix=".jsonl",
    )
    (directory / f"{file_id}.json").unlink()  # the .jsonl is its only json
    interactions, segments, speech = run(corpus)
    pair = row(interactions, "V01_S0012_I00000043")
    assert pair["ingest_ok"], pair["ingest_reason"]
    assert pair["json_b"].endswith(".jsonl")
    b_segments = segments[
        (segments["interaction_id"] == "V01_S0012_I00000043") & (segments["speaker"] == "b")
    ]
    assert b_segments["text"].tolist() == ["would you rather", "yes"]  # empty text rebuilt from words
    b_speech = speech[(speech["interaction_id"] == "V01_S0012_I00000043") & (speech["speaker"] == "b")]
    assert list(zip(b_speech["start"], b_speech["end"], strict=True)) == [(0.0, 1.0), (2.0, 2.5)]


def test_jsonl_in_json_file_and_bad_line():
    record = parse_participant_json('{"id": "x"}\n{"metadata:vad": [{"start": 0, "end": 1}]}\n')
    assert record.vad == [(0.0, 1.0)] and record.transcript is None and record.json_id == "x"
    with pytest.raises(ValueError, match="line 2"):
        parse_participant_json('{"id": "x"}\n{"metadata:vad": [\n')


def test_missing_relationship_and_prompt_rows(corpus: Path):
    add_participant(corpus, "V01_S0007_I00000099_P0008")
    add_participant(corpus, "V01_S0007_I00000099_P0009")
    interactions, segments, _ = run(corpus)
    group = row(interactions, "V01_S0007_I00000099")
    assert not group["ingest_ok"]
    assert (
        group["ingest_reason"]
        == "no relationship row for V01 session 0007; no prompt row for prompt hash 00000099"
    )
    assert group["gender_mix"] == ""  # not in the gender table
    assert "V01_S0007_I00000099" not in set(segments["interaction_id"])


def test_missing_wav(corpus: Path):
    add_participant(corpus, "V00_S0894_I00000043_P0005", wav=False)
    add_participant(corpus, "V00_S0894_I00000043_P0006")
    interactions, _, _ = run(corpus)
    group = row(interactions, "V00_S0894_I00000043")
    assert not group["ingest_ok"]
    assert group["ingest_reason"] == "missing wav for P0005"
    assert group["audio_a"] == "" and group["video_a"].endswith("P0005.mp4")


def test_duplicate_file_ids(corpus: Path):
    add_participant(corpus, "V00_S0894_I00000042_P0001", folder=("test", "0002", "0000"))
    interactions, segments, _ = run(corpus)
    group = row(interactions, "V00_S0894_I00000042")
    assert not group["ingest_ok"]
    assert group["ingest_reason"] == (
        "duplicate file id V00_S0894_I00000042_P0001 in two folders "
        f"({LABEL}/test/0002/0000, {LABEL}/train/0000/0000)"
    )
    assert "V00_S0894_I00000042" not in set(segments["interaction_id"])


def test_without_gender_table(corpus: Path):
    interactions, _, _ = run(corpus, genders=False)
    assert interactions["gender_mix"].tolist() == ["", ""]
    assert interactions["gender_a"].tolist() == ["", ""]
    assert interactions["ingest_ok"].all()


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("interactions.csv", "prompt_id_unique"),
        ("relationships.csv", "relationship"),
        ("participants.csv", "participant_id"),
        ("participant_genders.csv", "gender"),
    ],
)
def test_missing_required_column(corpus: Path, table: str, column: str):
    path = corpus / table
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.drop(columns=[column]).to_csv(path, index=False)
    with pytest.raises(CorpusError, match=rf"{table}: .* lacks required column\(s\) {column}\b"):
        run(corpus)


def test_configuration_errors(corpus: Path, tmp_path: Path):
    with pytest.raises(CorpusError, match="corpus folder not found"):
        ingest(corpus, "improvised")
    with pytest.raises(CorpusError, match="gender table not found"):
        ingest(corpus, LABEL, gender_table=tmp_path / "nope.csv")
    (corpus / "participant_genders.csv").write_text("participant_id,gender\nP0001,female\n0001,male\n")
    with pytest.raises(CorpusError, match="participant 0001 is both 'female' and 'male'"):
        run(corpus)


# ------------------------------------------------------------------ other layouts of the download


def jsonl(items: list[dict]) -> str:
    return "".join(json.dumps(item) + "\n" for item in items)


# seamless_interaction's README draws the metadata and annotation folders directly under the split.
README_FOLDERS = {"transcript": "transcript", "vad": "vad", "annotations": ""}
RAW_FOLDERS = {"transcript": "metadata/transcript", "vad": "metadata/vad", "annotations": "annotations/"}


def add_raw_participant(
    root: Path,
    file_id: str,
    split: str = "train",
    offset: float = 0.0,
    metadata: bool = True,
    folders: dict[str, str] = RAW_FOLDERS,
) -> Path:
    """One participant in the raw per-modality layout: audio/, video/, metadata/{transcript,vad}/
    and annotation files (or those folders as `folders` places them), each `{file_id}.<ext>`
    under the split folder, plus a movement feature (npy) the ingest does not need."""
    split_dir = root / LABEL / split
    annotations = [f"{folders['annotations']}{kind}" for kind in ("1P-IS", "1P-R", "3P-V")]
    metadata_folders = (folders["transcript"], folders["vad"])
    for folder in ("audio", "video", *metadata_folders, *annotations, "movement/FAUToken"):
        (split_dir / folder).mkdir(parents=True, exist_ok=True)
    sf.write(
        split_dir / "audio" / f"{file_id}.wav", np.zeros(1600, dtype=np.float32), 16000, subtype="PCM_16"
    )
    (split_dir / "video" / f"{file_id}.mp4").write_bytes(b"not a real video; ingest only checks existence")
    for folder in annotations:
        (split_dir / folder / f"{file_id}.json").write_text('{"labels": []}', encoding="utf-8")
    (split_dir / "movement" / "FAUToken" / f"{file_id}.npy").write_bytes(b"features")
    if metadata:
        (split_dir / folders["transcript"] / f"{file_id}.jsonl").write_text(
            jsonl(transcript(offset)), encoding="utf-8"
        )
        vad = [
            {"start": offset, "end": offset + 1.5, "is_speech": True},
            {"start": offset + 1.5, "end": offset + 3.0, "is_speech": False},  # a pause, not speech
            {"start": offset + 3.0, "end": offset + 4.0},
        ]
        (split_dir / folders["vad"] / f"{file_id}.jsonl").write_text(jsonl(vad), encoding="utf-8")
    return split_dir


@pytest.mark.parametrize("folders", [RAW_FOLDERS, README_FOLDERS], ids=["metadata-folder", "readme-drawing"])
def test_raw_per_modality_layout(tmp_path: Path, folders: dict[str, str]):
    root = tmp_path / "raw"
    write_tables(root)
    add_raw_participant(root, "V00_S0894_I00000042_P0299A", offset=1.0, folders=folders)
    add_raw_participant(root, "V00_S0894_I00000042_P0001", folders=folders)
    add_raw_participant(root, "V01_S0012_I00000043_P0002", split="dev", folders=folders)
    add_raw_participant(root, "V01_S0012_I00000043_P0003", split="dev", metadata=False, folders=folders)
    interactions, segments, speech = run(root)
    good = row(interactions, "V00_S0894_I00000042")
    assert good["ingest_ok"], good["ingest_reason"]
    assert good["has_transcript"]
    assert good["audio_b"].endswith("train/audio/V00_S0894_I00000042_P0299A.wav")
    assert good["video_a"].endswith("train/video/V00_S0894_I00000042_P0001.mp4")
    assert good["json_a"].endswith(f"train/{folders['vad']}/V00_S0894_I00000042_P0001.jsonl")
    assert (good["relationship"], good["prompt_id"], good["gender_mix"]) == (
        "familiar",
        "P_EO_001",
        "female-male",
    )
    b_segments = segments[
        (segments["interaction_id"] == good["interaction_id"]) & (segments["speaker"] == "b")
    ]
    assert b_segments["text"].tolist() == ["would you rather", "sure"]
    assert b_segments["start"].tolist() == [1.0, 4.0]
    b_speech = speech[(speech["interaction_id"] == good["interaction_id"]) & (speech["speaker"] == "b")]
    # the is_speech: false entry is no speech
    assert list(zip(b_speech["start"], b_speech["end"], strict=True)) == [(1.0, 2.5), (4.0, 5.0)]
    bad = row(interactions, "V01_S0012_I00000043")
    assert not bad["ingest_ok"]
    assert bad["ingest_reason"] == "missing transcript or vad jsonl for P0003"


def test_raw_layout_unreadable_metadata_and_is_speech(tmp_path: Path):
    root = tmp_path / "raw"
    write_tables(root)
    add_raw_participant(root, "V00_S0894_I00000042_P0299A")
    split_dir = add_raw_participant(root, "V00_S0894_I00000042_P0001")
    vad = split_dir / "metadata" / "vad" / "V00_S0894_I00000042_P0001.jsonl"
    vad.write_text(jsonl([{"start": 0, "end": 1, "is_speech": "maybe"}]), encoding="utf-8")
    interactions, _, _ = run(root)
    assert row(interactions, "V00_S0894_I00000042")["ingest_reason"] == (
        f"unreadable vad for P0001 in {LABEL}/train/metadata/vad/V00_S0894_I00000042_P0001.jsonl: "
        "metadata:vad item 1 has is_speech 'maybe', not true/false"
    )


def test_readme_drawing_bad_jsonl_line_names_the_file(tmp_path: Path):
    """A corpus synced by hand to the README's drawing, one transcript cut off mid-line: the
    reason names the file under the root and the line, the other interaction still ingests."""
    root = tmp_path / "raw"
    write_tables(root)
    add_raw_participant(root, "V00_S0894_I00000042_P0299A", folders=README_FOLDERS)
    split_dir = add_raw_participant(root, "V00_S0894_I00000042_P0001", folders=README_FOLDERS)
    add_raw_participant(root, "V01_S0012_I00000043_P0002", split="dev", folders=README_FOLDERS)
    add_raw_participant(root, "V01_S0012_I00000043_P0003", split="dev", folders=README_FOLDERS)
    path = split_dir / "transcript" / "V00_S0894_I00000042_P0001.jsonl"
    path.write_text(path.read_text(encoding="utf-8")[:-20], encoding="utf-8")
    interactions, segments, _ = run(root)
    bad = row(interactions, "V00_S0894_I00000042")
    assert not bad["ingest_ok"]
    assert re.fullmatch(
        rf"unreadable transcript for P0001 in {LABEL}/train/transcript/V00_S0894_I00000042_P0001\.jsonl: "
        r".+ line 2 column \d+",
        bad["ingest_reason"],
    ), bad["ingest_reason"]
    good = row(interactions, "V01_S0012_I00000043")
    assert good["ingest_ok"] and good["has_transcript"], good["ingest_reason"]
    assert set(segments["interaction_id"]) == {"V01_S0012_I00000043"}


def test_per_segment_jsonl_in_converted_layout(corpus: Path):
    file_id = "V01_S0012_I00000043_P0003"
    lines = [
        {"id": file_id},
        *transcript(0.0),  # one transcript segment a line
        {"start": 0.0, "end": 1.5},  # one VAD segment a line
        {"start": 1.5, "end": 3.0, "is_speech": False},
        {"start": 3.0, "end": 4.0, "is_speech": True},
    ]
    add_participant(corpus, file_id, folder=("dev", "0001", "0003"), json_text=jsonl(lines))
    interactions, segments, speech = run(corpus)
    pair = row(interactions, "V01_S0012_I00000043")
    assert pair["ingest_ok"], pair["ingest_reason"]
    assert pair["has_transcript"]
    b = segments[(segments["interaction_id"] == "V01_S0012_I00000043") & (segments["speaker"] == "b")]
    assert b["text"].tolist() == ["would you rather", "sure"]
    b_speech = speech[(speech["interaction_id"] == "V01_S0012_I00000043") & (speech["speaker"] == "b")]
    assert list(zip(b_speech["start"], b_speech["end"], strict=True)) == [(0.0, 1.5), (3.0, 4.0)]
    record = parse_participant_json(jsonl([{"start": 0, "end": 1, "is_speech": 0}, {"start": 2, "end": 3}]))
    assert record.vad == [(2.0, 3.0)] and record.transcript is None


def write_shard(corpus: Path, shard: Path) -> None:
    """Pack the converted corpus's participant files into one webdataset tar (members keyed
    by file id, plus an npz the ingest does not need) and remove the loose files."""
    shard.parent.mkdir(parents=True, exist_ok=True)
    loose = sorted(p for p in (corpus / LABEL).rglob("*") if p.is_file() and p.suffix != ".tar")
    with tarfile.open(shard, "w") as archive:
        for path in loose:
            archive.add(path, arcname=f"{path.parent.name}/{path.name}")
        npz = loose[0].with_name(f"{loose[0].name.split('.')[0]}.npz")
        npz.write_bytes(b"features")
        archive.add(npz, arcname=npz.name)
    for path in [*loose, npz]:
        path.unlink()
    for folder in sorted((corpus / LABEL).rglob("*"), key=lambda p: -len(p.parts)):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def test_webdataset_shards(corpus: Path, tmp_path: Path):
    expected, expected_segments, _ = run(corpus)
    shard = corpus / LABEL / "train" / "0000" / "0000.tar"
    write_shard(corpus, shard)
    # Not extracted and no shard_dir: stop with the exact commands.
    with pytest.raises(CorpusError, match=r"0000\.tar: webdataset tar shard not extracted") as info:
        run(corpus)
    # The ingest extracts into shard_dir, grouping members by key as webdataset does.
    cache = tmp_path / "shards"
    interactions, segments, _ = ingest(
        corpus, LABEL, gender_table=corpus / "participant_genders.csv", shard_dir=cache
    )
    assert interactions["ingest_ok"].all(), interactions["ingest_reason"].tolist()
    assert interactions["interaction_id"].tolist() == expected["interaction_id"].tolist()
    assert row(interactions, "V00_S0894_I00000042")["audio_a"].startswith(str(cache / LABEL / "train"))
    assert not list(cache.rglob("*.npz"))
    pd.testing.assert_frame_equal(segments, expected_segments)
    # Or the user runs the command from the error; the extracted folder then stands for the shard.
    command = re.search(r"every shard with `([^`]+)`", str(info.value))[1]
    subprocess.run(command, shell=True, check=True)
    interactions, segments, _ = run(corpus)
    assert interactions["ingest_ok"].all(), interactions["ingest_reason"].tolist()
    assert row(interactions, "V01_S0012_I00000043")["json_a"].startswith(str(shard.with_suffix("")))
    pd.testing.assert_frame_equal(segments, expected_segments)
