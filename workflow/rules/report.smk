# The report's first page (rule report_summary) and the renderings of every reported table
# (rule render_tables): HTML shown inline by `snakemake --report`, markdown and LaTeX for the paper,
# written beside each CSV. Functions in workflow/rules/report_common.smk.


# One job for every table (a job a table paid a Python start-up each for well under a second of
# work). Only `all` asks for the renderings, so a partial target never pulls in other stages.
rule render_tables:
    """Every reported table as HTML (shown in the report, captioned by its own rst), markdown and
    LaTeX, beside its CSV."""
    input:
        [f"{stem}.csv" for stem in REPORT_TABLES],
    output:
        html=[
            report(
                f"{stem}.html",
                caption=f"../report/{table['caption']}.rst",
                category=table["category"],
                subcategory=table["subcategory"],
                labels={"table": table["label"]},
            )
            for stem, table in REPORT_TABLES.items()
        ],
        md=[f"{stem}.md" for stem in REPORT_TABLES],
        tex=[f"{stem}.tex" for stem in REPORT_TABLES],
    log:
        out("logs", "render_tables.log"),
    conda:
        "../../envs/figures.yaml"
    params:
        titles=[table["label"] for table in REPORT_TABLES.values()],  # one a CSV of input
    script:
        "../scripts/render_tables.py"


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
        # a link only: the summary does not wait for the explorer (rule explorer, in `all`)
        explorer="../explorer/index.html",  # out("explorer") beside out("summary")
    script:
        "../scripts/report_summary.py"


rule explorer:
    """The results explorer (docs/explorer.md): one static page, its items and the stimuli they
    link, every item of every benchmark beside the truth and every answer."""
    input:
        unpack(explorer_inputs),
        unpack(explorer_media),
    output:
        folder=directory(out("explorer")),
        # the report's entry: a page that links the explorer (an HTML report cannot hold a folder)
        link=report(
            out("summary", "explorer.html"),
            caption="../report/explorer.rst",
            category=SUMMARY_CATEGORY,
            labels={"page": "explorer"},
        ),
    log:
        out("logs", "explorer.log"),
    benchmark:
        out("benchmarks", "explorer.tsv")
    conda:
        "../../envs/stats.yaml"
    params:
        title=f"omnisocial explorer: {config['results']}",
        familiarity=list(explorer_familiarity_inputs()),
        socialomni=list(explorer_socialomni_inputs()),
        duplexeval=list(explorer_duplexeval_inputs()),
        socialomni_root=social_roots()[0] if SOCIAL["enabled"] else "",
        duplexeval_root=social_roots()[1] if SOCIAL["enabled"] else "",
    script:
        "../scripts/explorer.py"
