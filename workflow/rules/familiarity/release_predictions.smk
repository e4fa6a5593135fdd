# Released model predictions (release.predictions.path: files, globs, folders of shards, resolved
# at startup into RELEASE_PREDICTION_FILES) as one PREDICTIONS file beside the registry models'
# (fam_predictions), with an import report: any design source.
if RELEASE_PREDICTION_FILES:

    # Seconds of work: on a cluster these run on the login node (see workflow/profiles/slurm).
    localrules:
        import_release_predictions,

    rule import_release_predictions:
        """Released model predictions as PREDICTIONS, every row accounted for in an import report."""
        input:
            predictions=[f["path"] for f in RELEASE_PREDICTION_FILES],
            design=out("design", "design.csv"),
        output:
            predictions=out("release", "predictions.csv"),
            report=out("release", "predictions_import_report.csv"),
        log:
            out("logs", "import_release_predictions.log"),
        conda:
            "../../../envs/stats.yaml"
        params:
            files=RELEASE_PREDICTION_FILES,
            mapping=RELEASE["predictions"]["mapping"],
            max_lost_share=RELEASE["predictions"]["max_lost_share"],
        script:
            "../../scripts/familiarity/import_release_predictions.py"
