# Config and input functions of the who / when / how benchmark (rules in socialomni.smk).
import re

from omnisocial.models.registry import load_entries  # noqa: E402
from omnisocial.socialomni.runs import (
    MEDIA_SUFFIX,
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
