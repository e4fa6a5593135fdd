"""Data contracts of the tables the familiarity stages write (besides those in `omnisocial.tables`).

Tables that hold human responses carry a `source` column saying where they came from: the
survey exports, or `ratings.SIMULATED_LABEL` for the demo's simulated rater panel. Model rows
say `MODEL_SOURCE`, those of a release's predictions (rule import_release_predictions)
`RELEASE_SOURCE`; a row over several models joins their sources ("model inference; release").
The figures read that column and flag simulated data in their subtitles.

This module imports only `omnisocial.tables` (and the stdlib-only `omnisocial.models.base`),
so the inference env need not carry the statistics stack.
"""

from __future__ import annotations

from omnisocial.models.base import AUDIO_PATHS
from omnisocial.tables import METRICS, POSITIONS, RELATIONSHIPS, SPEAKERS, TRIALS, Column, Contract

MODALITIES = ("text", "audio", "video")

MODEL_SOURCE = "model inference"
RELEASE_SOURCE = "release"  # predictions read from a released data set, not inferred here
SURVEY_SOURCE = "survey exports"
EXPERIMENT_SOURCE = "rating experiment"  # collected by the rating-server, or on JATOS
RATER_TYPES = ("model", "human", "crowd")
STATUSES = ("answered", "unparsed", "failed")
SOURCE = Column(
    "source",
    doc="where the responses came from (simulated panel, survey exports, rating experiment, model "
    "inference, release)",
)


# --- corpus, signals, filters, stimuli (moved from omnisocial.tables: familiarity only) ---

INTERACTIONS = Contract(
    "interactions",
    (
        Column("interaction_id", doc="V<vendor>_S<session>_I<prompt hash>"),
        Column("vendor_id"),
        Column("session_id"),
        Column("prompt_hash"),
        Column("site", doc="recording site (the vendor for Seamless Interaction)"),
        Column("relationship", doc="familiar / stranger, empty when unknown"),
        Column("relationship_detail"),
        Column("prompt_id"),
        Column("prompt_text"),
        Column("n_participants", "int"),
        Column("participant_a"),
        Column("participant_b"),
        Column("gender_a"),
        Column("gender_b"),
        Column("gender_mix", doc="female-female / female-male / male-male; empty without a gender table"),
        Column("video_a"),
        Column("audio_a"),
        Column("json_a"),
        Column("video_b"),
        Column("audio_b"),
        Column("json_b"),
        Column("has_transcript", "bool"),
        Column("ingest_ok", "bool"),
        Column("ingest_reason"),
    ),
    key=("interaction_id",),
)


SEGMENTS = Contract(
    "segments",
    (
        Column("interaction_id"),
        Column("speaker", allowed=SPEAKERS),
        Column("start", "float"),
        Column("end", "float"),
        Column("text"),
        Column("source", allowed=("transcript", "asr")),
    ),
)


SPEECH = Contract(
    "speech",
    (
        Column("interaction_id"),
        Column("speaker", allowed=SPEAKERS),
        Column("start", "float"),
        Column("end", "float"),
        Column("source", allowed=("corpus_vad", "silero")),
    ),
)


SIGNALS = Contract(
    "signals",
    (
        Column("interaction_id"),
        Column("measure_ok", "bool"),
        Column("measure_reason"),
        Column("duration_audio_a", "float", nullable=True),
        Column("duration_audio_b", "float", nullable=True),
        Column("duration_video_a", "float", nullable=True),
        Column("duration_video_b", "float", nullable=True),
        Column("speech_s_a", "float", nullable=True),
        Column("speech_s_b", "float", nullable=True),
        Column("speech_total_s", "float", nullable=True),
        Column("shared_speech_s", "float", nullable=True, doc="silero speech on both mics, neither leading"),
        Column("overlap_s", "float", nullable=True, doc="seconds both participants speak at once"),
        Column("overlap_s_a", "float", nullable=True, doc="part of overlap_s that a started over b"),
        Column("overlap_s_b", "float", nullable=True, doc="part of overlap_s that b started over a"),
        Column("backchannels_a", "int", nullable=True, doc="short utterances of a inside b's talk"),
        Column("backchannels_b", "int", nullable=True, doc="short utterances of b inside a's talk"),
        Column("vad_source"),
        Column("track_similarity", "float", nullable=True, doc="peak envelope correlation a~b"),
        Column("track_lag_s", "float", nullable=True, doc="lag of b behind a; empty when not measurable"),
        Column("track_lag_peak", "float", nullable=True, doc="detail correlation at the lag's peak"),
        Column(
            "track_lag_prominence", "float", nullable=True, doc="that peak minus the best one off its lobe"
        ),
        Column("av_lag_a_s", "float", nullable=True, doc="audio-video lag, participant a"),
        Column("av_lag_b_s", "float", nullable=True, doc="audio-video lag, participant b"),
        Column("transcript_words", "int", nullable=True),
    ),
    key=("interaction_id",),
)


