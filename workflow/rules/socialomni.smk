# Who / when / how (SocialOmni-style) benchmark: baselines, registry models, scoring, profile, figures.
# Items come from social_import (social.smk); `socialomni_all` builds this benchmark alone.


rule socialomni_all:
    """Build only the who / when / how benchmark (SocialOmni-style)."""
    input:
        socialomni_outputs(),
    # a target runs nothing; the env only satisfies tests/test_envs.py (every rule names one)
    conda:
        "../../envs/media.yaml"


rule socialomni_who_baselines:
    """Who replies: panel motion (the video shows who talks) and chance."""
    input:
        who_items=sout("items", "who_items.csv"),
        panels=sout("items", "panels.csv"),
    output:
        replies=sout("replies", "who_baselines.csv"),
        evidence=sout("baselines", "who_panel_evidence.csv"),
    log:
        sout("logs", "social_who_baselines.log"),
    benchmark:
        sout("benchmarks", "social_who_baselines.tsv")
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(15),
    params:
        root=social_roots()[0],
        who=SOCIAL["who"],
        seed=SOCIAL["seed"],
    script:
        "../scripts/socialomni/who_baselines.py"


rule socialomni_when_baselines:
    """When replies: the silence baseline (VAD, speak after a pause) at the cut and streamed, and chance."""
    input:
        when_items=sout("items", "when_items.csv"),
        when_stream_items=sout("items", "when_stream_items.csv"),
        turns=sout("items", "turns.csv"),
    output:
        replies=sout("replies", "when_baselines.csv"),
        stream=sout("baselines", "when_stream_responses.csv"),
    log:
        sout("logs", "social_when_baselines.log"),
    benchmark:
        sout("benchmarks", "social_when_baselines.tsv")
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(30),
        mem_mb=1500,
    params:
        root=social_roots()[0],
        speech_source=SOCIAL["when"]["speech_source"],
        pause_s=SOCIAL["when"]["pause_s"],
        step_s=SOCIAL["when"]["step_s"],
        vad=config["vad"],
        seed=SOCIAL["seed"],
    script:
        "../scripts/socialomni/when_baselines.py"


rule socialomni_how_baselines:
    """How candidates: the previous utterance and a random earlier one."""
    input:
        when_items=sout("items", "when_items.csv"),
    output:
        replies=sout("replies", "how_baselines.csv"),
    log:
        sout("logs", "social_how_baselines.log"),
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(15),
    params:
        seed=SOCIAL["seed"],
    script:
        "../scripts/socialomni/how_baselines.py"


rule socialomni_cut_media:
    """Each item's clip cut once per model input modality, as the released evaluators cut it."""
    input:
        who_items=sout("items", "who_items.csv"),
        when_items=sout("items", "when_items.csv"),
    output:
        directory(sout("media", "{modality}")),
    log:
        sout("logs", "socialomni_cut_media_{modality}.log"),
    benchmark:
        sout("benchmarks", "socialomni_cut_media_{modality}.tsv")
    wildcard_constraints:
        modality="audio_video|video|audio",
    conda:
        "../../envs/media.yaml"
    threads: THREADS["socialomni_cut_media"]
    resources:
        runtime=minutes(30),
    params:
        root=social_roots()[0],
        media_root=lambda wildcards, output: str(Path(output[0]).parent),
        who_protocol=SOCIAL["who"]["protocol"],
    script:
        "../scripts/socialomni/cut_media.py"


rule socialomni_model_replies:
    """A registry model, or a modality ablation of it (<name>@<ablation>), on the who / when / how items (resumable cache)."""
    input:
        unpack(social_model_media),
        who_items=sout("items", "who_items.csv"),
        when_items=sout("items", "when_items.csv"),
    output:
        replies=sout("replies", "models", "{model}.csv"),
    log:
        sout("logs", "social_model_replies_{model}.log"),
    benchmark:
        sout("benchmarks", "social_model_replies_{model}.tsv")
    wildcard_constraints:
        model=SOCIAL_MODEL_PATTERN,
    group:
        model_job_group(SOCIAL_RUNS)
    conda:
        model_conda_env(SOCIAL_RUNS)
    resources:
        mem_mb=social_model_resource("mem_mb"),
        gpu=social_model_resource("gpu"),
        runtime=social_model_runtime,
        slurm_partition=social_model_resource("slurm_partition"),
        gpu_model=social_model_resource("gpu_model"),
        cpus_per_gpu=social_model_resource("cpus_per_gpu"),
    params:
        entry=social_model_entry,
        ablation=social_model_ablation,
        media_root=sout("media"),
        cache=social_model_cache,
        include_asr=SOCIAL["include_asr"],
        failure_policy=failure_policy_config(),
    script:
        "../scripts/socialomni/model_replies.py"


