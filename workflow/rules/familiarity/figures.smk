# Familiarity study, figures: PNG + PDF (figures.formats) under figures/, in the report. The
# tables each result-figure family reads are listed in omnisocial.familiarity.figures.INPUTS.


rule fam_figures:
    """The result figures, one per family of omnisocial.familiarity.figures.FAMILIES.

    Accuracy by modality (95% Wilson intervals); d' against c; majority-vote accuracy against
    crowd size; Rasch dyad difficulty with convergence flags; GLMM modality contrasts with 95%
    HDIs and P(> 0); reliability diagrams with ECE and AUROC; dyads needed for McNemar and TOST.
    One job draws the seven: Python and the plotting libraries start once (docs/performance.md).
    """
    input:
        per_rater_sdt=out("analysis", "per_rater_sdt.csv"),
        metrics=out("analysis", "metrics.csv"),
        crowd_curves=out("analysis", "crowd_curves.csv"),
        rasch_difficulty=out("analysis", "rasch_difficulty.csv"),
        rasch_fits=out("analysis", "rasch_fits.csv"),
        glmm_summary=out("analysis", "glmm_summary.csv"),
        glmm_contrasts=out("analysis", "glmm_contrasts.csv"),
        calibration=out("analysis", "calibration.csv"),
        power=out("analysis", "power.csv"),
    output:
        accuracy=fam_figure_png("accuracy"),
        accuracy_others=figure_others(out, "accuracy"),
        sdt=fam_figure_png("sdt"),
        sdt_others=figure_others(out, "sdt"),
        crowds=fam_figure_png("crowds"),
        crowds_others=figure_others(out, "crowds"),
        difficulty=fam_figure_png("difficulty"),
        difficulty_others=figure_others(out, "difficulty"),
        glmm=fam_figure_png("glmm"),
        glmm_others=figure_others(out, "glmm"),
        calibration=fam_figure_png("calibration"),
        calibration_others=figure_others(out, "calibration"),
        power=fam_figure_png("power"),
        power_others=figure_others(out, "power"),
    log:
        out("logs", "fam_figures.log"),
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        options=FIGURE_OPTIONS,
    script:
        "../../scripts/familiarity/figure.py"


rule fam_figure_overview:
    """Filter funnel (CONSORT-style, from the filter report) and model coverage (answered / asked)."""
    input:
        unpack(filter_report_input),
        design=out("design", "design.csv"),
        metrics=out("analysis", "metrics.csv"),
    output:
        funnel_png=report(
            out("figures", "funnel.png"),
            caption="../../report/fam_fig_funnel.rst",
            category="1. Corpus and filters",
            subcategory="Figures",
            labels={"figure": "filter funnel"},
        ),
        funnel_others=figure_others(out, "funnel"),
        coverage_png=fam_figure_png("coverage"),
        coverage_others=figure_others(out, "coverage"),
    log:
        out("logs", "fam_figure_overview.log"),
    conda:
        "../../../envs/figures.yaml"
    params:
        figure_settings=config["figures"],
        corpus_source=CORPUS["source"],
        design_source=config["study"]["design_source"],
    script:
        "../../scripts/familiarity/overview_figures.py"


rule fam_figure_diagnostics:
    """Confusion matrices, accuracy per design cell, prompt-variant sensitivity, person-item map."""
    input:
        predictions=fam_predictions(),
        trials=out("ratings", "trials.csv"),
        design=out("design", "design.csv"),
        prompt_sensitivity=out("analysis", "prompt_sensitivity.csv"),
        rasch_difficulty=out("analysis", "rasch_difficulty.csv"),
        rasch_persons=out("analysis", "rasch_persons.csv"),
        rasch_fits=out("analysis", "rasch_fits.csv"),
    output:
        confusion_png=fam_figure_png("confusion"),
        confusion_others=figure_others(out, "confusion"),
        cells_png=fam_figure_png("cell_accuracy"),
        cells_others=figure_others(out, "cell_accuracy"),
        prompts_png=fam_figure_png("prompt_sensitivity"),
        prompts_others=figure_others(out, "prompt_sensitivity"),
        map_png=fam_figure_png("person_item_map"),
        map_others=figure_others(out, "person_item_map"),
    log:
        out("logs", "fam_figure_diagnostics.log"),
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        options=FIGURE_OPTIONS,
        corpus_source=CORPUS["source"],
    script:
        "../../scripts/familiarity/diagnostic_figures.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    fam_figures,
    fam_figure_overview,
    fam_figure_diagnostics,
