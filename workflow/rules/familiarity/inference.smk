# Familiarity study, models (docs/benchmarks/familiarity.md#inference): every registry model on every stimulus it
# supports, and the offline baselines. The registry is validated here, before any job runs.
rule baseline_predictions:
    """Behavioural features (turn-taking, prosody) and cross-validated behavioural, chance and majority predictions."""
    input:
        manifest=out("stimuli", "manifest.csv"),
        design=out("design", "design.csv"),
        segments=out("signals", "segments.csv"),
    output:
        features=out("baselines", "features.csv"),
        predictions=out("predictions", "baselines.csv"),
    log:
        out("logs", "baseline_predictions.log"),
    benchmark:
        out("benchmarks", "baseline_predictions.tsv")
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/inference.yaml"
    resources:
        runtime=minutes(15),
        mem_mb=1000,
    params:
        baselines=config["baselines"],
        merge_gap_s=config["filters"]["turn_gap_s"],
    script:
        "../../scripts/familiarity/baseline_predictions.py"


rule infer_model:
    """One registry model on every stimulus x prompt variant (resumable cache under cache/, never deleted)."""
    input:
        unpack(fam_model_inputs),
    output:
        predictions=out("predictions", "{model}.csv"),
        responses=out("responses", "{model}.csv"),
    log:
        out("logs", "infer_model_{model}.log"),
    benchmark:
        out("benchmarks", "infer_model_{model}.tsv")
    wildcard_constraints:
        model=FAM_MODEL_PATTERN,
    priority: CHAIN_PRIORITY
    group:
        model_job_group(FAM_MODELS)
    conda:
        model_conda_env(FAM_MODELS)
    resources:
        gpu=fam_model_resource("gpu"),
        mem_mb=fam_model_resource("mem_mb"),
        runtime=fam_model_runtime,
        slurm_partition=fam_model_resource("slurm_partition"),
        gpu_model=fam_model_resource("gpu_model"),
        cpus_per_gpu=fam_model_resource("cpus_per_gpu"),
    params:
        entry=fam_model_entry,
        modalities=INFERENCE["modalities"],
        variants=INFERENCE["prompt_variants"],
        cache=fam_model_cache,
        failure_policy=failure_policy_config(),
    script:
        "../../scripts/familiarity/infer_model.py"
