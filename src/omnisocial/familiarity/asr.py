"""Speech recognition for interactions whose corpus files carry no transcript.

`transcribe_missing(interactions, params)` transcribes both participants' own audio
tracks of every interaction with `ingest_ok` and not `has_transcript`, and returns SEGMENTS
rows (source 'asr', speaker a/b from whose track the speech came) plus an ASR_FAILURES
frame. Both speakers of an interaction are transcribed, so its text never mixes corpus
transcript and ASR. No model is loaded when nothing is missing.

Engines (`params['engine']`, the config's `asr:` block):
- `faster-whisper`: `faster_whisper.WhisperModel(model, device, compute_type)`, greedy
  decoding (`beam_size` 1, temperature 0), word timestamps, no VAD filter;
- `whisperx`: `whisperx.load_model(...)` with the same greedy, deterministic decoding
  (``asr_options``: `beam_size` 1, `best_of` 1, `patience` 1, temperatures [0] so no
  sampling fallback, no previous-text conditioning), batched `transcribe`, then
  `whisperx.align` for word timing with a wav2vec2 alignment model loaded from a local
  folder only (`align_model`: a directory; offline, nothing is downloaded). With `align`
  on and no such folder the engine refuses to start, so a run never loses word timings
  quietly. whisperx lives in envs/asr.yaml (under --use-conda) or in `.venv-asr`
  (`make venv-asr`), not in the test venv; it is imported only when chosen. Run without
  whisperx, `transcribe_missing` hands the work to `.venv-asr` when that is built
  (`transcribe_in_venv`: `python -m omnisocial.familiarity.asr`).

Segment times come from the words where the engine gives word timing (first word start to
last word end, which is tighter than Whisper's segment times), else from the segment; see
`clean_segments` for what is dropped.

Optional keys besides engine/model/device/compute_type/language/batch_size: `beam_size`,
`cpu_threads`, `download_root`, `local_files_only` (never download), `align` (whisperx,
default true), `align_model` (whisperx: local folder of the alignment model), `vad_method` (whisperx).

A failure on one interaction (unreadable audio, a decoder error) is logged and recorded in
ASR_FAILURES with its reason; the others go on. An engine that cannot be loaded at all is
a configuration error and raises AsrError.
"""

from __future__ import annotations

import json
import logging
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.contracts import ASR_FAILURES, INTERACTIONS, SEGMENTS
from omnisocial.processes import Interrupted, as_child, interrupt_signal
from omnisocial.tables import SPEAKERS

log = logging.getLogger(__name__)

ENGINES = ("whisperx", "faster-whisper")
WHISPERX_SAMPLE_RATE = 16000  # whisperx.load_audio resamples to 16 kHz mono
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# the family venv with whisperx (make venv-asr), beside this checkout's src/
ASR_VENV = Path(__file__).resolve().parents[3] / ".venv-asr"
CONFIG_ERROR_EXIT = 3  # main(): the engine cannot be loaded (an AsrError)


class AsrError(RuntimeError):
    """The ASR engine is misconfigured or cannot be loaded (not a per-interaction failure)."""


class AsrInputError(ValueError):
    """An interaction's audio cannot be transcribed."""


@dataclass(frozen=True)
class Word:
    start: float | None
    end: float | None
    word: str


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    words: tuple[Word, ...] = field(default=())


# --------------------------------------------------------------------------- public API


def needs_asr(interactions: pd.DataFrame) -> pd.DataFrame:
    """The usable interactions without a corpus transcript, sorted by id."""
    ok = interactions["ingest_ok"].astype(bool)
    has = interactions["has_transcript"].astype(bool)
    return interactions[ok & ~has].sort_values("interaction_id", kind="mergesort")


