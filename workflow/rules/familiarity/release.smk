# Familiarity study from a released data set (study.design_source: release; included instead
# of corpus.smk ... stimuli.smk): the release's dyad table becomes the design and stimuli
# manifest the pipeline would have written, so every rule downstream runs unchanged.

from omnisocial.familiarity.release import detect_layout  # noqa: E402

if workflow.is_main_process and RELEASE["root"]:
    # which FriendBench layout the release folder holds, on the console at start
    print(
        f"omnisocial: {detect_layout(RELEASE['root'], RELEASE['metadata'])[1]}",
        file=sys.stderr,
    )


rule import_release:
    """The release's dyad table as DESIGN and STIMULI_MANIFEST, with an import report."""
    input:
        metadata=RELEASE["metadata"],
    output:
        design=report(
            out("design", "design.csv"),
            caption="../../report/design.rst",
            category="2. Design and stimuli",
        ),
        manifest=out("stimuli", "manifest.csv"),
        report=out("release", "design_import_report.csv"),
    log:
        out("logs", "import_release.log"),
    conda:
        "../../../envs/stats.yaml"
    params:
        mapping=RELEASE["mapping"],
        root=RELEASE["root"],
    script:
        "../../scripts/familiarity/import_release.py"


# Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
localrules:
    import_release,
