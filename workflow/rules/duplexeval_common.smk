# Config and input functions of the Omni-DuplexEval-style benchmark (rules in duplexeval.smk).
# Included after socialomni_common.smk (social.models, loaded there as SOCIAL_MODELS).

# registry models (social.models) that take video, streamed through RTD and PR
# (omnisocial.duplexeval.streamed.streams_video; none when social.streaming.stream_models is false)
DUPLEX_STREAM_MODELS = {
    name: entry
    for name, entry in SOCIAL_MODELS.items()
    if SOCIAL["streaming"]["stream_models"]
    and "video" in (entry.get("modalities") or ())
}
DUPLEX_STREAM_PATTERN = (
    "|".join(re.escape(name) for name in DUPLEX_STREAM_MODELS) or "(?!)"
)


def duplex_streamed(kind):
    """Every streamed model's responses, steps or summary table (kind)."""
    return [
        sout("stream", "duplexeval", f"{name}_{kind}.csv")
        for name in DUPLEX_STREAM_MODELS
    ]


def duplex_stream_runtime(wildcards, input, attempt):
    """Minutes of duplexeval_stream_model: one call per item and step at the entry's latency."""
    import csv
    import math

    from omnisocial.models.cluster import runtime_minutes

    step = float(SOCIAL["streaming"]["stream_step_s"])
    with open(input.stream_items, newline="", encoding="utf-8") as handle:
        durations = [row.get("video_duration") or "0" for row in csv.DictReader(handle)]
    calls = sum(math.floor(float(d) / step + 1e-9) for d in durations)
    return runtime_minutes(DUPLEX_STREAM_MODELS[wildcards.model], calls, attempt)
