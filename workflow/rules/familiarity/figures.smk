# Familiarity study, figures: one rule per family, PNG + PDF under figures/, in the report.
# Each family's tables are listed in omnisocial.familiarity.figures.INPUTS.


rule fam_figure_accuracy:
    """Accuracy by modality: raters, crowd, models (95% Wilson intervals)."""
    input:
        per_rater_sdt=out("analysis", "per_rater_sdt.csv"),
        metrics=out("analysis", "metrics.csv"),
    output:
        png=fam_figure_png("accuracy"),
        pdf=out("figures", "accuracy.pdf"),
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
        pdf=out("figures", "sdt.pdf"),
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
        pdf=out("figures", "crowds.pdf"),
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
        pdf=out("figures", "difficulty.pdf"),
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
        glmm_contrasts=out("analysis", "glmm_contrasts.csv"),
    output:
        png=fam_figure_png("glmm"),
        pdf=out("figures", "glmm.pdf"),
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
        pdf=out("figures", "calibration.pdf"),
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
        pdf=out("figures", "power.pdf"),
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
        funnel_pdf=out("figures", "funnel.pdf"),
        coverage_png=fam_figure_png("coverage"),
        coverage_pdf=out("figures", "coverage.pdf"),
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
        confusion_pdf=out("figures", "confusion.pdf"),
        cells_png=fam_figure_png("cell_accuracy"),
        cells_pdf=out("figures", "cell_accuracy.pdf"),
        prompts_png=fam_figure_png("prompt_sensitivity"),
        prompts_pdf=out("figures", "prompt_sensitivity.pdf"),
        map_png=fam_figure_png("person_item_map"),
        map_pdf=out("figures", "person_item_map.pdf"),
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
