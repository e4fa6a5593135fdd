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
    generated = Path(RELEASE["root"] or ".", GENERATED_MARK)
    if FROM_RELEASE and RELEASE["root"] and generated.is_file():
        # a generated release (omnisocial friendbench-demo): the summary says it is simulated
        inputs["generated_release"] = str(generated)
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
        out("explorer"),
        out("summary", "explorer.html"),
        *rendered_tables(),
    ]


# --- the results explorer (rule explorer) -------------------------------------------------


def explorer_familiarity_inputs():
    inputs = {
        **filter_report_input(),
        "design": out("design", "design.csv"),
        "manifest": out("stimuli", "manifest.csv"),
        "trials": out("ratings", "trials.csv"),
        "majority_votes": out("analysis", "majority_votes.csv"),
        "predictions": fam_predictions(),
        "responses": [out("responses", f"{name}.csv") for name in FAM_MODELS],
        "rasch_difficulty": out("analysis", "rasch_difficulty.csv"),
    }
    if (
        config["study"]["design_source"] == "pipeline"
    ):  # a released design has no signals
        inputs["speech"] = out("signals", "speech.csv")
    return inputs


def explorer_socialomni_inputs():
    if not SOCIAL["enabled"]:
        return {}
    replies = list(
        dict.fromkeys(
            social_replies("who") + social_replies("when") + social_replies("how")
        )
    )
    return {
        "who_items": sout("items", "who_items.csv"),
        "when_items": sout("items", "when_items.csv"),
        "when_stream_items": sout("items", "when_stream_items.csv"),
        "turns": sout("items", "turns.csv"),
        "who_scores": sout("scores", "who_scores.csv"),
        "when_single_scores": sout("scores", "when_single_scores.csv"),
        "when_stream_scores": sout("scores", "when_stream_scores.csv"),
        "replies": replies,
        "how_judgements": sout("scores", "how_judgements.csv"),
        "stream_steps": social_stream_files("steps"),
    }


def explorer_duplexeval_inputs():
    if not SOCIAL["enabled"]:
        return {}
    return {
        "stream_items": sout("items", "stream_items.csv"),
        "stream_events": sout("items", "stream_events.csv"),
        "responses": [
            sout("baselines", "stream_baseline_responses.csv"),
            sout("items", "stream_responses_imported.csv"),
            *duplex_streamed("responses"),
        ],
        "rtd_sentences": sout("scores", "rtd_sentences.csv"),
        "rtd_scores": sout("scores", "rtd_scores.csv"),
        "pr_event_scores": sout("scores", "pr_event_scores.csv"),
        "pr_scores": sout("scores", "pr_scores.csv"),
        "rtd_judge_scores": sout("scores", "rtd_judge_scores.csv"),
        "pr_judge_scores": sout("scores", "pr_judge_scores.csv"),
    }


def explorer_inputs(wildcards=None):
    """Every table the explorer reads, named by benchmark prefix (fam_, so_, de_): the script
    hands each benchmark its own (params)."""
    named = {}
    for prefix, inputs in (
        ("fam_", explorer_familiarity_inputs()),
        ("so_", explorer_socialomni_inputs()),
        ("de_", explorer_duplexeval_inputs()),
    ):
        named.update({prefix + name: path for name, path in inputs.items()})
    return named


def explorer_media(wildcards=None):
    """The folders of the media the explorer links: the stimuli a pipeline design renders (a
    released design's manifest points into its release) and the social benchmarks' data (the
    demo's folder, or the released roots). Their tables above say which files."""
    folders = {}
    if config["study"]["design_source"] == "pipeline":
        folders["fam_media"] = out("stimuli", "media")
    if SOCIAL["enabled"]:
        if SOCIAL["source"] == "demo":
            folders["social_data"] = SOCIAL["demo_root"]
        else:
            folders["socialomni_root"], folders["duplexeval_root"] = social_roots()
    return folders
