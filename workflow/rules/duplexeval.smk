# Streaming (Omni-DuplexEval-style) benchmark: caption and detector baselines, rtd / pr scoring, figure.
# Items come from social_import (social.smk); `duplexeval_all` builds this benchmark alone.


rule duplexeval_all:
    """Build only the streaming benchmark (Omni-DuplexEval-style)."""
    input:
        duplexeval_outputs(),
        duplex_streamed("summary"),
    # a target runs nothing; the env only satisfies tests/test_envs.py (every rule names one)
    conda:
        "../../envs/media.yaml"


rule duplexeval_baselines:
    """Delayed ground-truth captions (real-time description) and the frame-difference detector (reminders)."""
    input:
        stream_items=sout("items", "stream_items.csv"),
        stream_events=sout("items", "stream_events.csv"),
    output:
        responses=sout("baselines", "stream_baseline_responses.csv"),
        detections=sout("baselines", "detections.csv"),
        prf=sout("metrics", "detector_prf.csv"),
    log:
        sout("logs", "social_stream_baselines.log"),
    benchmark:
        sout("benchmarks", "social_stream_baselines.tsv")
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(30),
    params:
        root=social_roots()[1],
        caption_delay_s=SOCIAL["streaming"]["caption_delay_s"],
        detector=SOCIAL["streaming"]["detector"],
        deltas=SOCIAL["streaming"]["deltas"],
    script:
        "../scripts/duplexeval/baselines.py"


rule duplexeval_stream_segments:
    """Each stream item cut once into the video segments its steps need (shared by every streamed model)."""
    input:
        stream_items=sout("items", "stream_items.csv"),
    output:
        directory(sout("duplexeval_stream_media", "video")),
    log:
        sout("logs", "duplexeval_stream_segments.log"),
    benchmark:
        sout("benchmarks", "duplexeval_stream_segments.tsv")
    conda:
        "../../envs/media.yaml"
    threads: THREADS["duplexeval_stream_segments"]
    resources:
        runtime=minutes(60),
    params:
        root=social_roots()[1],
        segments_root=lambda wildcards, output: str(Path(output[0]).parent),
        step_s=SOCIAL["streaming"]["stream_step_s"],
        window_s=SOCIAL["streaming"]["stream_window_s"],
    script:
        "../scripts/duplexeval/stream_segments.py"


rule duplexeval_stream_model:
    """A registry model streamed through real-time description and reminders to each clip's end; released {split}/{id}.json files."""
    input:
        stream_items=sout("items", "stream_items.csv"),
        segments=sout("duplexeval_stream_media", "video"),
    output:
        folder=directory(sout("stream", "duplexeval", "{model}")),
        responses=sout("stream", "duplexeval", "{model}_responses.csv"),
        steps=sout("stream", "duplexeval", "{model}_steps.csv"),
        summary=sout("stream", "duplexeval", "{model}_summary.csv"),
    log:
        sout("logs", "duplexeval_stream_model_{model}.log"),
    benchmark:
        sout("benchmarks", "duplexeval_stream_model_{model}.tsv")
    wildcard_constraints:
        model=DUPLEX_STREAM_PATTERN,
    group:
        model_job_group(DUPLEX_STREAM_MODELS)
    conda:
        model_conda_env(DUPLEX_STREAM_MODELS)
    resources:
        mem_mb=lambda wildcards: model_job_resources(
            DUPLEX_STREAM_MODELS[wildcards.model], "mem_mb"
        ),
        gpu=lambda wildcards: model_job_resources(
            DUPLEX_STREAM_MODELS[wildcards.model], "gpu"
        ),
        runtime=duplex_stream_runtime,
        slurm_partition=lambda wildcards: model_job_resources(
            DUPLEX_STREAM_MODELS[wildcards.model], "slurm_partition"
        ),
        gpu_model=lambda wildcards: model_job_resources(
            DUPLEX_STREAM_MODELS[wildcards.model], "gpu_model"
        ),
        cpus_per_gpu=lambda wildcards: model_job_resources(
            DUPLEX_STREAM_MODELS[wildcards.model], "cpus_per_gpu"
        ),
    params:
        entry=lambda wildcards: DUPLEX_STREAM_MODELS[wildcards.model],
        root=social_roots()[1],
        segments_root=lambda wildcards, input: str(Path(input.segments).parent),
        # the model's append-only result store (not an output, so never deleted)
        cache=lambda wildcards: sout(
            "cache", f"duplexeval_stream_{wildcards.model}.jsonl"
        ),
        step_s=SOCIAL["streaming"]["stream_step_s"],
        window_s=SOCIAL["streaming"]["stream_window_s"],
        failure_policy=failure_policy_config(),
    script:
        "../scripts/duplexeval/stream_model.py"


