# Streaming (Omni-DuplexEval-style) benchmark: caption and detector baselines, rtd / pr scoring, figure.
# Items come from social_import (social.smk); `duplexeval_all` builds this benchmark alone.


rule duplexeval_all:
    """Build only the streaming benchmark (Omni-DuplexEval-style)."""
    input:
        duplexeval_outputs(),
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


rule duplexeval_llm_judge:
    """An LLM judge (registry entry) on the streaming responses: sentences with their window's frames, responses, reminder windows."""
    input:
        stream_items=sout("items", "stream_items.csv"),
        baselines=sout("baselines", "stream_baseline_responses.csv"),
        imported=sout("items", "stream_responses_imported.csv"),
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
        streaming_pdf=sout("figures", "streaming.pdf"),
    log:
        sout("logs", "duplexeval_figures.log"),
    conda:
        "../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        simulated=SOCIAL["source"] == "demo",
    script:
        "../scripts/duplexeval/figures.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    duplexeval_figures,
