# Config, paths and input functions of the familiarity study: corpus, signals, filters, design,
# stimuli, models, ratings, statistics and figures (included by the Snakefile right after
# common.smk; rules in workflow/rules/familiarity/*.smk).
import os
import re

from omnisocial.familiarity.inference import (  # noqa: E402
    load_models,
    needs_baseline_predictions,
    with_baseline_predictions,
)
from omnisocial.familiarity.ratings.frozen import (  # noqa: E402
    check_design,
    design_keys,
    pseudonym_folder,
)
from omnisocial.familiarity.release import (  # noqa: E402
    GENERATED_MARK,
    prediction_files,
)

CORPUS = config["corpus"]
RELEASE = config["release"]
# pipeline: corpus.smk ... stimuli.smk build the design; release: release.smk imports it
FROM_RELEASE = config["study"]["design_source"] == "release"
# released predictions, one entry per file ({path, model, modality}): globs and folders are
# resolved here, at startup, so a pattern matching nothing stops before any job
RELEASE_PREDICTION_FILES = prediction_files(
    RELEASE["predictions"]["path"], RELEASE["predictions"]["mapping"]
)
FAM_MODELS = load_models(config["models"])
if FROM_RELEASE:
    _needs = [name for name, e in FAM_MODELS.items() if needs_baseline_predictions(e)]
    if _needs:
        raise ValueError(
            f"models: {', '.join(_needs)} read the behavioural baseline's predictions, which need "
            "the corpus's transcripts: study.design_source release has none (drop the entries)"
        )
# infer_model matches only the configured names (a regex matching nothing when there are none)
FAM_MODEL_PATTERN = "|".join(re.escape(name) for name in FAM_MODELS) or "(?!)"
INFERENCE = config["inference"]
# The study's longest chain (corpus -> signals -> filters -> design -> stimuli -> baselines ->
# models -> Rasch -> its figures): of the jobs ready at once its go first, and the social
# benchmarks and the other figures fill the cores around it.
CHAIN_PRIORITY = 10


def fam_predictions():
    """Every model's predictions: the offline baselines (pipeline designs: they measure the
    corpus's transcripts), released predictions when configured, one file per registry model.
    """
    files = [] if FROM_RELEASE else [out("predictions", "baselines.csv")]
    files += fam_released_predictions()
    return files + [out("predictions", f"{name}.csv") for name in FAM_MODELS]


def fam_released_predictions():
    """The released predictions' file among fam_predictions() (its rows say `source: release`)."""
    return [out("release", "predictions.csv")] if RELEASE_PREDICTION_FILES else []


def fam_model_entry(wildcards):
    """The entry as the backend gets it (a behavioural baseline reads this study's predictions)."""
    return with_baseline_predictions(
        FAM_MODELS[wildcards.model], out("predictions", "baselines.csv")
    )


def fam_model_inputs(wildcards):
    inputs = {
        "manifest": out("stimuli", "manifest.csv"),
        "design": out("design", "design.csv"),
    }
    if needs_baseline_predictions(FAM_MODELS[wildcards.model]):
        inputs["baselines"] = out("predictions", "baselines.csv")
    return inputs


def fam_model_cache(wildcards):
    """The model's append-only result store. Not an output: Snakemake never deletes it, so
    a failed or interrupted job resumes where it stopped and only failed calls are retried.
    """
    return out("cache", f"{wildcards.model}.jsonl")


def corpus_root(wildcards=None):
    """The corpus folder: made by make_demo_corpus for the demo, read as given otherwise."""
    return CORPUS["root"]


def transcript_inputs(wildcards=None):
    """Corpus transcripts, plus ASR output when missing transcripts are transcribed."""
    inputs = {"transcripts": out("corpus", "transcript_segments.csv")}
    if CORPUS["missing_transcript"] == "asr":
        inputs["asr"] = out("corpus", "asr_segments.csv")
        inputs["asr_failures"] = out("corpus", "asr_failures.csv")
    return inputs


def survey_outputs():
    """What a study needs before its ratings are collected (target survey_materials): the
    design with its filter or release import report, the stimuli and every rater's survey list.
    """
    if FROM_RELEASE:
        first = [out("release", "design_import_report.csv")]
    else:
        first = [out("filters", "filter_report.csv")]
    return [
        *first,
        out("design", "design.csv"),
        out("stimuli", "manifest.csv"),
        out("ratings", "blocks.csv"),
        out("ratings", "assignments.csv"),
        out("ratings", "surveys"),
        *experiment_outputs(),
        *jatos_outputs(),
    ]


def experiment_outputs():
    """The browser experiment of each rated modality (rule rating_experiment), when built.
    A study rebuilt from a release has had its ratings: no experiment to build."""
    if FROM_RELEASE or not config["ratings"]["experiment"]["build"]:
        return []
    planned = config["ratings"]["raters_per_modality"]
    return [
        out("ratings", "experiment", m)
        for m in ("text", "audio", "video")
        if m in planned
    ]


def jatos_outputs():
    """The JATOS study archive of each built experiment (rule rating_jatos)."""
    return [
        out("ratings", "jatos", f"{Path(folder).name}.jzip")
        for folder in experiment_outputs()
    ]


def final_outputs():
    # models, ratings, statistics, figures after the survey materials
    return [*survey_outputs(), *familiarity_outputs()]


