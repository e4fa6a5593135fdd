# Familiarity study, figures: one rule per family, PNG + PDF under figures/, in the report.
# Each family's tables are listed in omnisocial.familiarity.figures.INPUTS.


rule fam_figure_accuracy:
    """Accuracy by modality: raters, crowd, models (95% Wilson intervals)."""
    input:
        per_rater_sdt=out("analysis", "per_rater_sdt.csv"),
        metrics=out("analysis", "metrics.csv"),
    output:
        png=fam_figure_png("accuracy"),
        others=figure_others(out, "accuracy"),
    log:
        out("logs", "fam_figure_accuracy.log"),
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        family="accuracy",
        options=FIGURE_OPTIONS,
    script:
        "../../scripts/familiarity/figure.py"


rule fam_figure_sdt:
    """d' against c per modality: raters, crowd, models."""
    input:
        per_rater_sdt=out("analysis", "per_rater_sdt.csv"),
        metrics=out("analysis", "metrics.csv"),
    output:
        png=fam_figure_png("sdt"),
        others=figure_others(out, "sdt"),
    log:
        out("logs", "fam_figure_sdt.log"),
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        family="sdt",
        options=FIGURE_OPTIONS,
    script:
        "../../scripts/familiarity/figure.py"


rule fam_figure_crowds:
    """Majority-vote accuracy against crowd size, best model per modality."""
    input:
        crowd_curves=out("analysis", "crowd_curves.csv"),
        metrics=out("analysis", "metrics.csv"),
    output:
        png=fam_figure_png("crowds"),
        others=figure_others(out, "crowds"),
    log:
        out("logs", "fam_figure_crowds.log"),
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        family="crowds",
        options=FIGURE_OPTIONS,
    script:
        "../../scripts/familiarity/figure.py"


rule fam_figure_difficulty:
    """Rasch dyad difficulty across modalities and between humans and models, with convergence flags."""
    input:
        rasch_difficulty=out("analysis", "rasch_difficulty.csv"),
        rasch_fits=out("analysis", "rasch_fits.csv"),
    output:
        png=fam_figure_png("difficulty"),
        others=figure_others(out, "difficulty"),
    log:
        out("logs", "fam_figure_difficulty.log"),
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        family="difficulty",
        options=FIGURE_OPTIONS,
    script:
        "../../scripts/familiarity/figure.py"


rule fam_figure_glmm:
    """GLMM modality contrasts with 95% HDIs, P(> 0) and convergence flags (R-hat, ESS in the table)."""
    input:
        glmm_summary=out("analysis", "glmm_summary.csv"),
        glmm_contrasts=out("analysis", "glmm_contrasts.csv"),
    output:
        png=fam_figure_png("glmm"),
        others=figure_others(out, "glmm"),
    log:
        out("logs", "fam_figure_glmm.log"),
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        family="glmm",
        options=FIGURE_OPTIONS,
    script:
        "../../scripts/familiarity/figure.py"


rule fam_figure_calibration:
    """Reliability diagrams of model confidence with ECE and AUROC."""
    input:
        calibration=out("analysis", "calibration.csv"),
    output:
        png=fam_figure_png("calibration"),
        others=figure_others(out, "calibration"),
    log:
        out("logs", "fam_figure_calibration.log"),
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        family="calibration",
        options=FIGURE_OPTIONS,
    script:
        "../../scripts/familiarity/figure.py"


rule fam_figure_power:
    """Dyads needed to detect a difference (McNemar) or show equivalence (TOST)."""
    input:
        power=out("analysis", "power.csv"),
    output:
        png=fam_figure_png("power"),
        others=figure_others(out, "power"),
    log:
        out("logs", "fam_figure_power.log"),
    conda:
        "../../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        family="power",
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
    fam_figure_accuracy,
    fam_figure_sdt,
    fam_figure_crowds,
    fam_figure_difficulty,
    fam_figure_glmm,
    fam_figure_calibration,
    fam_figure_power,
    fam_figure_overview,
    fam_figure_diagnostics,