CLIP_CANDIDATES = Contract(
    "clip_candidates",
    (
        Column("interaction_id"),
        Column("position", allowed=POSITIONS),
        Column("clip_start", "float"),
        Column("clip_end", "float"),
        Column("n_turns", "int"),
        Column("speech_s_a", "float"),
        Column("speech_s_b", "float"),
    ),
    key=("interaction_id", "position"),
)


FILTER_REPORT = Contract(
    "filter_report",
    (
        Column("interaction_id"),
        Column("site"),
        Column("relationship"),
        Column("gender_mix"),
        Column("ingest_pass", "bool"),
        Column("f1_prompt_pass", "bool"),
        Column("f1_prompt_value", doc="prompt id and whether it is Either-Or"),
        Column("f2_turns_pass", "bool"),
        Column("f2_turns_value", "int", nullable=True, doc="fewest merged turns over the clip positions"),
        Column("f3_speech_pass", "bool"),
        Column("f3_speech_value", "float", nullable=True, doc="least speech (s) of either speaker in a clip"),
        Column("f4_tracks_pass", "bool"),
        Column("f4_tracks_value", doc="similarity, inter-track lag and audio-video lags"),
        Column(
            "f4_lag_measured", "bool", nullable=True, doc="inter-track lag measured; empty: F4 not reached"
        ),
        Column("f5_amount_pass", "bool"),
        Column("f5_amount_value", "float", nullable=True, doc="voiced speech (s) of the whole interaction"),
        Column("audit_pass", "bool"),
        Column("audit_value", doc="prompt-audit evidence"),
        Column("passed", "bool"),
        Column("reasons", doc="every failure reason, '; '-separated"),
    ),
    key=("interaction_id",),
)


STIMULI_MANIFEST = Contract(
    "stimuli_manifest",
    (
        Column("dyad_id"),
        Column("modality", allowed=("text", "audio", "video")),
        Column("variant", doc="mix / stereo / side_by_side / transcript"),
        Column("path", doc="relative to the manifest's folder"),
        Column("duration_s", "float", nullable=True),
        Column("sha256"),
        Column("clip_start", "float", nullable=True),
        Column("clip_end", "float", nullable=True),
    ),
    key=("dyad_id", "modality", "variant"),
)


ASR_FAILURES = Contract(
    "asr_failures",
    (Column("interaction_id"), Column("reason")),
    key=("interaction_id",),
)


def variant_name(name: str, variant: str) -> str:
    """The model name in PREDICTIONS and METRICS: one 'model' per prompt variant."""
    return f"{name}@{variant}"


def split_variant(model: str) -> tuple[str, str]:
    """(registry name, prompt variant) of a `variant_name`; (model, '') for other models."""
    name, _, variant = str(model).rpartition("@")
    return (name, variant) if name else (str(model), "")


def _with(contract: Contract, name: str, *extra: Column, key: tuple[str, ...] | None = None) -> Contract:
    return Contract(name, (*contract.columns, *extra), key=contract.key if key is None else key)


# --- inference ----------------------------------------------------------------------------

