# Familiarity study, human ratings (docs/benchmarks/familiarity.md#ratings): planned-missing design and survey
# lists, the demo's simulated rater panel, and the import of survey exports into trials.


rule rating_design:
    """Blocks of dyads, rater assignments per modality and every rater's survey list."""
    input:
        design=out("design", "design.csv"),
    output:
        blocks=out("ratings", "blocks.csv"),
        assignments=out("ratings", "assignments.csv"),
        surveys=directory(out("ratings", "surveys")),
    log:
        out("logs", "rating_design.log"),
    conda:
        "../../../envs/stats.yaml"
    resources:
        runtime=minutes(10),
    params:
        n_blocks=RATINGS["n_blocks"],
        blocks_per_rater=RATINGS["blocks_per_rater"],
        raters_per_modality=RATINGS["raters_per_modality"],
        seed=RATINGS["seed"],
    script:
        "../../scripts/familiarity/rating_design.py"


if RATINGS["source"] == "simulated":

    # Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
    localrules:
        simulate_ratings,

    rule simulate_ratings:
        """The demo's SIMULATED rater panel, written as survey exports (file names say 'simulated')."""
        input:
            design=out("design", "design.csv"),
            blocks=out("ratings", "blocks.csv"),
            assignments=out("ratings", "assignments.csv"),
        output:
            **{m: simulated_export(m) for m in RATED_MODALITIES},
            covariates=out("ratings", "simulated", "simulated_covariates_export.csv"),
        log:
            out("logs", "simulate_ratings.log"),
        conda:
            "../../../envs/stats.yaml"
        resources:
            runtime=minutes(10),
        params:
            simulation=RATINGS["simulation"],
            seed=RATINGS["seed"],
        script:
            "../../scripts/familiarity/simulate_ratings.py"


if RATINGS["source"] == "experiment":

    # Seconds of work: on a cluster it runs on the login node.
    localrules:
        collect_ratings,

    rule collect_ratings:
        """The collection server's sessions as long exports, questionnaires and a sessions table."""
        input:
            unpack(collected_inputs),
            experiments=experiment_outputs(),
        output:
            **{m: collected_export(m) for m in RATED_MODALITIES},
            covariates=out("ratings", "collected", "covariates_export.csv"),
            sessions=out("ratings", "collected", "sessions.csv"),
        log:
            out("logs", "collect_ratings.log"),
        conda:
            "../../../envs/stats.yaml"
        resources:
            runtime=minutes(10),
        params:
            modalities=RATED_MODALITIES,
            # the study's pseudonym key (frozen.pseudonym): the rows name raters by pseudonym
            pseudonym_folder=PSEUDONYM_FOLDER,
            design_keys=DESIGN_KEYS,
        script:
            "../../scripts/familiarity/collect_ratings.py"


rule import_ratings:
    """Survey exports into one trial table, an import report (every trial accounted for) and covariates.

    Fails when a modality lost more answers than ratings.max_lost_share allows or imported none.
    """
    input:
        unpack(rating_exports),
        design=out("design", "design.csv"),
        manifest=out("stimuli", "manifest.csv"),
    output:
        trials=out("ratings", "trials.csv"),
        report=out("ratings", "import_report.csv"),
        covariates=out("ratings", "covariates.csv"),
    log:
        out("logs", "import_ratings.log"),
    conda:
        "../../../envs/stats.yaml"
    resources:
        runtime=minutes(10),
    params:
        source=RATINGS["source"],
        modalities=RATED_MODALITIES,
        raters_per_modality=RATINGS["raters_per_modality"],
        exports=RATINGS["exports"],
        max_lost_share=RATINGS["max_lost_share"],
        mapping=RATINGS["mapping"],
        covariate_mapping=RATINGS["covariates"]["mapping"],
        simulation=RATINGS["simulation"],
        experiment=RATINGS["experiment"],
        pseudonym_folder=PSEUDONYM_FOLDER,
        design_keys=DESIGN_KEYS,
    script:
        "../../scripts/familiarity/import_ratings.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    rating_design,
    import_ratings,


rule rating_experiment:
    """One self-contained browser experiment (jsPsych) per rated modality (docs/rating-experiment.md)."""
    input:
        design=out("design", "design.csv"),
        blocks=out("ratings", "blocks.csv"),
        assignments=out("ratings", "assignments.csv"),
        surveys=out("ratings", "surveys"),
        media=out("stimuli", "media"),
        lock=str(REPO / "package-lock.json"),
        practice=lambda w: RATINGS["experiment"]["practice"][w.modality],
    output:
        directory(out("ratings", "experiment", "{modality}")),
    log:
        out("logs", "rating_experiment_{modality}.log"),
    wildcard_constraints:
        modality="text|audio|video",
    conda:
        "../../../envs/stats.yaml"
    resources:
        runtime=minutes(10),
    params:
        # what the page shows and the server's settings (not where data are collected: no build input)
        settings={
            k: v
            for k, v in RATINGS["experiment"].items()
            if k not in ("collected", "jatos_results", "jatos_ids")
        },
        jspsych_dir=str(REPO / RATINGS["experiment"]["jspsych_dir"]),
        # what decides the lists (recorded in build.json; frozen at the first collected session)
        design_keys=DESIGN_KEYS,
    script:
        "../../scripts/familiarity/rating_experiment.py"


localrules:
    rating_experiment,


rule rating_jatos:
    """The experiment as a JATOS study archive (.jzip, imported through JATOS's GUI; docs/rating-experiment.md)."""
    input:
        out("ratings", "experiment", "{modality}"),
    output:
        out("ratings", "jatos", "{modality}.jzip"),
    log:
        out("logs", "rating_jatos_{modality}.log"),
    wildcard_constraints:
        modality="text|audio|video",
    conda:
        "../../../envs/stats.yaml"
    resources:
        runtime=minutes(10),
    params:
        # the study's uuids: made on the first build and kept (not an output: never remade)
        ids=lambda w: os.path.join(
            RATINGS["experiment"]["jatos_ids"] or out("ratings", "jatos", "ids"),
            f"{w.modality}.json",
        ),
    script:
        "../../scripts/familiarity/rating_jatos.py"


localrules:
    rating_jatos,
