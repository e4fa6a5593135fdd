if CORPUS["source"] == "demo":
    from omnisocial.familiarity.corpus.demo.design import validate_params

    # before any job: the schema cannot relate demo.duration_s to demo.min_total_speech_s
    validate_params(config["demo"])

    rule make_demo_corpus:
        """Generate the demo corpus in the Seamless Interaction layout (espeak-ng + ffmpeg)."""
        output:
            directory(CORPUS["root"]),
        log:
            "logs/make_demo_corpus.log",
        benchmark:
            "logs/benchmarks/make_demo_corpus.tsv"
        priority: CHAIN_PRIORITY
        conda:
            "../../../envs/media.yaml"
        threads: THREADS["make_demo_corpus"]
        resources:
            runtime=minutes(20),
            mem_mb=2000,
        params:
            demo=config["demo"],
        script:
            "../../scripts/familiarity/make_demo_corpus.py"


rule ingest_corpus:
    """One row per conversation, its transcript segments and its corpus VAD."""
    input:
        corpus=corpus_root,
    output:
        interactions=out("corpus", "interactions.csv"),
        segments=out("corpus", "transcript_segments.csv"),
        speech=out("corpus", "corpus_vad.csv"),
    log:
        out("logs", "ingest_corpus.log"),
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/media.yaml"
    resources:
        runtime=minutes(30),
        mem_mb=2000,
    params:
        label=CORPUS["label"],
        gender_table=CORPUS["gender_table"],
        interactions_csv=CORPUS["interactions_csv"],
        relationships_csv=CORPUS["relationships_csv"],
        participants_csv=CORPUS["participants_csv"],
        missing_transcript=CORPUS["missing_transcript"],
        shard_dir=CORPUS["shard_dir"],
    script:
        "../../scripts/familiarity/ingest_corpus.py"


rule transcribe_missing:
    """ASR for participants whose corpus files carry no transcript."""
    input:
        interactions=out("corpus", "interactions.csv"),
    output:
        segments=out("corpus", "asr_segments.csv"),
        failures=out("corpus", "asr_failures.csv"),
    log:
        out("logs", "transcribe_missing.log"),
    benchmark:
        out("benchmarks", "transcribe_missing.tsv")
    conda:
        "../../../envs/asr.yaml"
    threads: THREADS["transcribe_missing"]
    resources:
        runtime=minutes(240),
        mem_mb=8000,
        gpu=1 if config["asr"]["device"].startswith("cuda") else 0,
    params:
        asr=config["asr"],
    script:
        "../../scripts/familiarity/transcribe_missing.py"