RESPONSES = Contract(
    "responses",
    (
        Column("model", doc="{registry name}@{prompt variant}; a baseline: {registry name}"),
        Column("name", doc="registry name"),
        Column("modality", allowed=MODALITIES),
        Column("prompt_variant", doc="empty for a baseline (it reads no prompt)"),
        Column("item_id", doc="the dyad id"),
        Column("truth", allowed=RELATIONSHIPS),
        Column("prompt_hash", doc="sha256 of the rendered system + user prompt"),
        Column("template_sha256", doc="sha256 of the prompt template file"),
        Column("media_hashes", doc="JSON {modality: sha256} of the media sent"),
        Column("model_fingerprint", doc="weights hash, API model id or baseline identity"),
        Column("model_version", doc="what the server said it ran, when it said"),
        Column("settings", doc="JSON of the effective decoding settings"),
        Column("cache_key", doc="the call's key in the resumable result store"),
        Column("status", allowed=STATUSES, doc="answered / unparsed (reply without a valid label) / failed"),
        Column("raw_reply", doc="the model's text, empty when the call failed"),
        Column("label", allowed=("", *RELATIONSHIPS), doc="parsed label; empty = non-answer"),
        Column("confidence", "float", nullable=True),
        Column("rationale"),
        Column("parse_error", doc="why no label was read, or what was ignored"),
        Column("error", doc="why the call failed (empty when it returned text)"),
        Column("attempts", "int", doc="calls made for this record (retries included)"),
        Column(
            "finish_reason",
            doc="why generation stopped, as the service said (stop, length, MAX_TOKENS, SAFETY, ...), "
            "failed calls included; empty when no reply came",
        ),
        Column(
            "audio_path",
            allowed=AUDIO_PATHS,
            doc="how the stimulus' audio reached the model: separate_part, in_video, none (not sent), "
            "no_track (the video has none); empty for text or a backend that does not say",
        ),
    ),
    key=("model", "modality", "item_id"),
)

FEATURES_TABLE = Contract(
    "behavioural_features",
    (
        Column("item_id", doc="the dyad id"),
        Column("modality", allowed=MODALITIES),
        Column("truth", allowed=RELATIONSHIPS),
        Column("stimulus", doc="the audio file the prosody came from (relative to the manifest)"),
        Column("n_segments", "int", doc="transcript segments inside the clip window"),
        Column("gap_mean_s", "float", nullable=True),
        Column("gap_median_s", "float", nullable=True),
        Column("fto_mean_s", "float", nullable=True),
        Column("overlap_rate", "float", nullable=True),
        Column("overlap_mean_s", "float", nullable=True),
        Column("turn_mean_s", "float", nullable=True),
        Column("turns_per_min", "float", nullable=True),
        Column("speech_rate_wps", "float", nullable=True),
        Column("f0_mean_hz", "float", nullable=True),
        Column("f0_sd_hz", "float", nullable=True),
        Column("energy_mean_db", "float", nullable=True),
        Column("energy_sd_db", "float", nullable=True),
    ),
    key=("item_id",),
)

# --- ratings ------------------------------------------------------------------------------

MODALITY_ASSIGNMENTS = Contract(
    "modality_assignments",
    (Column("modality", allowed=MODALITIES), Column("rater_id"), Column("block", "int")),
    key=("modality", "rater_id", "block"),
)
RATED_TRIALS = _with(TRIALS, "rated_trials", SOURCE)
# the import report with its source: `ratings.IMPORT_REPORT` plus SOURCE (see familiarity.ratings)

# --- analysis -----------------------------------------------------------------------------

FAM_METRICS = _with(
    METRICS,
    "familiarity_metrics",
    Column("rater_type", allowed=RATER_TYPES, doc="model, human (one rater) or crowd (majority vote)"),
    SOURCE,
)

NONANSWER = Contract(
    "nonanswer_accuracy",
    (
        Column("model"),
        Column("modality"),
        Column("accuracy_answered", "float", nullable=True),
        Column("accuracy_nonanswer_wrong", "float", nullable=True),
        Column("accuracy_nonanswer_coinflip", "float", nullable=True),
        Column("rater_type", allowed=RATER_TYPES),
        SOURCE,
    ),
    key=("model", "modality"),
)

