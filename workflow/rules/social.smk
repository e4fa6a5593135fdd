# Who / when / how (SocialOmni-style) and streaming (Omni-DuplexEval-style) benchmarks.
# Demo: social_demo generates clips in the released formats; released: the roots in config.
# Everything lands under social.results; `social_all` builds it alone.
include: "social_common.smk"


rule social_all:
    """Build only the social benchmarks (who / when / how and streaming)."""
    input:
        social_outputs(),
    # a target runs nothing; the env only satisfies tests/test_envs.py (every rule names one)
    conda:
        "../../envs/media.yaml"


if SOCIAL["source"] == "demo":

    rule social_demo:
        """Multi-party and visual-event clips in the released SocialOmni / Omni-DuplexEval formats."""
        output:
            directory(SOCIAL["demo_root"]),
        log:
            sout("logs", "social_demo.log"),
        benchmark:
            sout("benchmarks", "social_demo.tsv")
        conda:
            "../../envs/media.yaml"
        resources:
            mem_mb=1500,
        params:
            demo=SOCIAL["demo"],
        script:
            "../scripts/social_demo.py"


rule social_import:
    """Items, references, ground truth and streaming responses through the released-format importers."""
    input:
        unpack(social_sources),
    output:
        who_items=sout("items", "who_items.csv"),
        when_items=sout("items", "when_items.csv"),
        how_references=sout("items", "how_references.csv"),
        when_stream_items=sout("items", "when_stream_items.csv"),
        turns=sout("items", "turns.csv"),
        panels=sout("items", "panels.csv"),
        stream_items=sout("items", "stream_items.csv"),
        stream_events=sout("items", "stream_events.csv"),
        stream_responses=sout("items", "stream_responses_imported.csv"),
        errors=sout("items", "import_errors.csv"),
    log:
        sout("logs", "social_import.log"),
    conda:
        "../../envs/media.yaml"
    params:
        socialomni_root=social_roots()[0],
        duplexeval_root=social_roots()[1],
        duplexeval_items=SOCIAL["duplexeval_items"],
        responses_root=SOCIAL["responses_root"],
        skip_bad_items=SOCIAL["skip_bad_items"],
        max_time_s=SOCIAL["max_time_s"],
    script:
        "../scripts/social_import.py"


rule social_who_baselines:
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
    params:
        root=social_roots()[0],
        who=SOCIAL["who"],
        seed=SOCIAL["seed"],
    script:
        "../scripts/social_who_baselines.py"


rule social_when_baselines:
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
        mem_mb=1500,
    params:
        root=social_roots()[0],
        speech_source=SOCIAL["when"]["speech_source"],
        pause_s=SOCIAL["when"]["pause_s"],
        step_s=SOCIAL["when"]["step_s"],
        vad=config["vad"],
        seed=SOCIAL["seed"],
    script:
        "../scripts/social_when_baselines.py"


rule social_how_baselines:
    """How candidates: the previous utterance and a random earlier one."""
    input:
        when_items=sout("items", "when_items.csv"),
    output:
        replies=sout("replies", "how_baselines.csv"),
    log:
        sout("logs", "social_how_baselines.log"),
    conda:
        "../../envs/media.yaml"
    params:
        seed=SOCIAL["seed"],
    script:
        "../scripts/social_how_baselines.py"


rule social_model_replies:
    """A registry model on the who / when / how items (resumable result cache under cache/)."""
    input:
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
    conda:
        "../../envs/inference.yaml"
    resources:
        mem_mb=8000,
    params:
        entry=social_model_entry,
        root=social_roots()[0],
        media_dir=sout("media"),
        cache=social_model_cache,
        include_asr=SOCIAL["include_asr"],
    script:
        "../scripts/social_model_replies.py"


