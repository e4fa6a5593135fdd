# Config and input functions of the who / when / how benchmark (rules in socialomni.smk).
import re

from omnisocial.models.registry import load_entries  # noqa: E402
from omnisocial.socialomni.requests import model_modality  # noqa: E402

SOCIAL_MODELS = load_entries(SOCIAL["models"])
# social_model_replies matches only the configured names (a regex that matches nothing when none)
SOCIAL_MODEL_PATTERN = "|".join(re.escape(name) for name in SOCIAL_MODELS) or "(?!)"


def social_replies(task):
    """Reply tables of one task: the baselines' and each registry model's."""
    replies = [sout("replies", f"{task}_baselines.csv")]
    return replies + [
        sout("replies", "models", f"{name}.csv") for name in SOCIAL_MODELS
    ]


def social_model_entry(wildcards):
    return SOCIAL_MODELS[wildcards.model]


def social_model_media(wildcards):
    """The cut clips a model reads: the folder of its input modality (none for text-only)."""
    modality = model_modality(SOCIAL_MODELS[wildcards.model])
    return {"media": sout("media", modality)} if modality else {}


def social_model_cache(wildcards):
    """The model's append-only result store: kept across runs (not an output, so never deleted)."""
    return sout("cache", f"{wildcards.model}.jsonl")