def transcribe_missing(interactions: pd.DataFrame, params: Mapping) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (SEGMENTS rows with source 'asr', ASR_FAILURES rows) for the untranscribed interactions."""
    todo = needs_asr(interactions)
    if todo.empty:
        log.info("every usable interaction has a corpus transcript; no ASR model loaded")
        return SEGMENTS.empty(), ASR_FAILURES.empty()
    if str(params.get("engine")) == "whisperx" and not _whisperx_importable():
        python = asr_venv_python()
        if python is not None:
            return transcribe_in_venv(python, todo, params)
    engine = load_engine(params)
    log.info("transcribing %d interaction(s) with %s", len(todo), engine.describe())
    rows: list[dict] = []
    failures: list[dict] = []
    for item in todo.itertuples(index=False):
        interaction_id = item.interaction_id
        try:
            produced = []
            for speaker in SPEAKERS:
                path = _audio_path(getattr(item, f"audio_{speaker}"), speaker)
                segments, duration = engine.transcribe(path)
                produced += [
                    {
                        "interaction_id": interaction_id,
                        "speaker": speaker,
                        "start": segment.start,
                        "end": segment.end,
                        "text": segment.text,
                        "source": "asr",
                    }
                    for segment in clean_segments(segments, duration)
                ]
        except AsrError:  # a configuration error (e.g. the alignment model): stop the run
            raise
        except Exception as exc:  # one interaction's failure must not stop the others
            reason = _reason(exc)
            log.warning("ASR failed for %s: %s", interaction_id, reason)
            failures.append({"interaction_id": interaction_id, "reason": reason})
            continue
        if not produced:
            log.warning("ASR found no speech in either track of %s", interaction_id)
        rows += produced
    log.info("ASR: %d segment(s), %d failure(s)", len(rows), len(failures))
    return _segments_frame(rows), ASR_FAILURES.validate(
        pd.DataFrame(failures, columns=ASR_FAILURES.names), source="asr failures"
    )


def _whisperx_importable() -> bool:
    try:
        import whisperx  # noqa: F401
    except ImportError:
        return False
    return True


def asr_venv_python() -> Path | None:
    """The interpreter of this checkout's `.venv-asr` (`make venv-asr`), when it is built; else None."""
    python = ASR_VENV / "bin" / "python"
    return python if (ASR_VENV / ".installed").is_file() and python.is_file() else None