rule socialomni_stream_segments:
    """Each when stream item cut once into its step segments for models of one input modality."""
    input:
        when_stream_items=sout("items", "when_stream_items.csv"),
    output:
        directory(sout("stream_media", "{modality}")),
    log:
        sout("logs", "socialomni_stream_segments_{modality}.log"),
    benchmark:
        sout("benchmarks", "socialomni_stream_segments_{modality}.tsv")
    wildcard_constraints:
        modality="audio_video|video|audio",
    conda:
        "../../envs/media.yaml"
    threads: THREADS["socialomni_stream_segments"]
    resources:
        runtime=minutes(60),
    params:
        root=social_roots()[0],
        segments_root=lambda wildcards, output: str(Path(output[0]).parent),
        step_s=SOCIAL["when"]["stream_step_s"],
        window_s=SOCIAL["when"]["stream_window_s"],
    script:
        "../scripts/socialomni/stream_segments.py"


rule socialomni_stream_when:
    """A registry model asked "speak now?" every stream_step_s along each when stream item (resumable per step)."""
    input:
        when_stream_items=sout("items", "when_stream_items.csv"),
        segments=social_stream_segments,
    output:
        steps=sout("stream", "when", "{model}_steps.csv"),
        responses=sout("stream", "when", "{model}_responses.csv"),
        summary=sout("stream", "when", "{model}_summary.csv"),
    log:
        sout("logs", "socialomni_stream_when_{model}.log"),
    benchmark:
        sout("benchmarks", "socialomni_stream_when_{model}.tsv")
    wildcard_constraints:
        model=SOCIAL_STREAM_PATTERN,
    group:
        model_job_group(SOCIAL_STREAM_MODELS)
    conda:
        model_conda_env(SOCIAL_STREAM_MODELS)
    resources:
        mem_mb=social_model_resource("mem_mb"),
        gpu=social_model_resource("gpu"),
        runtime=social_stream_runtime,
        slurm_partition=social_model_resource("slurm_partition"),
        gpu_model=social_model_resource("gpu_model"),
        cpus_per_gpu=social_model_resource("cpus_per_gpu"),
    params:
        entry=lambda wildcards: SOCIAL_STREAM_MODELS[wildcards.model],
        root=social_roots()[0],
        segments_root=sout("stream_media"),
        cache=social_stream_cache,
        step_s=SOCIAL["when"]["stream_step_s"],
        window_s=SOCIAL["when"]["stream_window_s"],
        parser=SOCIAL["parser"],
        failure_policy=failure_policy_config(),
    script:
        "../scripts/socialomni/stream_when.py"


rule socialomni_score_who:
    """Who accuracy overall, by consistency, option, domain; confusion and error types."""
    input:
        who_items=sout("items", "who_items.csv"),
        who_copies=sout("items", "who_copies.csv"),
        written_answers=sout("items", "written_answers.csv"),
        replies=social_replies("who"),
    output:
        scores=sout("scores", "who_scores.csv"),
        metrics=sout("metrics", "who_metrics.csv"),
        breakdown=sout("metrics", "who_breakdown.csv"),
        confusion=sout("metrics", "who_confusion.csv"),
        mcnemar=sout("metrics", "who_mcnemar.csv"),
    log:
        sout("logs", "social_score_who.log"),
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(10),
    params:
        parser=SOCIAL["parser"],
    script:
        "../scripts/socialomni/score_who.py"


rule socialomni_score_when:
    """Single-cut accuracy; streaming offsets, labels, rates, tolerance P/R/F1 and the timing table (baseline and streamed models)."""
    input:
        when_items=sout("items", "when_items.csv"),
        written_answers=sout("items", "written_answers.csv"),
        replies=social_replies("when"),
        stream=[
            sout("baselines", "when_stream_responses.csv"),
            *social_stream_files("responses"),
        ],
        summaries=social_stream_files("summary"),
    output:
        single_scores=sout("scores", "when_single_scores.csv"),
        single_metrics=sout("metrics", "when_single_metrics.csv"),
        stream_scores=sout("scores", "when_stream_scores.csv"),
        rates=sout("metrics", "when_stream_rates.csv"),
        tolerance=sout("metrics", "when_tolerance.csv"),
        timing=sout("metrics", "when_timing.csv"),
    log:
        sout("logs", "social_score_when.log"),
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(10),
    params:
        thresholds=SOCIAL["when"]["thresholds"],
        deltas=SOCIAL["when"]["deltas"],
        parser=SOCIAL["parser"],
    script:
        "../scripts/socialomni/score_when.py"


