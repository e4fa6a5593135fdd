# omnisocial: rebuild a benchmark study with `snakemake --cores all [--use-conda]`.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/signals.smk"
include: "workflow/rules/filters.smk"
include: "workflow/rules/sampling.smk"
include: "workflow/rules/stimuli.smk"
include: "workflow/rules/social_common.smk"
include: "workflow/rules/socialomni_common.smk"
include: "workflow/rules/social_shared.smk"
include: "workflow/rules/socialomni.smk"
include: "workflow/rules/duplexeval.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/ratings.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/figures.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
        social_outputs(),
