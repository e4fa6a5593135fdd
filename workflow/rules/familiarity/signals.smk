rule measure_signals:
    """Stream durations, speech seconds (corpus VAD, else silero), track and A/V sync."""
    input:
        unpack(transcript_inputs),
        interactions=out("corpus", "interactions.csv"),
        speech=out("corpus", "corpus_vad.csv"),
    output:
        signals=out("signals", "signals.csv"),
        speech=out("signals", "speech.csv"),
        segments=out("signals", "segments.csv"),
    log:
        out("logs", "measure_signals.log"),
    benchmark:
        out("benchmarks", "measure_signals.tsv")
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/media.yaml"
    threads: THREADS["measure_signals"]
    resources:
        runtime=minutes(60),
        mem_mb=3000,
    params:
        vad=config["vad"],
        signals=config["signals"],
        measure_av_sync=config["filters"]["measure_av_sync"],
    script:
        "../../scripts/familiarity/measure_signals.py"