rule duplexeval_llm_judge:
    """An LLM judge (registry entry) on the streaming responses: sentences with their window's frames, responses, reminder windows."""
    input:
        stream_items=sout("items", "stream_items.csv"),
        baselines=sout("baselines", "stream_baseline_responses.csv"),
        imported=sout("items", "stream_responses_imported.csv"),
        streamed=duplex_streamed("responses"),
    output:
        replies=sout("judges", "stream", "{judge}.csv"),
    log:
        sout("logs", "duplexeval_llm_judge_{judge}.log"),
    benchmark:
        sout("benchmarks", "duplexeval_llm_judge_{judge}.tsv")
    wildcard_constraints:
        judge=judge_pattern(STREAM_JUDGES),
    conda:
        "../../envs/inference.yaml"
    resources:
        runtime=minutes(60),
    params:
        entry=social_judge_entry,
        tasks=stream_judge_tasks,
        root=social_roots()[1],
        frames=sout("cache", "judge_frames"),
        judge_fps=SOCIAL["streaming"]["judge_fps"],
        cache=social_judge_cache,
        failure_policy=failure_policy_config(),
    script:
        "../scripts/duplexeval/llm_judge.py"


rule duplexeval_score:
    """Judge windows, temporal and content scores, reminders (offline and LLM judges); per item and per model and split."""
    input:
        stream_items=sout("items", "stream_items.csv"),
        stream_events=sout("items", "stream_events.csv"),
        baselines=sout("baselines", "stream_baseline_responses.csv"),
        imported=sout("items", "stream_responses_imported.csv"),
        streamed=duplex_streamed("responses"),
        # the streamed models' steps: a model with no sentence is scored too, unparsed counted
        streamed_steps=duplex_streamed("steps"),
        llm=[sout("judges", "stream", f"{name}.csv") for name in STREAM_JUDGES],
    output:
        rtd_judges=sout("scores", "rtd_judge_scores.csv"),
        pr_judges=sout("scores", "pr_judge_scores.csv"),
        rtd_judge_metrics=sout("metrics", "rtd_judge_metrics.csv"),
        pr_judge_metrics=sout("metrics", "pr_judge_metrics.csv"),
        sentences=sout("scores", "rtd_sentences.csv"),
        rtd=sout("scores", "rtd_scores.csv"),
        pr_events=sout("scores", "pr_event_scores.csv"),
        pr=sout("scores", "pr_scores.csv"),
        metrics=sout("metrics", "streaming_metrics.csv"),
        agreement=sout("metrics", "stream_judge_agreement.csv"),
    log:
        sout("logs", "social_score_streaming.log"),
    benchmark:
        sout("benchmarks", "social_score_streaming.tsv")
    conda:
        "../../envs/judge.yaml"
    resources:
        runtime=minutes(20),
        mem_mb=3000,
    params:
        late_s=SOCIAL["streaming"]["late_s"],
        relevance_threshold=SOCIAL["streaming"]["relevance_threshold"],
        judge_fps=SOCIAL["streaming"]["judge_fps"],
        reminder_judge=SOCIAL["streaming"]["reminder_judge"],
        keyword_share=SOCIAL["streaming"]["keyword_share"],
        llm_judges=STREAM_JUDGES,
        llm_judge_tasks={name: stream_tasks_of(name) for name in STREAM_JUDGES},
        parser=SOCIAL["parser"],
    script:
        "../scripts/duplexeval/score.py"


rule duplexeval_figures:
    """Streaming score by subtask: temporal, content and reminder scores per model."""
    input:
        streaming=sout("metrics", "streaming_metrics.csv"),
    output:
        streaming_png=report(
            sout("figures", "streaming.png"),
            caption="../report/social_fig_streaming.rst",
            category="4. Streaming",
            subcategory="Figures",
            labels={"figure": "streaming scores"},
        ),
        streaming_others=figure_others(sout, "streaming"),
    log:
        sout("logs", "duplexeval_figures.log"),
    conda:
        "../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        simulated=SOCIAL["source"] == "demo",
    script:
        "../scripts/duplexeval/figures.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    duplexeval_figures,
