# Config validation and shared paths of every study (each study's own input functions live in
# its folder: workflow/rules/familiarity/common.smk, social_common.smk).
import sys
from pathlib import Path

# This repository's root from this file's own folder (workflow/rules), not workflow.basedir:
# used as a module (`module omnisocial: snakefile: ...`), basedir is the outer workflow's.
REPO = Path(str(workflow.current_basedir)).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from omnisocial.config import check_inputs, check_study, validate_config  # noqa: E402
from omnisocial.familiarity.release import release_problems  # noqa: E402
from snakemake.exceptions import WorkflowError  # noqa: E402

# in place: defaults filled in and every mapping sorted by key, so a config that differs only
# in key order has the same params (Snakemake compares dict params in their key order)
validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
check_study(config)
# the corpus's folder and tables, a release's files and every API entry's key, before any job
# (names the key)
check_inputs(config, benchmark_problems=release_problems(config))

RESULTS = config["results"]
# cores of each parallel stage's job (config threads:, schema defaults: a real study's)
THREADS = config["threads"]


# A squeue-status cluster run stops before its first submission when the cluster forgets
# finished jobs sooner than the plugin checks (omnisocial.slurm); local runs, dry runs and the
# job steps inside a cluster job (executor slurm-jobstep) skip it. onstart: the executor is
# known only once the run starts, not while the Snakefile is parsed.
onstart:
    check_engines_at_start()
    if getattr(workflow.executor_plugin, "name", None) == "slurm":
        from omnisocial.slurm import check_min_job_age

        try:
            check_min_job_age(
                getattr(workflow.executor_settings, "status_command", None)
            )
        except ValueError as error:
            raise WorkflowError(str(error)) from None


def check_engines_at_start():
    """Each configured engine and device is there (or will be, under --use-conda) before any
    job runs (omnisocial.preflight): e.g. whisperx ASR names `make venv-asr`."""
    from omnisocial.familiarity.asr import asr_venv_python
    from omnisocial.preflight import Runtime, check_engines
    from snakemake.settings.types import DeploymentMethod

    executor = getattr(workflow.executor_plugin, "name", None)
    jobs = list(workflow.dag.needrun_jobs())
    models = {}  # the registry entries of the model jobs that will run
    for job in jobs:
        name = job.wildcards_dict.get("model")
        if name is not None:
            entries = FAM_MODELS if job.rule.name == "infer_model" else SOCIAL_RUNS
            where = "models" if job.rule.name == "infer_model" else "social.models"
            if name in entries:
                models[f"{where}.{name}"] = entries[name]
    runtime = Runtime(
        use_conda=DeploymentMethod.CONDA
        in workflow.deployment_settings.deployment_method,
        local=executor in (None, "local", "dryrun", "touch"),
        asr_venv=asr_venv_python,
        rules=frozenset(job.rule.name for job in jobs),
        models=tuple(sorted(models.items())),
    )
    try:
        check_engines(config, runtime)
    except ValueError as error:
        raise WorkflowError(str(error)) from None


ENVS = REPO / "envs"


def model_conda_env(models):
    """conda: of a model rule: the env file of the entry's family (omnisocial.models.entries.FAMILY_ENVS)."""
    from omnisocial.models.entries import model_env_file

    return lambda wildcards: str(ENVS / model_env_file(models[wildcards.model]))


def model_job_group(models):
    """group: of a model rule: the entry's cluster.group (null: a submission of its own).

    Only cluster runs use groups; an entry that calls nothing expensive (a baseline) can join
    the short rules' group instead of paying a queue wait and a status-check round of its own.
    """
    return lambda wildcards: (models[wildcards.model].get("cluster") or {}).get("group")


def failure_policy_config():
    """The inference keys that decide when a model job fails (omnisocial.models.runner.FailurePolicy)."""
    keys = ("max_failed_share", "max_consecutive_failures", "probe_backends")
    return {key: config["inference"][key] for key in keys}


# figures.formats: every figure rule declares its PNG (named, shown in the report) and these
# other formats, so a change of formats reruns the figure rules only
FIGURE_FORMATS = list(config["figures"]["formats"])


def figure_others(path, name):
    """The files of figure `name` besides its PNG, under `path("figures", ...)` (out or sout)."""
    return [path("figures", f"{name}.{ext}") for ext in FIGURE_FORMATS if ext != "png"]


def out(*parts):
    """A path under this study's results folder."""
    return str(Path(RESULTS, *parts))


# --- cluster resources ---
def default_partition():
    """The profile's default slurm_partition (default-resources); "" when none is set.

    A model job's partition must equal its group's (Snakemake refuses a group whose jobs ask
    for different partitions), so the entry's own partition falls back to this one. The
    default is read unevaluated (`raw`): its value needs a job context.
    """
    default = workflow.resource_settings.default_resources or {}
    value = default.get("slurm_partition")
    return str(getattr(value, "raw", value) or "")


def minutes(base):
    """A runtime resource (minutes) of `base`, doubled on every retry (a timeout is retried longer)."""
    return lambda wildcards, attempt: int(base * 2 ** (attempt - 1))


def model_job_resources(entry, key):
    """One cluster resource of a model job from its registry entry (omnisocial.models.cluster)."""
    from omnisocial.models.cluster import placement

    inference = config["inference"]
    placed = placement(
        entry, inference["default_mem_mb"], inference["transformers_mem_mb"]
    )
    if key == "slurm_partition":
        return placed.get(key) or default_partition()
    # 0, not "", where unset: a group sums its jobs' numbers but needs their strings equal,
    # and rules without these keys count as 0 (the plugin ignores a falsy gpu_model)
    if key == "gpu_model":
        return placed.get(key, 0)
    if key == "cpus_per_gpu":
        return placed.get(key, 4) if placed["gpu"] else 0
    return placed[key]


def fam_model_runtime(wildcards, input, attempt):
    """Minutes of infer_model: stimuli x modalities x prompt variants calls at the entry's latency."""
    from omnisocial.models.cluster import count_rows, runtime_minutes

    entry = FAM_MODELS[wildcards.model]
    modalities = [
        m for m in entry.get("modalities", ["text"]) if m in INFERENCE["modalities"]
    ]
    # a baseline reads no prompt: it runs once, not once per prompt variant
    variants = (
        1 if entry.get("backend") == "baseline" else len(INFERENCE["prompt_variants"])
    )
    calls = count_rows(input.manifest) * max(len(modalities), 1) * variants
    return runtime_minutes(entry, calls, attempt)


def social_model_runtime(wildcards, input, attempt):
    """Minutes of socialomni_model_replies: one call per who and when item at the entry's latency."""
    from omnisocial.models.cluster import count_rows, runtime_minutes

    calls = count_rows(input.who_items) + count_rows(input.when_items)
    return runtime_minutes(SOCIAL_RUNS[wildcards.model], calls, attempt)


def fam_model_resource(key):
    return lambda wildcards: model_job_resources(FAM_MODELS[wildcards.model], key)


def social_model_resource(key):
    return lambda wildcards: model_job_resources(SOCIAL_RUNS[wildcards.model], key)
