# The numbers a paper's results section quotes (omnisocial.paper; docs/outputs.md#paper): for every
# benchmark the study runs, numbers.tex (one LaTeX macro per number), numbers.json and a draft
# results.md, read from the analysis tables. Functions in workflow/rules/paper_common.smk.


rule paper:
    """Every benchmark's paper numbers (numbers.tex, numbers.json) and draft results (results.md)."""
    input:
        paper_outputs(),
    # a target runs nothing; the env only satisfies tests/test_envs.py (every rule names one)
    conda:
        "../../envs/figures.yaml"


rule paper_familiarity:
    """The familiarity study's numbers, one LaTeX macro each, and its draft results section."""
    input:
        **paper_tables("familiarity", out),
        **paper_release_inputs(),
    output:
        **paper_files(RESULTS, "paper"),
    log:
        out("logs", "paper_familiarity.log"),
    conda:
        "../../envs/figures.yaml"
    params:
        benchmark="familiarity",
        config=PAPER_SETTINGS,
    script:
        "../scripts/paper.py"


if SOCIAL["enabled"]:

    rule paper_socialomni:
        """The who / when / how numbers, one LaTeX macro each, and their draft results section."""
        input:
            **paper_tables("socialomni", sout),
        output:
            **paper_files(SOCIAL["results"], "paper", "socialomni"),
        log:
            sout("logs", "paper_socialomni.log"),
        conda:
            "../../envs/figures.yaml"
        params:
            benchmark="socialomni",
            config=PAPER_SETTINGS,
        script:
            "../scripts/paper.py"

    rule paper_streaming:
        """The streaming numbers, one LaTeX macro each, and their draft results section."""
        input:
            **paper_tables("streaming", sout),
        output:
            **paper_files(SOCIAL["results"], "paper", "streaming"),
        log:
            sout("logs", "paper_streaming.log"),
        conda:
            "../../envs/figures.yaml"
        params:
            benchmark="streaming",
            config=PAPER_SETTINGS,
        script:
            "../scripts/paper.py"

    localrules:
        paper_socialomni,
        paper_streaming,


# Well under a second each: on a cluster they run in the main Snakemake process.
localrules:
    paper,
    paper_familiarity,
