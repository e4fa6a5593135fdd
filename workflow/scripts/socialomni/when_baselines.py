"""Rule socialomni_when_baselines: the silence baseline at the single cut and under the streaming protocol."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.settings import Vad
from omnisocial.socialomni.baselines import speech_by_video, when_single_replies, when_stream_baseline
from omnisocial.socialomni.contracts import (
    REPLIES,
    TURNS,
    WHEN_ITEMS,
    WHEN_STREAM_ITEMS,
    WHEN_STREAM_RESPONSES,
)
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
items = WHEN_ITEMS.read(snakemake.input.when_items)
stream = WHEN_STREAM_ITEMS.read(snakemake.input.when_stream_items)
turns = TURNS.read(snakemake.input.turns)
videos = list(items["video_path"]) + list(stream["video_path"])
speech = speech_by_video(videos, params.root, params.speech_source, turns, Vad.of(params.vad))
log.info("speech from %s for %d clips", params.speech_source, len(speech))
replies = when_single_replies(items, speech, float(params.pause_s), params.seed)
responses = when_stream_baseline(stream, speech, float(params.pause_s), float(params.step_s))
log.info(
    "single cut: %d items; streaming: %d items, %d with a response",
    len(items),
    len(responses),
    int(responses["response_time"].notna().sum()),
)
REPLIES.write(snakemake.output.replies, replies)
WHEN_STREAM_RESPONSES.write(snakemake.output.stream, responses)
