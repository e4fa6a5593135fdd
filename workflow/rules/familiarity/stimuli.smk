rule render_stimuli:
    """Text, audio (mix and stereo) and side-by-side video from the same clip window."""
    input:
        design=out("design", "design.csv"),
        interactions=out("corpus", "interactions.csv"),
        segments=out("signals", "segments.csv"),
    output:
        manifest=out("stimuli", "manifest.csv"),
        media=directory(out("stimuli", "media")),
    log:
        out("logs", "render_stimuli.log"),
    benchmark:
        out("benchmarks", "render_stimuli.tsv")
    priority: CHAIN_PRIORITY
    conda:
        "../../../envs/media.yaml"
    threads: THREADS["render_stimuli"]
    resources:
        runtime=minutes(60),
        mem_mb=2000,
    params:
        stimuli=config["stimuli"],
    script:
        "../../scripts/familiarity/render_stimuli.py"
