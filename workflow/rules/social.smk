# Rules shared by both social benchmarks: the demo that serves both, the import of both, the judge
# calibration that compares both benchmarks' judges with human scores, and the `social_all` target.


rule social_all:
    """Build only the social benchmarks (who / when / how and streaming: socialomni_all + duplexeval_all)."""
    input:
        social_outputs(),
    # a target runs nothing; the env only satisfies tests/test_envs.py (every rule names one)
    conda:
        "../../envs/media.yaml"


if SOCIAL["source"] == "demo":

    rule social_demo:
        """Multi-party and visual-event clips in the released SocialOmni / Omni-DuplexEval formats."""
        output:
            directory(SOCIAL["demo_root"]),
        log:
            sout("logs", "social_demo.log"),
        benchmark:
            sout("benchmarks", "social_demo.tsv")
        conda:
            "../../envs/media.yaml"
        resources:
            runtime=minutes(20),
            mem_mb=1500,
        params:
            demo=SOCIAL["demo"],
        script:
            "../scripts/social/demo.py"


rule social_import:
    """Items, references, ground truth and streaming responses through the released-format importers."""
    input:
        unpack(social_sources),
    output:
        who_items=sout("items", "who_items.csv"),
        who_copies=sout("items", "who_copies.csv"),
        written_answers=sout("items", "written_answers.csv"),
        when_items=sout("items", "when_items.csv"),
        how_references=sout("items", "how_references.csv"),
        when_stream_items=sout("items", "when_stream_items.csv"),
        turns=sout("items", "turns.csv"),
        panels=sout("items", "panels.csv"),
        stream_items=sout("items", "stream_items.csv"),
        stream_events=sout("items", "stream_events.csv"),
        stream_responses=sout("items", "stream_responses_imported.csv"),
        errors=sout("items", "import_errors.csv"),
        timestamp_readings=sout("items", "timestamp_readings.csv"),
    log:
        sout("logs", "social_import.log"),
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(15),
    params:
        socialomni_root=social_roots()[0],
        duplexeval_root=social_roots()[1],
        duplexeval_items=SOCIAL["duplexeval_items"],
        duplexeval_split=SOCIAL["duplexeval_split"],
        duplexeval_media=sout("items", "duplexeval_media"),
        responses_root=SOCIAL["responses_root"],
        skip_bad_items=SOCIAL["skip_bad_items"],
        max_time_s=SOCIAL["max_time_s"],
        timestamps=SOCIAL["timestamps"],
        consistency_map=SOCIAL["consistency_map"],
        parser=SOCIAL["parser"],
    script:
        "../scripts/social/import.py"


if SOCIAL["human_scores"]:

    # Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
    localrules:
        social_judge_calibration,

    rule social_judge_calibration:
        """Spearman between the automatic judges and human scores of the same answers."""
        input:
            human=SOCIAL["human_scores"],
            how=sout("scores", "how_judgements.csv"),
            rtd=sout("scores", "rtd_scores.csv"),
            rtd_judges=sout("scores", "rtd_judge_scores.csv"),
            pr=sout("scores", "pr_scores.csv"),
            pr_judges=sout("scores", "pr_judge_scores.csv"),
        output:
            calibration=sout("metrics", "judge_calibration.csv"),
        log:
            sout("logs", "social_judge_calibration.log"),
        conda:
            "../../envs/media.yaml"
        resources:
            runtime=minutes(10),
        script:
            "../scripts/social/judge_calibration.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    social_import,