rule social_score_who:
    """Who accuracy overall, by consistency, option, domain; confusion and error types."""
    input:
        who_items=sout("items", "who_items.csv"),
        replies=social_replies("who"),
    output:
        scores=sout("scores", "who_scores.csv"),
        metrics=report(
            sout("metrics", "who_metrics.csv"),
            caption="../report/social_who.rst",
            category="3. Who / when / how",
        ),
        breakdown=report(
            sout("metrics", "who_breakdown.csv"),
            caption="../report/social_who_breakdown.rst",
            category="3. Who / when / how",
        ),
        confusion=sout("metrics", "who_confusion.csv"),
        mcnemar=sout("metrics", "who_mcnemar.csv"),
    log:
        sout("logs", "social_score_who.log"),
    conda:
        "../../envs/media.yaml"
    script:
        "../scripts/social_score_who.py"


rule social_score_when:
    """Single-cut accuracy; streaming offsets, labels, rates and tolerance P/R/F1."""
    input:
        when_items=sout("items", "when_items.csv"),
        replies=social_replies("when"),
        stream=sout("baselines", "when_stream_responses.csv"),
    output:
        single_scores=sout("scores", "when_single_scores.csv"),
        single_metrics=report(
            sout("metrics", "when_single_metrics.csv"),
            caption="../report/social_when_single.rst",
            category="3. Who / when / how",
        ),
        stream_scores=sout("scores", "when_stream_scores.csv"),
        rates=report(
            sout("metrics", "when_stream_rates.csv"),
            caption="../report/social_when_rates.rst",
            category="3. Who / when / how",
        ),
        tolerance=report(
            sout("metrics", "when_tolerance.csv"),
            caption="../report/social_when_tolerance.rst",
            category="3. Who / when / how",
        ),
    log:
        sout("logs", "social_score_when.log"),
    conda:
        "../../envs/media.yaml"
    params:
        thresholds=SOCIAL["when"]["thresholds"],
        deltas=SOCIAL["when"]["deltas"],
    script:
        "../scripts/social_score_when.py"


rule social_judge_how:
    """Next utterances judged against the references by two offline judges; agreement."""
    input:
        references=sout("items", "how_references.csv"),
        replies=social_replies("how"),
        when_scores=sout("scores", "when_single_scores.csv"),
    output:
        judgements=sout("scores", "how_judgements.csv"),
        metrics=report(
            sout("metrics", "how_metrics.csv"),
            caption="../report/social_how.rst",
            category="3. Who / when / how",
        ),
        agreement=report(
            sout("metrics", "how_agreement.csv"),
            caption="../report/social_how_agreement.rst",
            category="3. Who / when / how",
        ),
    log:
        sout("logs", "social_judge_how.log"),
    benchmark:
        sout("benchmarks", "social_judge_how.tsv")
    conda:
        "../../envs/judge.yaml"
    resources:
        mem_mb=3000,
    params:
        judges=SOCIAL["how"]["judges"],
        lexical_unit=SOCIAL["how"]["lexical_unit"],
    script:
        "../scripts/social_judge_how.py"


rule social_stream_baselines:
    """Delayed ground-truth captions (real-time description) and the frame-difference detector (reminders)."""
    input:
        stream_items=sout("items", "stream_items.csv"),
        stream_events=sout("items", "stream_events.csv"),
    output:
        responses=sout("baselines", "stream_baseline_responses.csv"),
        detections=sout("baselines", "detections.csv"),
        prf=report(
            sout("metrics", "detector_prf.csv"),
            caption="../report/social_detector.rst",
            category="4. Streaming",
        ),
    log:
        sout("logs", "social_stream_baselines.log"),
    benchmark:
        sout("benchmarks", "social_stream_baselines.tsv")
    conda:
        "../../envs/media.yaml"
    params:
        root=social_roots()[1],
        caption_delay_s=SOCIAL["streaming"]["caption_delay_s"],
        detector=SOCIAL["streaming"]["detector"],
        deltas=SOCIAL["streaming"]["deltas"],
    script:
        "../scripts/social_stream_baselines.py"


