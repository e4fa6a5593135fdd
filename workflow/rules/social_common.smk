# Config, paths and rules shared by the SocialOmni-style (socialomni.smk) and Omni-DuplexEval-style
# (duplexeval.smk) benchmarks: the demo that serves both, the import of both, the judge calibration
# that compares both benchmarks' judges with human scores, and the `social_all` target.
# Everything lands under social.results. Included before socialomni.smk and duplexeval.smk.

SOCIAL = config["social"]


def sout(*parts):
    """A path under the social benchmarks' results folder."""
    return str(Path(SOCIAL["results"], *parts))


def social_roots():
    """(SocialOmni root, Omni-DuplexEval root): inside the demo folder, or as configured."""
    if SOCIAL["source"] == "demo":
        demo = Path(SOCIAL["demo_root"])
        return str(demo / "socialomni"), str(demo / "duplexeval")
    if not SOCIAL["socialomni_root"] or not SOCIAL["duplexeval_root"]:
        raise ValueError(
            "social.source released needs social.socialomni_root and social.duplexeval_root"
        )
    return SOCIAL["socialomni_root"], SOCIAL["duplexeval_root"]


def social_sources(wildcards=None):
    """The import's inputs: the demo folder or the released files that exist, and any responses folder."""
    responses = (
        {"responses": SOCIAL["responses_root"]} if SOCIAL["responses_root"] else {}
    )
    if SOCIAL["source"] == "demo":
        return {"demo": SOCIAL["demo_root"], **responses}
    socialomni, duplexeval = social_roots()
    files = {
        "level_1": Path(socialomni, "data", "level_1", "dataset.json"),
        "level_2": Path(socialomni, "data", "level_2", "annotations.json"),
        "stream_items": Path(duplexeval, SOCIAL["duplexeval_items"]),
    }
    return {
        name: str(path) for name, path in files.items() if path.is_file()
    } | responses


def socialomni_outputs():
    """Everything the who / when / how benchmark reports; [] when social.enabled is false."""
    if not SOCIAL["enabled"]:
        return []
    metrics = [
        "who_metrics.csv",
        "who_breakdown.csv",
        "when_single_metrics.csv",
        "when_stream_rates.csv",
        "when_tolerance.csv",
        "how_metrics.csv",
        "how_agreement.csv",
        "social_profile.csv",
    ]
    figures = ["profile", "timing", "rank_scatter"]
    return [sout("metrics", name) for name in metrics] + [
        sout("figures", f"{name}.{ext}") for name in figures for ext in ("png", "pdf")
    ]


def duplexeval_outputs():
    """Everything the streaming benchmark reports; [] when social.enabled is false."""
    if not SOCIAL["enabled"]:
        return []
    metrics = ["detector_prf.csv", "streaming_metrics.csv"]
    return [sout("metrics", name) for name in metrics] + [
        sout("figures", f"streaming.{ext}") for ext in ("png", "pdf")
    ]


def social_outputs():
    """Everything both social benchmarks report (and the judge calibration when human scores are given)."""
    if not SOCIAL["enabled"]:
        return []
    calibration = (
        [sout("metrics", "judge_calibration.csv")] if SOCIAL["human_scores"] else []
    )
    return socialomni_outputs() + duplexeval_outputs() + calibration


rule social_all:
    """Build only the social benchmarks (who / when / how and streaming: socialomni_all + duplexeval_all)."""
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