rule socialomni_llm_judge:
    """An LLM judge (registry entry) on the how candidates: raw replies, resumable cache."""
    input:
        references=sout("items", "how_references.csv"),
        replies=social_replies("how"),
    output:
        replies=sout("judges", "how", "{judge}.csv"),
    log:
        sout("logs", "socialomni_llm_judge_{judge}.log"),
    benchmark:
        sout("benchmarks", "socialomni_llm_judge_{judge}.tsv")
    wildcard_constraints:
        judge=judge_pattern(HOW_JUDGES),
    conda:
        "../../envs/inference.yaml"
    resources:
        runtime=minutes(60),
    params:
        entry=social_judge_entry,
        cache=social_judge_cache,
        failure_policy=failure_policy_config(),
    script:
        "../scripts/socialomni/llm_judge.py"


rule socialomni_judge_how:
    """Next utterances judged against the references by the offline and LLM judges; released averages; agreement."""
    input:
        references=sout("items", "how_references.csv"),
        replies=social_replies("how"),
        when_scores=sout("scores", "when_single_scores.csv"),
        when_items=sout("items", "when_items.csv"),
        llm=[sout("judges", "how", f"{name}.csv") for name in HOW_JUDGES],
    output:
        judgements=sout("scores", "how_judgements.csv"),
        metrics=sout("metrics", "how_metrics.csv"),
        released=sout("metrics", "how_released.csv"),
        agreement=sout("metrics", "how_agreement.csv"),
    log:
        sout("logs", "social_judge_how.log"),
    benchmark:
        sout("benchmarks", "social_judge_how.tsv")
    conda:
        "../../envs/judge.yaml"
    resources:
        runtime=minutes(20),
        mem_mb=3000,
    params:
        judges=SOCIAL["how"]["judges"],
        lexical_unit=SOCIAL["how"]["lexical_unit"],
        llm_judges=HOW_JUDGES,
        parser=SOCIAL["parser"],
    script:
        "../scripts/socialomni/judge_how.py"


rule socialomni_profile:
    """One row per model: who accuracy, when accuracy and timing, how score (counts, 95% intervals), ranks."""
    input:
        who=sout("metrics", "who_metrics.csv"),
        when_single=sout("metrics", "when_single_metrics.csv"),
        rates=sout("metrics", "when_stream_rates.csv"),
        tolerance=sout("metrics", "when_tolerance.csv"),
        how=sout("metrics", "how_metrics.csv"),
        how_items=sout("scores", "how_judgements.csv"),
    output:
        profile=sout("metrics", "social_profile.csv"),
    log:
        sout("logs", "social_profile.log"),
    conda:
        "../../envs/media.yaml"
    resources:
        runtime=minutes(10),
    params:
        profile_delta=SOCIAL["when"]["profile_delta"],
    script:
        "../scripts/socialomni/profile.py"


rule socialomni_figures:
    """Profile, timing offsets and labels, perception vs generation rank."""
    input:
        profile=sout("metrics", "social_profile.csv"),
        stream_scores=sout("scores", "when_stream_scores.csv"),
        who_confusion=sout("metrics", "who_confusion.csv"),
    output:
        profile_png=report(
            sout("figures", "profile.png"),
            caption="../report/social_fig_profile.rst",
            category="3. Who / when / how",
            subcategory="Figures",
            labels={"figure": "profile"},
        ),
        profile_others=figure_others(sout, "profile"),
        timing_png=report(
            sout("figures", "timing.png"),
            caption="../report/social_fig_timing.rst",
            category="3. Who / when / how",
            subcategory="Figures",
            labels={"figure": "timing offsets"},
        ),
        timing_others=figure_others(sout, "timing"),
        rank_png=report(
            sout("figures", "rank_scatter.png"),
            caption="../report/social_fig_rank.rst",
            category="3. Who / when / how",
            subcategory="Figures",
            labels={"figure": "perception vs generation rank"},
        ),
        rank_others=figure_others(sout, "rank_scatter"),
        who_confusion_png=report(
            sout("figures", "who_confusion.png"),
            caption="../report/social_fig_who_confusion.rst",
            category="3. Who / when / how",
            subcategory="Figures",
            labels={"figure": "who confusion"},
        ),
        who_confusion_others=figure_others(sout, "who_confusion"),
    log:
        sout("logs", "social_figures.log"),
    conda:
        "../../envs/figures.yaml"
    resources:
        runtime=minutes(10),
    params:
        figure_settings=config["figures"],
        thresholds=SOCIAL["when"]["thresholds"],
        simulated=SOCIAL["source"] == "demo",
    script:
        "../scripts/socialomni/figures.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    socialomni_how_baselines,
    socialomni_score_who,
    socialomni_score_when,
    socialomni_profile,
    socialomni_figures,