def transcribe_in_venv(
    python: Path, interactions: pd.DataFrame, params: Mapping
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`transcribe_missing` run by another interpreter (the family venv that has whisperx).

    The interactions and params go to it as files, its SEGMENTS and ASR_FAILURES come back
    as files; its log lines are logged here. An engine it cannot load is an AsrError here too.
    """
    log.info("whisperx is not installed here: transcribing in %s", python)
    with tempfile.TemporaryDirectory(prefix="omnisocial-asr-") as folder:
        paths = [
            Path(folder, name) for name in ("interactions.csv", "params.json", "segments.csv", "failures.csv")
        ]
        INTERACTIONS.write(paths[0], interactions)
        paths[1].write_text(json.dumps(dict(params), default=str))
        command, options = as_child([str(python), "-m", "omnisocial.familiarity.asr", *map(str, paths)])
        done = subprocess.run(command, capture_output=True, text=True, check=False, **options)
        for line in done.stderr.splitlines():
            log.info("[%s] %s", ASR_VENV.name, line)
        if (signum := interrupt_signal(done.returncode)) is not None:
            raise Interrupted(f"ASR in {python}", signum, "transcribing")
        if done.returncode == CONFIG_ERROR_EXIT:
            raise AsrError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "ASR failed")
        if done.returncode != 0:
            raise RuntimeError(
                f"ASR in {python} exited with {done.returncode}: {done.stderr.strip()[-2000:]}"
            )
        return SEGMENTS.read(paths[2]), ASR_FAILURES.read(paths[3])


def main(argv: list[str] | None = None) -> int:
    """`python -m omnisocial.familiarity.asr INTERACTIONS PARAMS_JSON SEGMENTS_OUT FAILURES_OUT`."""
    interactions_csv, params_json, segments_csv, failures_csv = argv if argv is not None else sys.argv[1:]
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    params = json.loads(Path(params_json).read_text())
    try:
        segments, failures = transcribe_missing(INTERACTIONS.read(interactions_csv), params)
    except AsrError as exc:
        print(f"AsrError: {exc}", file=sys.stderr)
        return CONFIG_ERROR_EXIT
    SEGMENTS.write(segments_csv, segments)
    ASR_FAILURES.write(failures_csv, failures)
    return 0


def load_engine(params: Mapping):
    """Build the engine named by `params['engine']` (loads the model)."""
    name = str(params.get("engine", "")).strip().lower()
    if name == "faster-whisper":
        return FasterWhisperEngine(params)
    if name == "whisperx":
        return WhisperXEngine(params)
    raise AsrError(f"asr.engine {params.get('engine')!r} is not one of {', '.join(ENGINES)}")


def clean_segments(segments, duration: float | None) -> list[Segment]:
    """Normalise engine output into timed, non-empty segments inside the audio.

    Word timing, where present, sets the boundaries; control characters are removed and
    whitespace collapsed; times are clipped to [0, duration]. Dropped: segments without
    text or finite times, segments starting at or after the end of the audio (Whisper can
    emit timestamps past the end) and segments of zero length after clipping.
    """
    out = []
    for segment in segments:
        text = " ".join(_CONTROL.sub(" ", str(segment.text)).split())
        if not text:
            continue
        timed = [w for w in segment.words if _finite(w.start) and _finite(w.end)]
        if timed:
            start, end = min(w.start for w in timed), max(w.end for w in timed)
        else:
            start, end = segment.start, segment.end
        if not (_finite(start) and _finite(end)):
            continue
        start, end = max(0.0, float(start)), max(0.0, float(end))
        if duration is not None and math.isfinite(duration):
            if start >= duration:
                continue
            end = min(end, duration)
        if end <= start:
            continue
        out.append(Segment(start, end, text))
    return out


# --------------------------------------------------------------------------- engines


class FasterWhisperEngine:
    """faster-whisper (CTranslate2) with greedy decoding and word timestamps."""

    def __init__(self, params: Mapping):
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise AsrError(
                f"asr.engine faster-whisper: the faster_whisper package is not installed ({exc})"
            ) from exc
        self.model_name = str(params.get("model", ""))
        self.device = str(params.get("device", "cpu"))
        self.compute_type = str(params.get("compute_type", "default"))
        self.language = params.get("language") or None
        self.beam_size = int(params.get("beam_size", 1))
        try:
            self.model = WhisperModel(
                self.model_name,
                device=self.device,
                compute_type=self.compute_type,
                cpu_threads=int(params.get("cpu_threads", 0)),
                download_root=params.get("download_root") or None,
                local_files_only=bool(params.get("local_files_only", False)),
            )
        except Exception as exc:
            raise AsrError(
                f"asr.model {self.model_name!r}: faster-whisper cannot load it: {_reason(exc)}"
            ) from exc

    def describe(self) -> str:
        return f"faster-whisper {self.model_name} on {self.device} ({self.compute_type})"

    def transcribe(self, path: Path) -> tuple[list[Segment], float | None]:
        segments, info = self.model.transcribe(
            str(path),
            language=self.language,
            word_timestamps=True,
            vad_filter=False,
            beam_size=self.beam_size,
            temperature=0,
        )
        out = []
        for segment in segments:  # a generator: decoding happens here
            words = tuple(Word(w.start, w.end, w.word) for w in segment.words or ())
            out.append(Segment(segment.start, segment.end, segment.text, words))
        return out, getattr(info, "duration", None)


class WhisperXEngine:
    """whisperx: batched faster-whisper inference, then wav2vec2 forced alignment for word timing."""

    def __init__(self, params: Mapping):
        try:
            import whisperx
        except ImportError as exc:
            raise AsrError(
                "asr.engine whisperx: whisperx is not installed in this environment "
                "(it lives in envs/asr.yaml under --use-conda, or in .venv-asr: make venv-asr; "
                f"or set asr.engine: faster-whisper) ({exc})"
            ) from exc
        self.whisperx = whisperx
        self.model_name = str(params.get("model", ""))
        self.device = str(params.get("device", "cpu"))
        self.compute_type = str(params.get("compute_type", "float16"))
        self.language = params.get("language") or None
        self.batch_size = int(params.get("batch_size", 8))
        self.align = bool(params.get("align", True))
        self.align_model = params.get("align_model") or None
        if self.align and not (self.align_model and Path(str(self.align_model)).expanduser().is_dir()):
            raise AsrError(
                "asr.engine whisperx: asr.align_model must be a local folder holding the wav2vec2 "
                f"alignment model (got {self.align_model!r}); it is never downloaded. Set it, or set "
                "asr.align: false to keep segment-level times only"
            )
        self._aligners: dict[str, tuple | None] = {}
        self.beam_size = int(params.get("beam_size", 1))
        options = {
            "compute_type": self.compute_type,
            "language": self.language,
            "asr_options": {
                "beam_size": self.beam_size,
                "best_of": 1,
                "patience": 1,
                "temperatures": [0.0],
                "condition_on_previous_text": False,
            },
        }
        for key in ("vad_method", "download_root", "local_files_only"):
            if params.get(key) not in (None, ""):
                options[key] = params[key]
        if params.get("cpu_threads"):
            options["threads"] = int(params["cpu_threads"])
        try:
            self.model = whisperx.load_model(self.model_name, self.device, **options)
        except Exception as exc:
            raise AsrError(f"asr.model {self.model_name!r}: whisperx cannot load it: {_reason(exc)}") from exc

    def describe(self) -> str:
        aligned = "with alignment" if self.align else "without alignment"
        return f"whisperx {self.model_name} on {self.device} ({self.compute_type}, {aligned})"

    def transcribe(self, path: Path) -> tuple[list[Segment], float | None]:
        audio = self.whisperx.load_audio(str(path))
        duration = len(audio) / WHISPERX_SAMPLE_RATE
        result = self.model.transcribe(audio, batch_size=self.batch_size)
        segments = list(result.get("segments") or [])
        language = result.get("language") or self.language
        if self.align and segments and language:
            aligner = self._aligner(language)
            if aligner is not None:
                model, metadata = aligner
                # a failed alignment fails the track (recorded in ASR_FAILURES), never a quiet
                # fall-back to segment times
                aligned = self.whisperx.align(
                    segments, model, metadata, audio, self.device, return_char_alignments=False
                )
                segments = list(aligned.get("segments") or [])
        return [_whisperx_segment(segment) for segment in segments], duration

    def _aligner(self, language: str) -> tuple | None:
        """The local alignment model (loaded once); failing to load it is an error, not a warning."""
        if language not in self._aligners:
            import os

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            folder = str(Path(str(self.align_model)).expanduser().resolve())
            try:
                self._aligners[language] = self.whisperx.load_align_model(
                    language_code=language, device=self.device, model_name=folder
                )
            except Exception as exc:
                raise AsrError(
                    f"whisperx alignment model {folder} (language {language!r}) cannot be loaded: "
                    f"{_reason(exc)}"
                ) from exc
        return self._aligners[language]


def _whisperx_segment(segment: Mapping) -> Segment:
    words = tuple(
        Word(word.get("start"), word.get("end"), str(word.get("word", "")))
        for word in segment.get("words") or ()
        if isinstance(word, Mapping)
    )
    return Segment(segment.get("start"), segment.get("end"), str(segment.get("text", "")), words)


# --------------------------------------------------------------------------- helpers


def _audio_path(value, speaker: str) -> Path:
    if not isinstance(value, str) or not value:
        raise AsrInputError(f"no audio file for speaker {speaker}")
    path = Path(value)
    if not path.is_file():
        raise AsrInputError(f"audio file of speaker {speaker} not found: {path}")
    return path


def _finite(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _reason(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    if isinstance(exc, AsrInputError):
        return message
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _segments_frame(rows: list[dict]) -> pd.DataFrame:
    if not rows:
        return SEGMENTS.empty()
    frame = pd.DataFrame(rows, columns=SEGMENTS.names)
    frame = frame.sort_values(["interaction_id", "start", "speaker", "end", "text"], kind="mergesort")
    return SEGMENTS.validate(frame.reset_index(drop=True), source="asr segments")


if __name__ == "__main__":
    sys.exit(main())