PER_RATER = Contract(
    "per_rater_sdt",
    (
        Column("rater_id"),
        Column("modality", allowed=MODALITIES),
        Column("n", "int"),
        Column("n_familiar", "int"),
        Column("n_stranger", "int"),
        Column("accuracy", "float", nullable=True),
        Column("familiar_recall", "float", nullable=True),
        Column("stranger_recall", "float", nullable=True),
        Column("d_prime", "float", nullable=True),
        Column("criterion", "float", nullable=True),
        SOURCE,
    ),
    key=("rater_id", "modality"),
)

CROWD_CURVES = Contract(
    "crowd_curves",
    (
        Column("modality", allowed=MODALITIES),
        Column("k", "int"),
        Column("accuracy_mean", "float", nullable=True),
        Column("accuracy_sd", "float", nullable=True),
        Column(
            "resample_low",
            "float",
            nullable=True,
            doc="2.5th percentile over rater resamples: resampling spread, not a confidence interval",
        ),
        Column("resample_high", "float", nullable=True, doc="97.5th percentile over rater resamples"),
        Column("accuracy_expected", "float", nullable=True, doc="exact hypergeometric expectation"),
        Column("n_dyads", "int", doc="dyads with at least k raters"),
        Column("beyond_min_raters", "bool", doc="k above the fewest raters of any dyad: a subset of dyads"),
        SOURCE,
    ),
    key=("modality", "k"),
)

MAJORITY_VOTES = Contract(
    "majority_votes",
    (
        Column("modality", allowed=MODALITIES),
        Column("item_id"),
        Column("truth", allowed=RELATIONSHIPS),
        Column("n_raters", "int"),
        Column("n_familiar", "int"),
        Column("n_stranger", "int"),
        Column("tie", "bool", doc="a tie, broken by a seeded coin"),
        Column("label", allowed=RELATIONSHIPS),
        Column("vote_share", "float"),
        SOURCE,
    ),
    key=("modality", "item_id"),
)

CALIBRATION = Contract(
    "calibration",
    (
        Column("model"),
        Column("modality"),
        Column("bin_low", "float", nullable=True),
        Column("bin_high", "float", nullable=True),
        Column("n", "int", nullable=True, doc="answered items with a confidence in the bin"),
        Column("mean_confidence", "float", nullable=True),
        Column("accuracy", "float", nullable=True),
        Column("ece", "float", nullable=True, doc="expected calibration error of the (model, modality)"),
        Column("auroc", "float", nullable=True, doc="AUROC of the confidence that a dyad is familiar"),
        Column("n_items", "int", doc="answered items with a confidence; 0 = the model gave none"),
        Column("ece_ci_low", "float", nullable=True, doc="95% percentile bootstrap interval of ece"),
        Column("ece_ci_high", "float", nullable=True),
        Column("auroc_ci_low", "float", nullable=True, doc="95% percentile bootstrap interval of auroc"),
        Column("auroc_ci_high", "float", nullable=True),
        Column(
            "ece_perfect",
            "float",
            nullable=True,
            doc="mean ECE of a perfectly calibrated model with these confidences and n (ECE is biased up)",
        ),
        Column("n_boot", "int", nullable=True, doc="bootstrap resamples (analysis.calibration_bootstrap)"),
    ),
)

PROMPT_SENSITIVITY = Contract(
    "prompt_sensitivity",
    (
        Column("name", doc="registry name"),
        Column("modality", allowed=MODALITIES),
        Column("variant_a"),
        Column("variant_b", doc="empty when only one variant ran"),
        Column("n_items", "int"),
        Column("accuracy_a", "float", nullable=True),
        Column("accuracy_b", "float", nullable=True),
        Column("coverage_a", "float", nullable=True),
        Column("coverage_b", "float", nullable=True),
        Column("difference", "float", nullable=True, doc="accuracy_a - accuracy_b"),
        Column("accuracy_range", "float", nullable=True, doc="max - min accuracy over every variant"),
        Column("agreement", "float", nullable=True, doc="share of items answered alike by both"),
        Column("n_paired", "int", doc="items both variants answered (McNemar's items)"),
        Column("mcnemar_b", "int", doc="a right, b wrong"),
        Column("mcnemar_c", "int", doc="a wrong, b right"),
        Column("mcnemar_p", "float", nullable=True, doc="exact two-sided"),
    ),
    key=("name", "modality", "variant_a", "variant_b"),
)

