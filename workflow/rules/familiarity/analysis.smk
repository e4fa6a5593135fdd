# Familiarity study, statistics (docs/statistics.md): models, raters and crowd scored
# alike, paired tests, power, individual differences, Bayesian GLMM and Rasch difficulty.


rule score_familiarity:
    """Metrics of every model@variant, rater and crowd; non-answers; crowd curves; calibration; prompt sensitivity."""
    input:
        predictions=fam_predictions(),
        released=fam_released_predictions(),
        trials=out("ratings", "trials.csv"),
        design=out("design", "design.csv"),
    output:
        metrics=fam_table("metrics", "metrics"),
        nonanswer_accuracy=fam_table("nonanswer_accuracy", "nonanswer"),
        per_rater_sdt=fam_table("per_rater_sdt", "per_rater"),
        majority_votes=fam_table("majority_votes"),
        crowd_curves=fam_table("crowd_curves", "crowd_curves"),
        calibration=fam_table("calibration", "calibration"),
        prompt_sensitivity=fam_table("prompt_sensitivity", "prompt_sensitivity"),
    log:
        out("logs", "score_familiarity.log"),
    benchmark:
        out("benchmarks", "score_familiarity.tsv")
    conda:
        "../../../envs/stats.yaml"
    resources:
        runtime=minutes(20),
        mem_mb=2000,
    params:
        analysis={
            "seed": ANALYSIS["seed"],
            "crowd_resamples": ANALYSIS["crowd_resamples"],
            "calibration_bins": ANALYSIS["calibration_bins"],
            "calibration_bootstrap": ANALYSIS["calibration_bootstrap"],
        },
    script:
        "../../scripts/familiarity/score_familiarity.py"


rule rater_tests:
    """McNemar and TOST (best model vs crowd, modality pairs), power for the design, individual differences."""
    input:
        predictions=fam_predictions(),
        released=fam_released_predictions(),
        trials=out("ratings", "trials.csv"),
        design=out("design", "design.csv"),
        covariates=out("ratings", "covariates.csv"),
    output:
        mcnemar=fam_table("mcnemar", "mcnemar"),
        tost=fam_table("tost", "tost"),
        power=fam_table("power", "power"),
        individual_differences=fam_table("individual_differences", "individual"),
    log:
        out("logs", "rater_tests.log"),
    conda:
        "../../../envs/stats.yaml"
    resources:
        runtime=minutes(30),
    params:
        analysis={
            "seed": ANALYSIS["seed"],
            "tost_margin": ANALYSIS["tost_margin"],
            "tost_alpha": ANALYSIS["tost_alpha"],
            "tost_method": ANALYSIS["tost_method"],
            "power": ANALYSIS["power"],
        },
    script:
        "../../scripts/familiarity/rater_tests.py"


rule glmm:
    """Bayesian GLMM correct ~ 0 + modality + (1|rater) + (1|dyad) on the human trials, with convergence flags."""
    input:
        trials=out("ratings", "trials.csv"),
    output:
        glmm_summary=fam_table("glmm_summary", "glmm_summary"),
        glmm_contrasts=fam_table("glmm_contrasts", "glmm_contrasts"),
    log:
        out("logs", "glmm.log"),
    benchmark:
        out("benchmarks", "glmm.tsv")
    conda:
        "../../../envs/stats.yaml"
    threads: THREADS["glmm"]
    resources:
        runtime=minutes(120),
        mem_mb=4000,
    params:
        glmm=ANALYSIS["glmm"],
        seed=ANALYSIS["seed"],
    script:
        "../../scripts/familiarity/glmm.py"


rule rasch:
    """Rasch dyad difficulty and person ability per modality x rater type, correlations across modalities, humans vs models."""
    input:
        predictions=fam_predictions(),
        released=fam_released_predictions(),
        trials=out("ratings", "trials.csv"),
        design=out("design", "design.csv"),
    output:
        rasch_difficulty=fam_table("rasch_difficulty", "rasch_difficulty"),
        rasch_fits=fam_table("rasch_fits"),
        rasch_persons=fam_table("rasch_persons", "rasch_persons"),
        rasch_correlations=fam_table("rasch_correlations", "rasch_correlations"),
        rasch_partial=fam_table("rasch_partial", "rasch_partial"),
    log:
        out("logs", "rasch.log"),
    benchmark:
        out("benchmarks", "rasch.tsv")
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/stats.yaml"
    threads: THREADS["rasch"]
    resources:
        runtime=minutes(120),
        mem_mb=4000,
    params:
        rasch=ANALYSIS["rasch"],
        seed=ANALYSIS["seed"],
    script:
        "../../scripts/familiarity/rasch.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    score_familiarity,
