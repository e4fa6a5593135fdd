rule sample_design:
    """Fully crossed site x relationship x gender design, n per cell, seeded."""
    input:
        report=out("filters", "filter_report.csv"),
        candidates=out("clips", "clip_candidates.csv"),
        interactions=out("corpus", "interactions.csv"),
    output:
        design=out("design", "design.csv"),
    log:
        out("logs", "sample_design.log"),
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/media.yaml"
    resources:
        runtime=minutes(10),
    params:
        sampling=config["sampling"],
    script:
        "../../scripts/familiarity/sample_design.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    sample_design,