COMPARISONS = ("best_model_vs_crowd", "modality_pair")
MCNEMAR = Contract(
    "mcnemar",
    (
        Column("comparison", allowed=COMPARISONS),
        Column("model_a"),
        Column("modality_a", allowed=MODALITIES),
        Column("model_b"),
        Column("modality_b", allowed=MODALITIES),
        Column("accuracy_a", "float", nullable=True, doc="on the paired items"),
        Column("accuracy_b", "float", nullable=True),
        Column("n_items", "int", doc="dyads both answered"),
        Column("b", "int", doc="a right, b wrong"),
        Column("c", "int", doc="a wrong, b right"),
        Column("statistic", "float", nullable=True),
        Column("p_value", "float", nullable=True, doc="exact two-sided"),
        Column("p_holm", "float", nullable=True, doc="Holm-adjusted over the rows of this comparison kind"),
        Column("note", doc="best_model_vs_crowd: the model was chosen on these same dyads"),
        SOURCE,
    ),
    key=("comparison", "model_a", "modality_a", "model_b", "modality_b"),
)

TOST = Contract(
    "tost",
    (
        Column("comparison", allowed=COMPARISONS),
        Column("model_a"),
        Column("modality_a", allowed=MODALITIES),
        Column("model_b"),
        Column("modality_b", allowed=MODALITIES),
        Column("n_items", "int"),
        Column("diff", "float", nullable=True, doc="accuracy_a - accuracy_b on the paired dyads"),
        Column("se", "float", nullable=True, doc="Wald SE (tango, wald) or the adjusted SE (agresti_min)"),
        Column("ci_low", "float", nullable=True, doc="(1 - 2 alpha) interval of the method"),
        Column("ci_high", "float", nullable=True),
        Column("p_lower", "float", nullable=True, doc="H0: diff <= -margin"),
        Column("p_upper", "float", nullable=True, doc="H0: diff >= +margin"),
        Column("p_tost", "float", nullable=True, doc="max(p_lower, p_upper), unadjusted"),
        Column("equivalent", "bool", doc="p_tost < alpha"),
        Column("p_tost_holm", "float", nullable=True, doc="Holm-adjusted per comparison kind"),
        Column("equivalent_holm", "bool", doc="p_tost_holm < alpha"),
        Column("margin", "float"),
        Column("alpha", "float"),
        Column("method", doc="interval: tango (score), agresti_min or wald"),
        Column("note", doc="best_model_vs_crowd: the model was chosen on these same dyads"),
        SOURCE,
    ),
    key=("comparison", "model_a", "modality_a", "model_b", "modality_b"),
)

POWER = Contract(
    "power",
    (
        Column("effect_size", "float"),
        Column("margin", "float"),
        Column("alpha", "float"),
        Column("power", "float"),
        Column("baseline_accuracy", "float"),
        Column("discordance", "float"),
        Column("n_mcnemar", "int", nullable=True, doc="paired dyads to detect the effect, by exact power"),
        Column("n_mcnemar_approx", "int", nullable=True, doc="the same by Connor's normal approximation"),
        Column("n_tost", "int", nullable=True, doc="paired dyads to show equivalence (normal approximation)"),
        Column("power_mcnemar_design", "float", nullable=True, doc="exact power with n_dyads_design"),
        Column("power_tost_design", "float", nullable=True, doc="exact chance of showing equivalence"),
        Column("tost_reachable", "bool", nullable=True, doc="power_tost_design reaches the power"),
        Column(
            "tost_size_design",
            "float",
            nullable=True,
            doc="exact type-I error of the TOST at this margin and alpha with n_dyads_design "
            "(sup over the discordance; Tango's test is near alpha, not below it at every n)",
        ),
        Column("note", doc="says when equivalence or detection is out of reach with this design"),
        Column("n_dyads_design", "int", doc="dyads in this study's design"),
    ),
    key=("effect_size", "margin"),
)

