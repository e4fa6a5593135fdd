rule select_clip_candidates:
    """An early and a late 20 s window per interaction, snapped to turn edges."""
    input:
        interactions=out("corpus", "interactions.csv"),
        segments=out("signals", "segments.csv"),
        speech=out("signals", "speech.csv"),
        signals=out("signals", "signals.csv"),
    output:
        candidates=out("clips", "clip_candidates.csv"),
    log:
        out("logs", "select_clip_candidates.log"),
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/media.yaml"
    resources:
        runtime=minutes(10),
    params:
        clips=config["clips"],
        turn_gap_s=config["filters"]["turn_gap_s"],
    script:
        "../../scripts/familiarity/select_clip_candidates.py"


rule apply_filters:
    """F1-F5 and the prompt audit: one row per interaction, values and reasons."""
    input:
        unpack(transcript_inputs),
        interactions=out("corpus", "interactions.csv"),
        signals=out("signals", "signals.csv"),
        segments=out("signals", "segments.csv"),
        candidates=out("clips", "clip_candidates.csv"),
    output:
        report=out("filters", "filter_report.csv"),
    log:
        out("logs", "apply_filters.log"),
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/media.yaml"
    resources:
        runtime=minutes(15),
    params:
        filters=config["filters"],
    script:
        "../../scripts/familiarity/apply_filters.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    select_clip_candidates,
    apply_filters,
