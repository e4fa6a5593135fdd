# omnisocial: rebuild a benchmark study with `snakemake --cores all [--use-conda]`.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


# The demo runs when no --configfile is given; a study's own config file never merges onto the
# demo (keys it leaves out take the schema's real-study defaults).
if not workflow.overwrite_configfiles:

    configfile: str(Path(workflow.basedir) / "config" / "demo.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/familiarity/common.smk"


# the design and stimuli: built from a corpus, or imported from a released data set
if config["study"]["design_source"] == "pipeline":

    include: "workflow/rules/familiarity/corpus.smk"
    include: "workflow/rules/familiarity/signals.smk"
    include: "workflow/rules/familiarity/filters.smk"
    include: "workflow/rules/familiarity/sampling.smk"
    include: "workflow/rules/familiarity/stimuli.smk"

else:

    include: "workflow/rules/familiarity/release.smk"


include: "workflow/rules/social_common.smk"
include: "workflow/rules/socialomni_common.smk"
include: "workflow/rules/duplexeval_common.smk"
include: "workflow/rules/social.smk"
include: "workflow/rules/socialomni.smk"
include: "workflow/rules/duplexeval.smk"
include: "workflow/rules/familiarity/inference.smk"
include: "workflow/rules/familiarity/release_predictions.smk"
include: "workflow/rules/familiarity/ratings.smk"
include: "workflow/rules/familiarity/analysis.smk"
include: "workflow/rules/familiarity/figures.smk"
include: "workflow/rules/report_common.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/paper_common.smk"
include: "workflow/rules/paper.smk"


# Aggregation targets and rules with well under a second of work (table renderings, the
# summary page): on a cluster they run in the main Snakemake process instead of each paying
# a submission, a queue wait and a workflow parse of its own.
localrules:
    all,
    social_all,
    socialomni_all,
    duplexeval_all,
    survey_materials,
    figures,
    render_tables,
    report_summary,


rule all:
    default_target: True
    input:
        final_outputs(),
        social_outputs(),
        report_outputs(),
        paper_outputs(),


# A real study's first run, before any rating is collected: `snakemake survey_materials`
# (the design, stimuli and survey lists; needs no ratings.exports).
rule survey_materials:
    input:
        survey_outputs(),


# Every paper figure of every benchmark, nothing else: `snakemake figures --forcerun ...` is not
# needed after a figure setting changes (figures.* are the figure rules' params).
rule figures:
    input:
        fam_figure_outputs(),
        social_figure_outputs(),


onsuccess:
    # the headline numbers on the console (rule report_summary); nothing when it was not built
    # (its explorer link relative to this folder: it opens from the terminal it is printed in)
    from omnisocial.summary import console_summary

    summary = Path(out("summary", "summary.md"))
    if summary.is_file():
        print(console_summary(summary), file=sys.stderr)