INDIVIDUAL_DIFFERENCES = Contract(
    "individual_differences",
    (
        Column("analysis", allowed=("correlation", "ols")),
        Column("modality"),
        Column("outcome"),
        Column("covariate"),
        Column("n", "int"),
        Column("pearson_r", "float", nullable=True),
        Column("pearson_p", "float", nullable=True),
        Column("spearman_r", "float", nullable=True),
        Column("spearman_p", "float", nullable=True),
        Column("estimate", "float", nullable=True),
        Column("std_error", "float", nullable=True),
        Column("ci_low", "float", nullable=True),
        Column("ci_high", "float", nullable=True),
        Column("p_value", "float", nullable=True),
        Column("r_squared", "float", nullable=True),
        Column("se_type"),
        SOURCE,
    ),
    key=("analysis", "modality", "outcome", "covariate"),
)

_DIAGNOSTICS = (
    Column("r_hat", "float", nullable=True),
    Column("ess_bulk", "float", nullable=True),
    Column("ess_tail", "float", nullable=True, doc="tail ESS (5% and 95% quantiles), checked as ess_bulk"),
    Column(
        "converged", "bool", doc="R-hat, bulk and tail ESS, and the fit's divergences (stats.convergence)"
    ),
    Column("flag", doc="why it does not count as converged; empty when it does"),
)

GLMM_SUMMARY = Contract(
    "glmm_summary",
    (
        Column("term", doc="bambi's name: modality[audio], 1|rater_id_sigma, ..."),
        Column("mean", "float"),
        Column("sd", "float"),
        Column("hdi_low", "float", nullable=True, doc="95% HDI"),
        Column("hdi_high", "float", nullable=True),
        *_DIAGNOSTICS,
        Column("formula"),
        Column("sampler"),
        Column("n_obs", "int"),
        Column("draws", "int"),
        Column("tune", "int"),
        Column("chains", "int"),
        Column(
            "divergences",
            "int",
            doc="divergent transitions of the fit; above max_divergences every row is flagged",
        ),
        Column(
            "target_accept",
            "float",
            doc="NUTS target acceptance of the reported fit (raised after divergences)",
        ),
        SOURCE,
    ),
    key=("term",),
)

GLMM_CONTRASTS = Contract(
    "glmm_contrasts",
    (
        Column(
            "contrast",
            doc="modality[a] - modality[b]: mean..p_gt_0 on the logit scale, pp_* in percentage points",
        ),
        Column("mean", "float"),
        Column("sd", "float"),
        Column("hdi_low", "float", nullable=True),
        Column("hdi_high", "float", nullable=True),
        Column("p_gt_0", "float", doc="posterior probability that the contrast is positive"),
        Column(
            "pp_mean",
            "float",
            doc="the accuracy difference in percentage points (pp_definition; docs/statistics.md)",
        ),
        Column("pp_sd", "float"),
        Column("pp_hdi_low", "float", nullable=True, doc="95% HDI of the pp difference"),
        Column("pp_hdi_high", "float", nullable=True),
        Column("pp_p_gt_0", "float", doc="posterior probability that the pp difference is positive"),
        Column("pp_zero_mean", "float", doc="the pp difference at random effects zero"),
        Column("pp_zero_sd", "float"),
        Column("pp_zero_hdi_low", "float", nullable=True),
        Column("pp_zero_hdi_high", "float", nullable=True),
        Column("pp_zero_p_gt_0", "float"),
        Column(
            "pp_definition",
            allowed=("averaged", "zero"),
            doc="averaged: over each modality's raters and dyads (the paper's marginal accuracies)",
        ),
        *_DIAGNOSTICS,
        SOURCE,
    ),
    key=("contrast",),
)

RASCH_DIFFICULTY = Contract(
    "rasch_difficulty",
    (
        Column("modality", allowed=MODALITIES),
        Column("rater_type", allowed=("human", "model")),
        Column("dyad_id"),
        Column("truth", allowed=RELATIONSHIPS),
        Column("difficulty", "float", doc="posterior mean; larger = harder"),
        Column("sd", "float"),
        Column(
            "sd_relative",
            "float",
            doc="posterior SD of the difficulty minus the fit's mean difficulty (the error of correlations)",
        ),
        Column("hdi_low", "float", nullable=True),
        Column("hdi_high", "float", nullable=True),
        Column(
            "accuracy",
            "float",
            nullable=True,
            doc="humans: share of the raters who were right (not the majority vote); models: mean over them",
        ),
        Column("n_responses", "int"),
        SOURCE,
    ),
    key=("modality", "rater_type", "dyad_id"),
)

