# Config, paths and input functions of the social benchmarks (included by social.smk).
import re

from omnisocial.models.registry import load_entries  # noqa: E402

SOCIAL = config["social"]
SOCIAL_MODELS = load_entries(SOCIAL["models"])
# social_model_replies matches only the configured names (a regex that matches nothing when none)
SOCIAL_MODEL_PATTERN = "|".join(re.escape(name) for name in SOCIAL_MODELS) or "(?!)"


def sout(*parts):
    """A path under the social benchmarks' results folder."""
    return str(Path(SOCIAL["results"], *parts))


def social_roots():
    """(SocialOmni root, Omni-DuplexEval root): inside the demo folder, or as configured."""
    if SOCIAL["source"] == "demo":
        demo = Path(SOCIAL["demo_root"])
        return str(demo / "socialomni"), str(demo / "duplexeval")
    if not SOCIAL["socialomni_root"] or not SOCIAL["duplexeval_root"]:
        raise ValueError(
            "social.source released needs social.socialomni_root and social.duplexeval_root"
        )
    return SOCIAL["socialomni_root"], SOCIAL["duplexeval_root"]


def social_sources(wildcards=None):
    """The import's inputs: the demo folder or the released files that exist, and any responses folder."""
    responses = (
        {"responses": SOCIAL["responses_root"]} if SOCIAL["responses_root"] else {}
    )
    if SOCIAL["source"] == "demo":
        return {"demo": SOCIAL["demo_root"], **responses}
    socialomni, duplexeval = social_roots()
    files = {
        "level_1": Path(socialomni, "data", "level_1", "dataset.json"),
        "level_2": Path(socialomni, "data", "level_2", "annotations.json"),
        "stream_items": Path(duplexeval, SOCIAL["duplexeval_items"]),
    }
    return {
        name: str(path) for name, path in files.items() if path.is_file()
    } | responses


def social_replies(task):
    """Reply tables of one task: the baselines' and each registry model's."""
    replies = [sout("replies", f"{task}_baselines.csv")]
    return replies + [
        sout("replies", "models", f"{name}.csv") for name in SOCIAL_MODELS
    ]


def social_model_entry(wildcards):
    return SOCIAL_MODELS[wildcards.model]


def social_model_cache(wildcards):
    """The model's append-only result store: kept across runs (not an output, so never deleted)."""
    return sout("cache", f"{wildcards.model}.jsonl")


def social_outputs():
    """Everything the social benchmarks report; [] when social.enabled is false."""
    if not SOCIAL["enabled"]:
        return []
    metrics = [
        "who_metrics.csv",
        "who_breakdown.csv",
        "when_single_metrics.csv",
        "when_stream_rates.csv",
        "when_tolerance.csv",
        "how_metrics.csv",
        "how_agreement.csv",
        "detector_prf.csv",
        "streaming_metrics.csv",
        "social_profile.csv",
    ]
    if SOCIAL["human_scores"]:
        metrics.append("judge_calibration.csv")
    figures = ["profile", "timing", "rank_scatter", "streaming"]
    return [sout("metrics", name) for name in metrics] + [
        sout("figures", f"{name}.{ext}") for name in figures for ext in ("png", "pdf")
    ]
