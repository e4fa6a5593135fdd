# Config, paths and input functions shared by the SocialOmni-style (socialomni.smk) and Omni-DuplexEval-style
# (duplexeval.smk) benchmarks; their shared rules are in social.smk.
# Everything lands under social.results. Included before socialomni.smk and duplexeval.smk.

import re as _re

from omnisocial.judges.llm import load_judges  # noqa: E402

SOCIAL = config["social"]
# LLM judges (registry entries per task); one job and one cache file per judge and benchmark
SOCIAL_JUDGE_TASKS, SOCIAL_JUDGES = load_judges(SOCIAL["judges"])
HOW_JUDGES = SOCIAL_JUDGE_TASKS["how"]
STREAM_JUDGES = [
    name
    for name in SOCIAL_JUDGES
    if any(
        name in SOCIAL_JUDGE_TASKS[task]
        for task in ("rtd_temporal", "rtd_content", "pr")
    )
]


def judge_pattern(names):
    """A wildcard constraint that matches exactly these judge names (nothing when none)."""
    return "|".join(_re.escape(name) for name in names) or "(?!)"


def sout(*parts):
    """A path under the social benchmarks' results folder."""
    return str(Path(SOCIAL["results"], *parts))


def social_judge_entry(wildcards):
    return SOCIAL_JUDGES[wildcards.judge]


def social_judge_cache(wildcards):
    """A judge's append-only result store (shared by its how and streaming jobs; never deleted)."""
    return sout("cache", f"judge_{wildcards.judge}.jsonl")


def stream_tasks_of(judge):
    """The streaming tasks a judge serves."""
    return [
        task
        for task in ("rtd_temporal", "rtd_content", "pr")
        if judge in SOCIAL_JUDGE_TASKS[task]
    ]


def stream_judge_tasks(wildcards):
    return stream_tasks_of(wildcards.judge)


def social_roots():
    """(SocialOmni root, Omni-DuplexEval root): inside the demo folder, or as configured."""
    if SOCIAL["source"] == "demo":
        demo = Path(SOCIAL["demo_root"])
        return str(demo / "socialomni"), str(demo / "duplexeval")
    # both roots are required when social.enabled (omnisocial.config.check_study)
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


def socialomni_outputs():
    """Everything the who / when / how benchmark reports; [] when social.enabled is false."""
    if not SOCIAL["enabled"]:
        return []
    metrics = [
        "who_metrics.csv",
        "who_breakdown.csv",
        "when_single_metrics.csv",
        "when_stream_rates.csv",
        "when_tolerance.csv",
        "when_timing.csv",
        "how_metrics.csv",
        "how_released.csv",
        "how_agreement.csv",
        "social_profile.csv",
    ]
    figures = ["profile", "timing", "rank_scatter", "who_confusion"]
    return [sout("metrics", name) for name in metrics] + [
        sout("figures", f"{name}.{ext}") for name in figures for ext in FIGURE_FORMATS
    ]


def duplexeval_outputs():
    """Everything the streaming benchmark reports; [] when social.enabled is false."""
    if not SOCIAL["enabled"]:
        return []
    metrics = ["detector_prf.csv", "streaming_metrics.csv"]
    metrics += [
        "rtd_judge_metrics.csv",
        "pr_judge_metrics.csv",
        "stream_judge_agreement.csv",
    ]
    return [sout("metrics", name) for name in metrics] + [
        sout("figures", f"streaming.{ext}") for ext in FIGURE_FORMATS
    ]


def social_figure_outputs():
    """The social benchmarks' figures (target `figures`); [] when social.enabled is false."""
    return [
        path
        for path in socialomni_outputs() + duplexeval_outputs()
        if Path(path).parent.name == "figures"
    ]


def stream_summaries():
    """Every streaming job's STREAM_SUMMARY table (one row: calls per model and benchmark)."""
    if not SOCIAL["enabled"]:
        return []
    return social_stream_files("summary") + duplex_streamed("summary")


def social_outputs():
    """Everything both social benchmarks report (and the judge calibration when human scores are given)."""
    if not SOCIAL["enabled"]:
        return []
    calibration = (
        [sout("metrics", "judge_calibration.csv")] if SOCIAL["human_scores"] else []
    )
    return socialomni_outputs() + duplexeval_outputs() + calibration