RASCH_FITS = Contract(
    "rasch_fits",
    (
        Column("modality", allowed=MODALITIES),
        Column("rater_type", allowed=("human", "model")),
        Column("fitted", "bool"),
        Column("reason", doc="why no fit was made (too few raters or dyads)"),
        Column("n_persons", "int"),
        Column("n_items", "int"),
        Column("n_responses", "int"),
        Column("person_sd_mean", "float", nullable=True),
        Column("person_sd_hdi_low", "float", nullable=True),
        Column("person_sd_hdi_high", "float", nullable=True),
        Column(
            "difficulty_sd_mean",
            "float",
            nullable=True,
            doc="posterior mean of the SD of the difficulties (hierarchical prior)",
        ),
        Column("r_hat_max", "float", nullable=True),
        Column("ess_bulk_min", "float", nullable=True),
        Column("ess_tail_min", "float", nullable=True),
        Column("converged", "bool", nullable=True, doc="empty when no fit was made (not applicable)"),
        Column(
            "flag",
            doc="why the fit does not count as converged; 'not applicable: <reason>' when no fit was made",
        ),
        Column(
            "divergences",
            "int",
            nullable=True,
            doc="divergent transitions of the reported fit; above max_divergences: flagged",
        ),
        Column("target_accept", "float", nullable=True, doc="NUTS target acceptance of the reported fit"),
        Column("draws", "int", nullable=True, doc="draws per chain of the reported fit"),
        Column("attempts", "int", nullable=True, doc="fits made (more draws after a miss: until_converged)"),
        Column(
            "reliability",
            "float",
            nullable=True,
            doc="EAP reliability of the difficulties: var(means) / (var(means) + mean sd_relative^2)",
        ),
        SOURCE,
    ),
    key=("modality", "rater_type"),
)

RASCH_PERSONS = Contract(
    "rasch_persons",
    (
        Column("modality", allowed=MODALITIES),
        Column("rater_type", allowed=("human", "model")),
        Column("person", doc="the rater (humans) or the model (models) of the fit"),
        Column("ability", "float", doc="posterior mean of theta, on the fit's difficulty logit scale"),
        Column("sd", "float"),
        Column("hdi_low", "float", nullable=True, doc="95% HDI"),
        Column("hdi_high", "float", nullable=True),
        Column("r_hat", "float", nullable=True, doc="of the ability; the fit's r_hat_max covers it"),
        Column("ess_bulk", "float", nullable=True, doc="of the ability; the fit's ess_bulk_min covers it"),
        Column("ess_tail", "float", nullable=True, doc="of the ability; the fit's ess_tail_min covers it"),
        Column("n_responses", "int", doc="the person's answered responses in the fit"),
        SOURCE,
    ),
    key=("modality", "rater_type", "person"),
)

RASCH_CORRELATIONS = Contract(
    "rasch_correlations",
    (
        Column("rater_type", allowed=("human", "model")),
        Column("modality_a", allowed=MODALITIES),
        Column("modality_b", allowed=MODALITIES),
        Column("n", "int", doc="dyads with a difficulty in both"),
        Column("pearson_r", "float", nullable=True, doc="raw: of the posterior means (attenuated)"),
        Column("pearson_p", "float", nullable=True, doc="of the raw r"),
        Column("spearman_r", "float", nullable=True, doc="raw"),
        Column("spearman_p", "float", nullable=True),
        Column("reliability_a", "float", nullable=True, doc="EAP reliability of modality_a's difficulties"),
        Column("reliability_b", "float", nullable=True),
        Column(
            "pearson_r_corrected",
            "float",
            nullable=True,
            doc="pearson_r / sqrt(reliability_a reliability_b), capped at +/-1: of the latent difficulties",
        ),
        Column(
            "pearson_r_corrected_uncapped",
            "float",
            nullable=True,
            doc="the corrected r before the cap (above 1 in size when sampling error pushes it there)",
        ),
        Column(
            "pearson_r_corrected_capped", "bool", doc="true when the cap at +/-1 changed pearson_r_corrected"
        ),
        Column(
            "pearson_r_corrected_low",
            "float",
            nullable=True,
            doc="95% bootstrap interval over the dyads (r, both reliabilities redone), clipped to +/-1",
        ),
        Column("pearson_r_corrected_high", "float", nullable=True),
        Column(
            "pearson_r_corrected_note",
            doc="why pearson_r_corrected is empty (a reliability below min_reliability); empty otherwise",
        ),
        SOURCE,
    ),
    key=("rater_type", "modality_a", "modality_b"),
)

