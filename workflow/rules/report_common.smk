# Paths and input functions of the report rules (workflow/rules/report.smk): the reported tables
# with their labels, categories and captions, and the summary's inputs. Included after every
# study's common file (it reads their paths).

SUMMARY_CATEGORY = "0. Summary"
SOCIAL_WHO_CATEGORY = "3. Who / when / how"
SOCIAL_STREAM_CATEGORY = "4. Streaming"


def _table(path, label, category, subcategory, caption):
    stem = str(Path(path).with_suffix(""))
    return stem, {
        "label": label,
        "category": category,
        "subcategory": subcategory,
        "caption": caption,
    }


def report_tables():
    """stem (CSV path without .csv) -> label, category, subcategory, caption (workflow/report/*.rst)."""
    fam = [
        ("metrics", "metrics (accuracy, d', coverage)", "metrics"),
        ("nonanswer_accuracy", "non-answers", "nonanswer"),
        ("per_rater_sdt", "per rater", "per_rater"),
        ("crowd_curves", "crowd curves", "crowd_curves"),
        ("calibration", "calibration", "calibration"),
        ("prompt_sensitivity", "prompt sensitivity", "prompt_sensitivity"),
        ("mcnemar", "McNemar", "mcnemar"),
        ("tost", "TOST equivalence", "tost"),
        ("power", "power", "power"),
        ("individual_differences", "individual differences", "individual"),
        ("glmm_summary", "GLMM summary", "glmm_summary"),
        ("glmm_contrasts", "GLMM contrasts", "glmm_contrasts"),
        ("rasch_difficulty", "Rasch difficulty", "rasch_difficulty"),
        ("rasch_persons", "Rasch person abilities", "rasch_persons"),
        ("rasch_correlations", "Rasch correlations", "rasch_correlations"),
        ("rasch_partial", "Rasch partial correlations", "rasch_partial"),
    ]
    pipeline = (
        config["study"]["design_source"] == "pipeline"
    )  # a released design has no filters
    tables = dict(
        [
            *(
                [
                    _table(
                        out("filters", "filter_report.csv"),
                        "filter report",
                        "1. Corpus and filters",
                        "Tables",
                        "filter_report",
                    )
                ]
                if pipeline
                else []
            ),
            _table(
                out("design", "design.csv"),
                "design",
                "2. Design and stimuli",
                "Tables",
                "design",
            ),
            _table(
                out("stimuli", "manifest.csv"),
                "stimulus manifest",
                "2. Design and stimuli",
                "Tables",
                "manifest",
            ),
            _table(
                out("ratings", "trials.csv"),
                "rating trials",
                FAM_CATEGORY,
                "Ratings",
                "fam_trials",
            ),
            _table(
                out("ratings", "import_report.csv"),
                "rating import report",
                FAM_CATEGORY,
                "Ratings",
                "fam_import_report",
            ),
            *(
                _table(
                    out("analysis", f"{name}.csv"),
                    label,
                    FAM_CATEGORY,
                    "Tables",
                    f"fam_{cap}",
                )
                for name, label, cap in fam
            ),
        ]
    )
    if SOCIAL["enabled"]:
        social = [
            ("who_metrics", "who: accuracy", SOCIAL_WHO_CATEGORY, "Who", "social_who"),
            (
                "who_breakdown",
                "who: breakdown",
                SOCIAL_WHO_CATEGORY,
                "Who",
                "social_who_breakdown",
            ),
            (
                "when_single_metrics",
                "when: single cut",
                SOCIAL_WHO_CATEGORY,
                "When",
                "social_when_single",
            ),
            (
                "when_stream_rates",
                "when: streaming rates",
                SOCIAL_WHO_CATEGORY,
                "When",
                "social_when_rates",
            ),
            (
                "when_tolerance",
                "when: tolerance P/R/F1",
                SOCIAL_WHO_CATEGORY,
                "When",
                "social_when_tolerance",
            ),
            (
                "how_metrics",
                "how: judge scores",
                SOCIAL_WHO_CATEGORY,
                "How",
                "social_how",
            ),
            (
                "how_released",
                "how: the released averages",
                SOCIAL_WHO_CATEGORY,
                "How",
                "social_how_released",
            ),
            (
                "how_agreement",
                "how: judge agreement",
                SOCIAL_WHO_CATEGORY,
                "How",
                "social_how_agreement",
            ),
            (
                "social_profile",
                "who/when/how profile",
                SOCIAL_WHO_CATEGORY,
                "Profile",
                "social_profile",
            ),
            (
                "detector_prf",
                "detector P/R/F1",
                SOCIAL_STREAM_CATEGORY,
                "Tables",
                "social_detector",
            ),
            (
                "streaming_metrics",
                "streaming scores",
                SOCIAL_STREAM_CATEGORY,
                "Tables",
                "social_streaming",
            ),
            (
                "stream_judge_agreement",
                "streaming: judge agreement",
                SOCIAL_STREAM_CATEGORY,
                "Tables",
                "social_stream_agreement",
            ),
        ]
        if SOCIAL["human_scores"]:
            social.append(
                (
                    "judge_calibration",
                    "judges vs human scores",
                    SOCIAL_WHO_CATEGORY,
                    "How",
                    "social_judge_calibration",
                )
            )
        tables.update(
            _table(sout("metrics", f"{name}.csv"), label, category, sub, cap)
            for name, label, category, sub, cap in social
        )
    return tables


REPORT_TABLES = report_tables()


def rendered_tables():
    return [f"{stem}.{ext}" for stem in REPORT_TABLES for ext in ("html", "md", "tex")]


def summary_inputs(wildcards=None):
    inputs = {
        **filter_report_input(),
        "design": out("design", "design.csv"),
        "trials": out("ratings", "trials.csv"),
        "metrics": out("analysis", "metrics.csv"),
        # every model's responses: the finish reasons (and audio paths) of its calls
        "responses": [out("responses", f"{name}.csv") for name in FAM_MODELS],
        "glmm_summary": out("analysis", "glmm_summary.csv"),
        "glmm_contrasts": out("analysis", "glmm_contrasts.csv"),
        "rasch_fits": out("analysis", "rasch_fits.csv"),
    }
    if RELEASE_PREDICTION_FILES:
        inputs["release_predictions"] = out("release", "predictions.csv")
        inputs["release_report"] = out("release", "predictions_import_report.csv")
    if SOCIAL["enabled"]:
        inputs["social_profile"] = sout("metrics", "social_profile.csv")
        inputs["streaming_metrics"] = sout("metrics", "streaming_metrics.csv")
        inputs["social_timing"] = sout("metrics", "when_timing.csv")
        # every streaming job's call summary (streaming.STREAM_SUMMARY), all benchmarks
        inputs["stream_calls"] = stream_summaries()
    return inputs


SUMMARY_SECTIONS = [
    "inputs",
    "raters",
    "funnel",
    "coverage",
    "finish_reasons",
    "headline",
    "convergence",
    "glmm_contrasts",
] + (
    ["social", "streaming", "social_timing", "stream_calls"]
    if SOCIAL["enabled"]
    else []
)


def report_outputs():
    return [
        out("summary", "summary.html"),
        out("summary", "summary.md"),
        *rendered_tables(),
    ]
