# The report's first page (rule report_summary) and the renderings of every reported table
# (rule render_table): HTML shown inline by `snakemake --report`, markdown and LaTeX for the paper,
# written beside each CSV. Functions in workflow/rules/report_common.smk.


rule render_table:
    """A reported table as HTML (shown in the report), markdown and LaTeX, beside its CSV."""
    input:
        csv="{stem}.csv",
    output:
        html=report(
            "{stem}.html",
            caption="../report/table.rst",
            category=lambda w: REPORT_TABLES[w.stem]["category"],
            subcategory=lambda w: REPORT_TABLES[w.stem]["subcategory"],
            labels=lambda w: {"table": REPORT_TABLES[w.stem]["label"]},
        ),
        md="{stem}.md",
        tex="{stem}.tex",
    log:
        "{stem}.render.log",
    wildcard_constraints:
        stem=REPORT_TABLE_PATTERN,
    conda:
        "../../envs/figures.yaml"
    params:
        caption=table_caption,
        title=lambda w: REPORT_TABLES[w.stem]["label"],
    script:
        "../scripts/render_table.py"


rule report_summary:
    """The first page: real or simulated inputs, filter funnel, model coverage, headline results, convergence."""
    input:
        unpack(summary_inputs),
    output:
        html=report(
            out("summary", "summary.html"),
            caption="../report/summary.rst",
            category=SUMMARY_CATEGORY,
            labels={"page": "summary"},
        ),
        md=out("summary", "summary.md"),
        tables=[out("summary", f"summary_{name}.csv") for name in SUMMARY_SECTIONS],
    log:
        out("logs", "report_summary.log"),
    conda:
        "../../envs/figures.yaml"
    params:
        config={
            key: config[key]
            for key in ("study", "corpus", "release", "ratings", "models", "social")
            if key in config
        },
        variant=config["inference"]["prompt_variants"][0],
    script:
        "../scripts/report_summary.py"