rule social_score_streaming:
    """Judge windows, temporal and content scores, reminders; per item and per model and split."""
    input:
        stream_items=sout("items", "stream_items.csv"),
        stream_events=sout("items", "stream_events.csv"),
        baselines=sout("baselines", "stream_baseline_responses.csv"),
        imported=sout("items", "stream_responses_imported.csv"),
    output:
        sentences=sout("scores", "rtd_sentences.csv"),
        rtd=sout("scores", "rtd_scores.csv"),
        pr_events=sout("scores", "pr_event_scores.csv"),
        pr=sout("scores", "pr_scores.csv"),
        metrics=report(
            sout("metrics", "streaming_metrics.csv"),
            caption="../report/social_streaming.rst",
            category="4. Streaming",
        ),
    log:
        sout("logs", "social_score_streaming.log"),
    benchmark:
        sout("benchmarks", "social_score_streaming.tsv")
    conda:
        "../../envs/judge.yaml"
    resources:
        mem_mb=3000,
    params:
        late_s=SOCIAL["streaming"]["late_s"],
        relevance_threshold=SOCIAL["streaming"]["relevance_threshold"],
        judge_fps=SOCIAL["streaming"]["judge_fps"],
        reminder_judge=SOCIAL["streaming"]["reminder_judge"],
        keyword_share=SOCIAL["streaming"]["keyword_share"],
    script:
        "../scripts/social_score_streaming.py"


if SOCIAL["human_scores"]:

    rule social_judge_calibration:
        """Spearman between the automatic judges and human scores of the same answers."""
        input:
            human=SOCIAL["human_scores"],
            how=sout("scores", "how_judgements.csv"),
            rtd=sout("scores", "rtd_scores.csv"),
        output:
            calibration=report(
                sout("metrics", "judge_calibration.csv"),
                caption="../report/social_judge_calibration.rst",
                category="3. Who / when / how",
            ),
        log:
            sout("logs", "social_judge_calibration.log"),
        conda:
            "../../envs/media.yaml"
        script:
            "../scripts/social_judge_calibration.py"


rule social_profile:
    """One row per model: who accuracy, when accuracy and timing, how score, perception and generation ranks."""
    input:
        who=sout("metrics", "who_metrics.csv"),
        when_single=sout("metrics", "when_single_metrics.csv"),
        rates=sout("metrics", "when_stream_rates.csv"),
        tolerance=sout("metrics", "when_tolerance.csv"),
        how=sout("metrics", "how_metrics.csv"),
    output:
        profile=report(
            sout("metrics", "social_profile.csv"),
            caption="../report/social_profile.rst",
            category="3. Who / when / how",
        ),
    log:
        sout("logs", "social_profile.log"),
    conda:
        "../../envs/media.yaml"
    params:
        profile_delta=SOCIAL["when"]["profile_delta"],
    script:
        "../scripts/social_profile.py"


rule social_figures:
    """Profile, timing offsets and labels, perception vs generation rank, streaming score by subtask."""
    input:
        profile=sout("metrics", "social_profile.csv"),
        stream_scores=sout("scores", "when_stream_scores.csv"),
        streaming=sout("metrics", "streaming_metrics.csv"),
    output:
        profile_png=report(
            sout("figures", "profile.png"),
            caption="../report/social_fig_profile.rst",
            category="3. Who / when / how",
        ),
        profile_pdf=sout("figures", "profile.pdf"),
        timing_png=report(
            sout("figures", "timing.png"),
            caption="../report/social_fig_timing.rst",
            category="3. Who / when / how",
        ),
        timing_pdf=sout("figures", "timing.pdf"),
        rank_png=report(
            sout("figures", "rank_scatter.png"),
            caption="../report/social_fig_rank.rst",
            category="3. Who / when / how",
        ),
        rank_pdf=sout("figures", "rank_scatter.pdf"),
        streaming_png=report(
            sout("figures", "streaming.png"),
            caption="../report/social_fig_streaming.rst",
            category="4. Streaming",
        ),
        streaming_pdf=sout("figures", "streaming.pdf"),
    log:
        sout("logs", "social_figures.log"),
    conda:
        "../../envs/figures.yaml"
    params:
        thresholds=SOCIAL["when"]["thresholds"],
    script:
        "../scripts/social_figures.py"