RASCH_PARTIAL = Contract(
    "rasch_partial",
    (
        Column("modality", allowed=MODALITIES),
        Column("measure", allowed=("accuracy", "difficulty")),
        Column("n", "int", doc="dyads with both a human and a model value"),
        Column("r", "float", nullable=True, doc="raw Pearson r, humans vs models"),
        Column("partial_r", "float", nullable=True, doc="raw, controlling for the true class"),
        Column("partial_p", "float", nullable=True, doc="two-sided, n - 3 degrees of freedom, of the raw"),
        Column(
            "reliability_human",
            "float",
            nullable=True,
            doc="difficulty: EAP reliability; accuracy: 1 - mean sampling variance / variance",
        ),
        Column("reliability_model", "float", nullable=True),
        Column(
            "r_corrected",
            "float",
            nullable=True,
            doc="r / sqrt(reliability_human reliability_model), capped at +/-1 (see r_corrected_capped)",
        ),
        Column(
            "r_corrected_uncapped",
            "float",
            nullable=True,
            doc="the corrected r before the cap (above 1 in size when sampling error pushes it there)",
        ),
        Column("r_corrected_capped", "bool", doc="true when the cap at +/-1 changed r_corrected"),
        Column(
            "r_corrected_low",
            "float",
            nullable=True,
            doc="95% bootstrap interval over the dyads (r, both reliabilities redone), clipped to +/-1",
        ),
        Column("r_corrected_high", "float", nullable=True),
        Column(
            "r_corrected_note",
            doc="why r_corrected is empty (a reliability below min_reliability); empty otherwise",
        ),
        Column(
            "partial_r_corrected",
            "float",
            nullable=True,
            doc="partial_r over the reliabilities of the class-centred values, capped at +/-1",
        ),
        Column(
            "partial_r_corrected_uncapped",
            "float",
            nullable=True,
            doc="the corrected partial r before the cap (above 1 in size when sampling error pushes it)",
        ),
        Column(
            "partial_r_corrected_capped", "bool", doc="true when the cap at +/-1 changed partial_r_corrected"
        ),
        Column(
            "partial_r_corrected_low",
            "float",
            nullable=True,
            doc="95% bootstrap interval over the dyads (r, both reliabilities redone), clipped to +/-1",
        ),
        Column("partial_r_corrected_high", "float", nullable=True),
        Column(
            "partial_r_corrected_note",
            doc="why partial_r_corrected is empty (a reliability below min_reliability); empty otherwise",
        ),
        SOURCE,
    ),
    key=("modality", "measure"),
)

# every analysis table by the name of its file (without .csv), as the scripts write them
ANALYSIS_TABLES = {
    "metrics": FAM_METRICS,
    "nonanswer_accuracy": NONANSWER,
    "per_rater_sdt": PER_RATER,
    "majority_votes": MAJORITY_VOTES,
    "crowd_curves": CROWD_CURVES,
    "calibration": CALIBRATION,
    "prompt_sensitivity": PROMPT_SENSITIVITY,
    "mcnemar": MCNEMAR,
    "tost": TOST,
    "power": POWER,
    "individual_differences": INDIVIDUAL_DIFFERENCES,
    "glmm_summary": GLMM_SUMMARY,
    "glmm_contrasts": GLMM_CONTRASTS,
    "rasch_difficulty": RASCH_DIFFICULTY,
    "rasch_fits": RASCH_FITS,
    "rasch_persons": RASCH_PERSONS,
    "rasch_correlations": RASCH_CORRELATIONS,
    "rasch_partial": RASCH_PARTIAL,
}
