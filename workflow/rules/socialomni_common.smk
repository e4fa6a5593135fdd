# Config and input functions of the who / when / how benchmark (rules in socialomni.smk).
import re

from omnisocial.models.registry import load_entries  # noqa: E402
from omnisocial.socialomni.runs import (
    MEDIA_SUFFIX,
    model_modality,
    planned_steps,
    run_modality,
    run_name,
    split_run,
)  # noqa: E402

SOCIAL_MODELS = load_entries(SOCIAL["models"])
# each registry model on its full input and on each modality ablation (social.ablations):
# run name (<name> or <name>@<ablation>, omnisocial.socialomni.requests) -> registry entry
SOCIAL_RUNS = {
    run_name(name, ablation): entry
    for name, entry in SOCIAL_MODELS.items()
    for ablation in (None, *SOCIAL["ablations"])
}
# social_model_replies matches only the configured runs (a regex that matches nothing when none)
SOCIAL_MODEL_PATTERN = "|".join(re.escape(run) for run in SOCIAL_RUNS) or "(?!)"


def social_replies(task):
    """Reply tables of one task: the baselines' and each registry model run's (ablations too)."""
    replies = [sout("replies", f"{task}_baselines.csv")]
    return replies + [sout("replies", "models", f"{run}.csv") for run in SOCIAL_RUNS]


def social_model_entry(wildcards):
    return SOCIAL_RUNS[wildcards.model]


def social_model_ablation(wildcards):
    """The run's modality ablation (audio, video, transcript), empty for the full input."""
    return split_run(wildcards.model)[1] or ""


def social_model_media(wildcards):
    """The cut clips a run reads: the folder of its input modality (none for text-only or transcript)."""
    modality = run_modality(SOCIAL_RUNS[wildcards.model], split_run(wildcards.model)[1])
    return {"media": sout("media", modality)} if modality in MEDIA_SUFFIX else {}


def social_model_cache(wildcards):
    """The model's append-only result store: kept across runs (not an output, so never deleted)."""
    return sout("cache", f"{wildcards.model}.jsonl")


# --- the streaming when protocol (socialomni.stream): each registry model with media input,
# asked every social.when.stream_step_s along each when stream item (social.when.stream_models)
SOCIAL_STREAM_MODELS = {
    name: entry
    for name, entry in SOCIAL_MODELS.items()
    if SOCIAL["when"]["stream_models"] and model_modality(entry)
}
SOCIAL_STREAM_PATTERN = (
    "|".join(re.escape(name) for name in SOCIAL_STREAM_MODELS) or "(?!)"
)


def social_stream_files(kind):
    """One table of each streamed model: steps, responses or summary (streaming.STREAM_SUMMARY)."""
    return [
        sout("stream", "when", f"{name}_{kind}.csv") for name in SOCIAL_STREAM_MODELS
    ]


def social_stream_segments(wildcards):
    """The step segments of the model's input modality (rule socialomni_stream_segments)."""
    return sout("stream_media", model_modality(SOCIAL_STREAM_MODELS[wildcards.model]))


def social_stream_cache(wildcards):
    """The streamed model's append-only result store, one record per step (kept across runs)."""
    return sout("cache", f"stream_when_{wildcards.model}.jsonl")


def social_stream_runtime(wildcards, input, attempt):
    """Minutes of socialomni_stream_when: every planned step at the entry's latency."""
    from omnisocial.models.cluster import runtime_minutes

    calls = planned_steps(input.when_stream_items, SOCIAL["when"]["stream_step_s"])
    return runtime_minutes(SOCIAL_STREAM_MODELS[wildcards.model], calls, attempt)