# --- ratings ---
RATINGS = config["ratings"]
# What decides the survey lists (docs/rating-experiment.md#after-collection). Once answers are
# collected, a change of these stops here, before any job, naming the collection and the keys.
DESIGN_KEYS = design_keys(config)
check_design(config)
# where the study's pseudonym key lives (Prolific ids never leave the collected data); a
# release's ratings name its raters by the release's own codes, and its dyad ids are its own
PSEUDONYM_FOLDER = "" if FROM_RELEASE else str(pseudonym_folder(RATINGS) or "")
RATED_MODALITIES = [
    m for m in ("text", "audio", "video") if m in RATINGS["raters_per_modality"]
]
if RATINGS["source"] == "exports":
    # No export yet is a study before its survey: the survey lists and stimuli plan and run
    # (target survey_materials); only import_ratings asks for the exports (rating_exports).
    RATED_MODALITIES = [m for m in RATED_MODALITIES if RATINGS["exports"][m]]


def collected_export(modality):
    """What the rating experiment collected, as the long export import_ratings reads."""
    return out("ratings", "collected", f"{modality}_export.csv")


def collected_inputs(wildcards=None):
    """The inputs of collect_ratings. The collection server's manifest (rewritten on every
    stored record, so new sessions make the import run again) and JATOS result exports.
    """
    experiment = RATINGS["experiment"]
    jatos = {
        m: p
        for m, p in experiment["jatos_results"].items()
        if p and m in RATED_MODALITIES
    }
    inputs = {f"jatos_{m}": path for m, path in jatos.items()}
    if set(RATED_MODALITIES) - set(jatos):
        if not experiment["collected"]:
            raise ValueError(
                "ratings.source is experiment but ratings.experiment.collected is empty: set it to "
                "the rating-server's data folder (or ratings.experiment.jatos_results.<modality>)"
            )
        inputs["manifest"] = os.path.join(experiment["collected"], "manifest.json")
    return inputs


def simulated_export(modality):
    return out("ratings", "simulated", f"simulated_{modality}_export.csv")


def rating_exports(wildcards=None):
    """Survey exports by modality (the simulated panel's, or the configured files), and covariates."""
    if RATINGS["source"] == "simulated":
        inputs = {m: simulated_export(m) for m in RATED_MODALITIES}
        inputs["covariates"] = out(
            "ratings", "simulated", "simulated_covariates_export.csv"
        )
        return inputs
    if RATINGS["source"] == "experiment":
        inputs = {m: collected_export(m) for m in RATED_MODALITIES}
        inputs["covariates"] = out("ratings", "collected", "covariates_export.csv")
        inputs["sessions"] = out("ratings", "collected", "sessions.csv")
        return inputs
    if not RATINGS["raters_per_modality"]:
        # a models-only study: no modality is rated, import_ratings writes empty tables
        return {}
    if not RATED_MODALITIES:
        raise ValueError(
            "ratings.exports names no survey export for a modality of ratings.raters_per_modality "
            f"({', '.join(RATINGS['raters_per_modality'])}): set ratings.exports.<modality> to each "
            "export once the ratings are collected (until then run the target survey_materials: "
            "the stimuli and every rater's survey list)"
        )
    inputs = {m: RATINGS["exports"][m] for m in RATED_MODALITIES}
    if RATINGS["covariates"]["path"]:
        inputs["covariates"] = RATINGS["covariates"]["path"]
    return inputs


# --- analysis ---
ANALYSIS = config["analysis"]
FAM_CATEGORY = "5. Familiarity results"


def fam_table(name, caption=None):
    """An analysis table. Those with a caption (workflow/report/fam_*.rst) are shown in the report
    through their HTML rendering (rule render_tables, workflow/rules/report.smk)."""
    return out("analysis", f"{name}.csv")


# --- figures ---
FIGURE_OPTIONS = {
    "variant": config["inference"]["prompt_variants"][0],
    "seed": config["analysis"]["seed"],
    "corpus_source": CORPUS["source"],  # demo: figures of model outputs say so
}


def fam_figure_png(name):
    """A figure's PNG, shown in the report with its caption (workflow/report/fam_fig_*.rst)."""
    return report(
        out("figures", f"{name}.png"),
        caption=f"../../report/fam_fig_{name}.rst",
        category=FAM_CATEGORY,
        subcategory="Figures",
        labels={"figure": name.replace("_", " ")},
    )


def filter_report_input(wildcards=None):
    """The filter report, when the design comes from a corpus (a released design has none)."""
    if config["study"]["design_source"] != "pipeline":
        return {}
    return {"filter_report": out("filters", "filter_report.csv")}


def fam_figure_outputs():
    return [
        out("figures", f"{name}.{ext}")
        for name in (
            "accuracy",
            "sdt",
            "crowds",
            "difficulty",
            "glmm",
            "calibration",
            "power",
            "funnel",
            "coverage",
            "confusion",
            "cell_accuracy",
            "prompt_sensitivity",
            "person_item_map",
        )
        for ext in FIGURE_FORMATS
    ]


def familiarity_outputs():
    """Every final output of the familiarity study's models, ratings, statistics and figures."""
    tables = [
        "metrics",
        "nonanswer_accuracy",
        "per_rater_sdt",
        "majority_votes",
        "crowd_curves",
        "calibration",
        "prompt_sensitivity",
        "mcnemar",
        "tost",
        "power",
        "individual_differences",
        "glmm_summary",
        "glmm_contrasts",
        "rasch_difficulty",
        "rasch_fits",
        "rasch_persons",
        "rasch_correlations",
        "rasch_partial",
    ]
    return [
        *fam_predictions(),
        *(out("responses", f"{name}.csv") for name in FAM_MODELS),
        *([] if FROM_RELEASE else [out("baselines", "features.csv")]),
        *(
            [out("release", "predictions_import_report.csv")]
            if RELEASE_PREDICTION_FILES
            else []
        ),
        out("ratings", "surveys"),
        out("ratings", "import_report.csv"),
        *(out("analysis", f"{name}.csv") for name in tables),
        *fam_figure_outputs(),
    ]
