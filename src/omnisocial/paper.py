"""The numbers a paper's results section quotes, regenerated with the study (rule `paper_*`).

For every benchmark a study runs (familiarity; who / when / how and streaming when
`social.enabled`) `write_paper(paper, folder)` writes under the study's results folder:

- `numbers.tex`: one LaTeX macro per quoted number (`\\AudioOverTextPP` -> `6.5~pp`), formatted
  as a paper writes it (percentages to one decimal, d' and c to two, p-values to three or
  `<0.001`, intervals in brackets), each on one line with a comment naming the table, the row
  and the column it was read from and the config hash of the settings that table depends on;
- `numbers.json`: the same numbers unformatted (proportions as proportions), with their source;
- `results.md`: a draft results section in the paper's order quoting those numbers, saying
  "n/a" and why where a number does not exist (a model with no answers, a fit not made) and
  carrying a fit's convergence flag next to every number read from it.

One line per number, in a fixed order, and a config hash per *table* (`table_hashes`: only the
settings of the rules that table goes back to, figures and threads never): a rerun that
changes a number changes its macro's line and nothing else, and a figure-only setting changes
no byte. Macro names are built from templates (`MACROS`, the outputs page lists them) whose
placeholders are table keys spelled in letters (`macro_part`: `gpt-4o@v1` -> `GptFourOAtVOne`),
so a name never depends on a value.

Every builder reads DataFrames (a missing table is None), so the tests call them without a
workflow run; the tables' convergence columns are read generically (`fit_flag`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from omnisocial.io import atomic_path
from omnisocial.summary import FUNNEL_STAGES, funnel_section, inputs_section
from omnisocial.tables import NOT_APPLICABLE

MODALITIES = ("text", "audio", "video")
# the GLMM contrasts as the paper states them: the richer modality over the poorer one
PAPER_CONTRASTS = (("audio", "text"), ("video", "audio"), ("video", "text"))
CROWD = "human_majority"
MISSING_TEXT = "n/a"

# --- which settings each table depends on (its config hash) ---------------------------------

_CORPUS = ("study", "corpus", "demo", "asr", "vad", "signals", "filters", "clips")
_DESIGN = (*_CORPUS, "sampling", "release")
_TRIALS = (*_DESIGN, "ratings")
_ANSWERS = (*_TRIALS, "stimuli", "models", "inference", "baselines")
_SCORE = (
    "analysis.seed",
    "analysis.crowd_resamples",
    "analysis.calibration_bins",
    "analysis.calibration_bootstrap",
)
_TESTS = (
    "analysis.seed",
    "analysis.tost_margin",
    "analysis.tost_alpha",
    "analysis.tost_method",
    "analysis.power",
)
# table -> (its file under the benchmark's results folder, the config keys of the rules it goes back to)
TABLES = {
    "filter_report": ("filters/filter_report.csv", _CORPUS),
    "design": ("design/design.csv", _DESIGN),
    "metrics": ("analysis/metrics.csv", (*_ANSWERS, *_SCORE)),
    "majority_votes": ("analysis/majority_votes.csv", (*_ANSWERS, *_SCORE)),
    "nonanswer_accuracy": ("analysis/nonanswer_accuracy.csv", (*_ANSWERS, *_SCORE)),
    "crowd_curves": ("analysis/crowd_curves.csv", (*_ANSWERS, *_SCORE)),
    "mcnemar": ("analysis/mcnemar.csv", (*_ANSWERS, *_TESTS)),
    "glmm_summary": ("analysis/glmm_summary.csv", (*_TRIALS, "analysis.seed", "analysis.glmm")),
    "glmm_contrasts": ("analysis/glmm_contrasts.csv", (*_TRIALS, "analysis.seed", "analysis.glmm")),
    "rasch_fits": ("analysis/rasch_fits.csv", (*_ANSWERS, "analysis.seed", "analysis.rasch")),
    "rasch_correlations": ("analysis/rasch_correlations.csv", (*_ANSWERS, "analysis.seed", "analysis.rasch")),
    "rasch_partial": ("analysis/rasch_partial.csv", (*_ANSWERS, "analysis.seed", "analysis.rasch")),
    "social_profile": ("metrics/social_profile.csv", ("social",)),
    "streaming_metrics": ("metrics/streaming_metrics.csv", ("social",)),
}
# the tables each benchmark's numbers are read from (the rule's inputs)
BENCHMARK_TABLES = {
    "familiarity": (
        "filter_report",
        "design",
        "metrics",
        "nonanswer_accuracy",
        "majority_votes",
        "crowd_curves",
        "mcnemar",
        "glmm_summary",
        "glmm_contrasts",
        "rasch_fits",
        "rasch_correlations",
        "rasch_partial",
    ),
    "socialomni": ("social_profile",),
    "streaming": ("streaming_metrics",),
}
# settings that never change a number: where files go, how many cores, how figures look
NOT_NUMBERS = ("results", "figures", "threads")


def _setting(config: Mapping, path: str):
    node = config
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, Mapping):  # social.results: where files go, not what they hold
        return {key: value for key, value in node.items() if key not in NOT_NUMBERS}
    return node


def table_hashes(config: Mapping) -> dict[str, str]:
    """table -> the first 12 hex digits of the SHA-256 of the settings it depends on (TABLES)."""
    hashes = {}
    for table, (_, keys) in TABLES.items():
        scoped = {key: _setting(config, key) for key in keys}
        text = json.dumps(scoped, sort_keys=True, default=str, separators=(",", ":"))
        hashes[table] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return hashes


def number_settings(config: Mapping) -> dict:
    """The config without the settings that never change a number (the paper rules' params)."""
    return {key: value for key, value in config.items() if key not in NOT_NUMBERS}


# --- macro names ---------------------------------------------------------------------------

_DIGITS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")


def macro_part(value) -> str:
    """A table key in letters only, as a LaTeX macro name needs it: each run of letters
    capitalised, each digit spelled out, '@' read "At", anything else a separator
    (`gpt-4o@v1` -> `GptFourOAtVOne`, `human_majority` -> `HumanMajority`)."""
    text = str(value).replace("@", " at ")
    parts = []
    for token in re.findall(r"[A-Za-z]+|[0-9]", text):
        parts.append(_DIGITS[int(token)] if token.isdigit() else token[0].upper() + token[1:])
    if not parts:
        raise ValueError(f"{value!r} has no letter or digit to name a macro by")
    return "".join(parts)


@dataclass(frozen=True)
class Macro:
    template: str  # Model{model}Acc{modality}: placeholders are table keys (macro_part)
    kind: str  # how it is written (FORMATS)
    table: str
    column: str
    meaning: str


def _m(template, kind, table, column, meaning):
    return template, Macro(template, kind, table, column, meaning)


# Every macro a benchmark can write: the outputs page lists them (macro_reference).
MACROS = {
    "familiarity": dict(
        [
            _m("FunnelCorpus", "count", "filter_report", "(rows)", "interactions in the corpus"),
            _m(
                "Funnel{stage}",
                "count",
                "filter_report",
                "{stage}_pass",
                "interactions left after the stage (ingested, F1 ... F5, audit), in order",
            ),
            _m("FunnelEligible", "count", "filter_report", "passed", "interactions that passed every filter"),
            _m("DesignDyads", "count", "design", "(rows)", "dyads in the design"),
            _m("Design{relationship}", "count", "design", "relationship", "familiar / stranger dyads"),
            _m(
                "Raters{modality}",
                "count",
                "metrics",
                "(rows rater_type=human)",
                "raters who rated the modality",
            ),
            _m("Ratings{modality}", "count", "metrics", "n_answered (sum over raters)", "answered ratings"),
            _m(
                "RatersPerDyad{modality}Min",
                "count",
                "majority_votes",
                "n_raters (min)",
                "fewest raters of any dyad: the smallest crowd",
            ),
            _m(
                "RatersPerDyad{modality}Max",
                "count",
                "majority_votes",
                "n_raters (max)",
                "most raters of any dyad",
            ),
            _m(
                "HumanAcc{modality}",
                "percent",
                "metrics",
                "accuracy (mean over raters)",
                "mean rater accuracy",
            ),
            _m("HumanDPrime{modality}", "decimal", "metrics", "d_prime (mean over raters)", "mean rater d'"),
            _m(
                "HumanCriterion{modality}",
                "decimal",
                "metrics",
                "criterion (mean over raters)",
                "mean rater c",
            ),
            _m("CrowdAcc{modality}", "percent", "metrics", "accuracy", "majority-vote accuracy"),
            _m(
                "CrowdAcc{modality}CI",
                "percent_interval",
                "metrics",
                "ci_low, ci_high",
                "its 95% Wilson interval",
            ),
            _m("CrowdDPrime{modality}", "decimal", "metrics", "d_prime", "majority-vote d'"),
            _m("CrowdCriterion{modality}", "decimal", "metrics", "criterion", "majority-vote c"),
            _m("CrowdP{modality}", "p", "metrics", "p_value", "exact binomial test against 0.5"),
            _m(
                "CrowdCurve{modality}KOne",
                "percent",
                "crowd_curves",
                "accuracy_mean (k=1)",
                "accuracy of one rater",
            ),
            _m(
                "CrowdCurve{modality}KMax",
                "percent",
                "crowd_curves",
                "accuracy_mean",
                "accuracy of the largest crowd every dyad has",
            ),
            _m("CrowdCurve{modality}KMaxSize", "count", "crowd_curves", "k", "that crowd's size"),
            _m(
                "Model{model}Acc{modality}",
                "percent",
                "metrics",
                "accuracy",
                "model accuracy on answered dyads",
            ),
            _m(
                "Model{model}Acc{modality}CI",
                "percent_interval",
                "metrics",
                "ci_low, ci_high",
                "95% Wilson interval",
            ),
            _m("Model{model}Answered{modality}", "count", "metrics", "n_answered", "dyads answered"),
            _m("Model{model}Coverage{modality}", "percent", "metrics", "coverage", "answered / asked"),
            _m("Model{model}DPrime{modality}", "decimal", "metrics", "d_prime", "model d'"),
            _m("Model{model}Criterion{modality}", "decimal", "metrics", "criterion", "model c"),
            _m("Model{model}P{modality}", "p", "metrics", "p_value", "exact binomial test against 0.5"),
            _m(
                "Model{model}AccNonanswerWrong{modality}",
                "percent",
                "nonanswer_accuracy",
                "accuracy_nonanswer_wrong",
                "accuracy with the non-answers counted wrong (coverage below 1)",
            ),
            _m(
                "Model{model}AccNonanswerCoin{modality}",
                "percent",
                "nonanswer_accuracy",
                "accuracy_nonanswer_coinflip",
                "accuracy with the non-answers counted as coin flips",
            ),
            _m(
                "BestModel{modality}",
                "text",
                "metrics",
                "model",
                "the best model at the first prompt variant",
            ),
            _m("BestModelAcc{modality}", "percent", "metrics", "accuracy", "its accuracy"),
            _m(
                "BestModelAcc{modality}CI",
                "percent_interval",
                "metrics",
                "ci_low, ci_high",
                "its 95% Wilson interval",
            ),
            _m("McNemarBestVsCrowd{modality}N", "count", "mcnemar", "n_items", "dyads both answered"),
            _m("McNemarBestVsCrowd{modality}B", "count", "mcnemar", "b", "model right, crowd wrong"),
            _m("McNemarBestVsCrowd{modality}C", "count", "mcnemar", "c", "model wrong, crowd right"),
            _m("McNemarBestVsCrowd{modality}P", "p", "mcnemar", "p_value", "exact two-sided p"),
            _m("McNemarBestVsCrowd{modality}PHolm", "p", "mcnemar", "p_holm", "Holm-adjusted p"),
            _m(
                "McNemarCrowd{modality}Vs{other}P",
                "p",
                "mcnemar",
                "p_value",
                "the crowd, one modality against another",
            ),
            _m(
                "{modality}Over{other}PP",
                "pp",
                "glmm_contrasts",
                "pp_mean",
                "GLMM contrast in percentage points of accuracy (e.g. \\AudioOverTextPP)",
            ),
            _m(
                "{modality}Over{other}PPHDI",
                "pp_interval",
                "glmm_contrasts",
                "pp_hdi_low, pp_hdi_high",
                "its 95% HDI",
            ),
            _m(
                "{modality}Over{other}Prob",
                "prob",
                "glmm_contrasts",
                "pp_p_gt_0",
                "posterior probability it is > 0",
            ),
            _m(
                "{modality}Over{other}Logit",
                "decimal",
                "glmm_contrasts",
                "mean",
                "the contrast on the logit scale",
            ),
            _m(
                "{modality}Over{other}LogitHDI",
                "interval",
                "glmm_contrasts",
                "hdi_low, hdi_high",
                "its 95% HDI",
            ),
            _m("GlmmTrials", "count", "glmm_summary", "n_obs", "human trials the GLMM was fitted to"),
            _m("GlmmDraws", "count", "glmm_summary", "draws", "posterior draws per chain"),
            _m("GlmmChains", "count", "glmm_summary", "chains", "chains"),
            _m(
                "DifficultyPartialRCorr{modality}",
                "decimal",
                "rasch_partial",
                "partial_r_corrected",
                "human vs model dyad difficulty, controlling for the class, corrected for attenuation",
            ),
            _m(
                "DifficultyPartialRCorr{modality}CI",
                "interval",
                "rasch_partial",
                "partial_r_corrected_low, partial_r_corrected_high",
                "its 95% bootstrap interval",
            ),
            _m(
                "DifficultyPartialR{modality}",
                "decimal",
                "rasch_partial",
                "partial_r",
                "the same, uncorrected",
            ),
            _m("DifficultyPartialP{modality}", "p", "rasch_partial", "partial_p", "its p-value"),
            _m("DifficultyPartialN{modality}", "count", "rasch_partial", "n", "dyads in it"),
            _m(
                "AccuracyPartialRCorr{modality}",
                "decimal",
                "rasch_partial",
                "partial_r_corrected",
                "human vs model accuracy per dyad, controlling for the class, corrected",
            ),
            _m(
                "Difficulty{ratertype}RCorr{modality}{other}",
                "decimal",
                "rasch_correlations",
                "pearson_r_corrected",
                "dyad difficulty across two modalities, corrected for attenuation",
            ),
            _m(
                "Difficulty{ratertype}RCorr{modality}{other}CI",
                "interval",
                "rasch_correlations",
                "pearson_r_corrected_low, pearson_r_corrected_high",
                "its 95% bootstrap interval",
            ),
        ]
    ),
    "socialomni": dict(
        [
            _m("Who{model}Acc", "percent", "social_profile", "who_accuracy", "who: accuracy"),
            _m(
                "Who{model}AccCI",
                "percent_interval",
                "social_profile",
                "who_accuracy_low, who_accuracy_high",
                "95% Wilson interval",
            ),
            _m("Who{model}N", "count", "social_profile", "who_n", "who items scored"),
            _m(
                "Who{model}Gap",
                "pp",
                "social_profile",
                "who_consistency_gap",
                "consistent minus inconsistent accuracy, percentage points",
            ),
            _m("When{model}Acc", "percent", "social_profile", "when_accuracy", "when: single-cut accuracy"),
            _m(
                "When{model}AccCI",
                "percent_interval",
                "social_profile",
                "when_accuracy_low, when_accuracy_high",
                "95% Wilson interval",
            ),
            _m("When{model}OnTime", "percent", "social_profile", "when_on_time", "when, streamed: on time"),
            _m(
                "When{model}OnTimeCI",
                "percent_interval",
                "social_profile",
                "when_on_time_low, when_on_time_high",
                "95% Wilson interval",
            ),
            _m("When{model}Early", "percent", "social_profile", "when_early", "when, streamed: early rate"),
            _m("When{model}Late", "percent", "social_profile", "when_late", "when, streamed: late rate"),
            _m("When{model}FOne", "decimal", "social_profile", "when_f1", "tolerance-window F1"),
            _m(
                "How{model}Mean", "score", "social_profile", "how_mean", "how: judged score 0-100, zeros kept"
            ),
            _m(
                "How{model}MeanCI",
                "score_interval",
                "social_profile",
                "how_mean_low, how_mean_high",
                "95% t interval over items",
            ),
            _m(
                "How{model}MeanNoZeros", "score", "social_profile", "how_mean_without_zeros", "zeros left out"
            ),
            _m("How{model}N", "count", "social_profile", "how_n", "items judged"),
        ]
    ),
    "streaming": dict(
        [
            _m(
                "Stream{model}{split}Temporal",
                "score",
                "streaming_metrics",
                "temporal_100",
                "real-time description: temporal score 0-100",
            ),
            _m(
                "Stream{model}{split}Content",
                "score",
                "streaming_metrics",
                "content_100",
                "real-time description: content score 0-100",
            ),
            _m(
                "Stream{model}{split}Reminder",
                "score",
                "streaming_metrics",
                "reminder_100",
                "proactive reminder: samples with every event met, 0-100",
            ),
            _m("Stream{model}{split}Items", "count", "streaming_metrics", "n_rtd + n_pr", "items scored"),
            _m(
                "Stream{model}{split}Unparsed",
                "count",
                "streaming_metrics",
                "n_unparsed_steps",
                "streamed steps whose reply was neither silence nor an utterance",
            ),
        ]
    ),
}


# --- formatting ----------------------------------------------------------------------------


def _missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, (list, tuple)):
        return any(_missing(v) for v in value)
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _signed(value: float, digits: int) -> str:
    """A number to `digits` decimals with the minus sign (LaTeX: math minus, not a hyphen); one
    that rounds to zero has none (0.0, not -0.0)."""
    text = f"{float(value):.{digits}f}"
    if float(text) == 0:
        return text.lstrip("-")
    return "\u2212" + text[1:] if text.startswith("-") else text


def _bounded(value: float, digits: int) -> str:
    """A probability as a paper writes it: <0.001 and >0.999 at the ends."""
    low = 10**-digits
    if value < low:
        return f"<{low:.{digits}f}"
    if value > 1 - low:
        return f">{1 - low:.{digits}f}"
    return f"{value:.{digits}f}"


FORMATS = {
    "count": lambda v: f"{int(round(float(v))):,}",
    "percent": lambda v: f"{100 * float(v):.1f}%",
    "percent_interval": lambda v: f"[{100 * float(v[0]):.1f}%, {100 * float(v[1]):.1f}%]",
    "pp": lambda v: _signed(v, 1) + " pp",
    "pp_interval": lambda v: f"[{_signed(v[0], 1)}, {_signed(v[1], 1)}]",
    "decimal": lambda v: _signed(v, 2),
    "interval": lambda v: f"[{_signed(v[0], 2)}, {_signed(v[1], 2)}]",
    "p": lambda v: _bounded(float(v), 3),
    "prob": lambda v: _bounded(float(v), 3),
    "score": lambda v: f"{float(v):.1f}",
    "score_interval": lambda v: f"[{float(v[0]):.1f}, {float(v[1]):.1f}]",
    "text": str,
}
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "%": r"\%",
    "_": r"\_",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "\u2212": r"\ensuremath{-}",
}


def latex(plain: str) -> str:
    """Text as LaTeX (the numbers' plain form: `6.5 pp` -> `6.5~pp`, `<0.001`, the minus sign)."""
    text = "".join(_LATEX_SPECIAL.get(char, char) for char in plain)
    return text.replace(" pp", "~pp")


@dataclass(frozen=True)
class Number:
    name: str  # the macro's name, without the backslash
    template: str  # its MACROS entry
    kind: str
    value: object  # float, int, str or [low, high]; None where missing
    table: str
    row: str  # the row's key, "contrast=modality[audio] - modality[text]"
    column: str
    config_hash: str
    flag: str = ""  # the convergence flag of the fit it comes from
    missing: str = ""  # why there is no value

    @property
    def plain(self) -> str:
        return MISSING_TEXT if self.missing else FORMATS[self.kind](self.value)

    @property
    def tex(self) -> str:
        return latex(self.plain)

    def quoted(self) -> str:
        """As the draft quotes it: the value, or n/a and why; a flag after it."""
        text = f"n/a ({self.missing})" if self.missing else self.plain
        return f"{text} (**flagged**: {self.flag})" if self.flag else text

    def source(self) -> str:
        return f"{TABLES[self.table][0]}; {self.row}; {self.column}; config {self.config_hash}"


def _clean(value):
    """Plain Python values for numbers.json (numpy scalars as int / float / bool)."""
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value.item() if hasattr(value, "item") else value


@dataclass
class Paper:
    """The numbers of one benchmark and the draft that quotes them, built together so that
    every number the draft quotes is a macro and every macro is quoted (`number` returns the
    draft's text of it)."""

    benchmark: str
    hashes: Mapping[str, str]
    numbers: list[Number] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def number(
        self,
        template: str,
        value,
        *,
        table: str,
        row: str,
        column: str | None = None,
        flag: str = "",
        missing: str = "",
        **keys,
    ) -> Number:
        macro = MACROS[self.benchmark][template]
        name = template.format(**{key: macro_part(v) for key, v in keys.items()})
        value = _clean(value)
        if not missing and _missing(value):
            missing = f"empty in {Path(TABLES[table][0]).name}"
        number = Number(
            name=name,
            template=template,
            kind=macro.kind,
            value=None if missing else value,
            table=table,
            row=row,
            column=column or macro.column,
            config_hash=self.hashes.get(table, ""),
            flag=flag,
            missing=missing,
        )
        clash = next((n for n in self.numbers if n.name == name), None)
        if clash is not None:
            raise ValueError(
                f"macro \\{name} would stand for two numbers: {clash.source()} and {number.source()} "
                "(two table keys that read alike in letters; rename one)"
            )
        self.numbers.append(number)
        return number

    def say(self, *text: str) -> None:
        self.lines.append(" ".join(part for part in text if part))

    def heading(self, text: str) -> None:
        self.lines += ["", f"## {text}", ""]


# --- reading the tables ----------------------------------------------------------------------


def _truthy(value) -> bool | None:
    """A bool column as read from CSV (True, "true", 1); None where empty."""
    if _missing(value):
        return None
    if isinstance(value, str):
        return value.strip().lower() in {"true", "1", "yes"}
    return bool(value)


def _text(value) -> str:
    return "" if _missing(value) else str(value).strip()


def fit_flag(row: Mapping) -> str:
    """Why a fit's row does not count as converged ("" when it does), read from whatever the
    table has: a non-empty `flag` or `status` (a fit that cannot exist: "not applicable: <why>"),
    a `fitted` column that is false (with its `reason`), a `converged` column that is false."""
    flag = _text(row.get("flag")) or _text(row.get("status"))
    if flag:
        return flag
    if "fitted" in row and _truthy(row["fitted"]) is False:
        reason = _text(row.get("reason"))
        return f"not fitted: {reason}" if reason else "not fitted"
    if "converged" in row and _truthy(row["converged"]) is False:
        return "not converged"
    return ""


def _rows(table: pd.DataFrame | None, **where) -> pd.DataFrame:
    if table is None or table.empty:
        return pd.DataFrame()
    mask = pd.Series(True, index=table.index)
    for column, value in where.items():
        if column not in table.columns:
            return table.iloc[0:0]
        mask &= table[column].astype(str) == str(value)
    return table[mask]


def _key(**where) -> str:
    return ", ".join(f"{key}={value}" for key, value in where.items())


def _modalities(*tables: pd.DataFrame | None) -> list[str]:
    found = set()
    for table in tables:
        if table is not None and "modality" in table.columns:
            found |= set(table["modality"].astype(str))
    return [m for m in MODALITIES if m in found]


def _title(modality: str) -> str:
    return modality.capitalize()


# --- familiarity -------------------------------------------------------------------------------


def _inputs(
    paper: Paper, config: Mapping, benchmark_rows: Iterable[str], tables: Mapping | None = None
) -> None:
    tables = tables or {}
    inputs = inputs_section(config, tables.get("release_predictions"), tables.get("release_report"))
    rows = inputs[inputs["input"].isin(list(benchmark_rows))]
    simulated = rows["status"].astype(str).str.startswith("simulated").any()
    if simulated:
        paper.say("**SIMULATED DATA**: some inputs below are the demo's stand-ins, not a real study.")
        paper.say("")
    for row in rows.itertuples(index=False):
        paper.say(f"- {row.input}: {row.status} ({row.detail})")


def _funnel(paper: Paper, tables: Mapping) -> None:
    report, design = tables.get("filter_report"), tables.get("design")
    if report is not None:
        funnel = funnel_section(report, None)
        columns = [column for column, _ in FUNNEL_STAGES if column in report.columns]
        stages = ["corpus", *columns, *(["passed"] if "passed" in report.columns else [])]
        said = []
        for stage, row in zip(stages, funnel.itertuples(index=False), strict=True):
            if stage == "corpus":
                n = paper.number(
                    "FunnelCorpus", row.n, table="filter_report", row="every row", column="(rows)"
                )
                said.append(f"- interactions in the corpus: {n.quoted()}")
            elif stage == "passed":
                n = paper.number(
                    "FunnelEligible",
                    row.n,
                    table="filter_report",
                    row="rows passing every stage",
                    column="passed",
                )
                said.append(f"- passed every filter: {n.quoted()}")
            else:
                name = stage.removesuffix("_pass")
                n = paper.number(
                    "Funnel{stage}",
                    row.n,
                    table="filter_report",
                    row="rows passing every stage so far",
                    column=stage,
                    stage=name,
                )
                said.append(f"- left after {row.stage}: {n.quoted()}")
        paper.say("Interactions left after each filter, applied in order:")
        paper.say("")
        for line in said:
            paper.say(line)
        paper.say("")
    else:
        paper.say("The design was imported from a released data set: no corpus was filtered here.")
    if design is not None:
        dyads = paper.number("DesignDyads", len(design), table="design", row="every row", column="(rows)")
        parts = []
        for relationship in ("familiar", "stranger"):
            count = int((design["relationship"].astype(str) == relationship).sum())
            n = paper.number(
                "Design{relationship}",
                count,
                table="design",
                row=f"relationship={relationship}",
                column="(rows)",
                relationship=relationship,
            )
            parts.append(f"{n.quoted()} {relationship}")
        paper.say(f"The design holds {dyads.quoted()} dyads ({', '.join(parts)}).")


def _raters(paper: Paper, tables: Mapping, modalities: list[str]) -> None:
    metrics, votes = tables.get("metrics"), tables.get("majority_votes")
    for modality in modalities:
        humans = _rows(metrics, rater_type="human", modality=modality)
        if humans.empty:
            paper.say(f"- {modality}: no human ratings.")
            continue
        raters = paper.number(
            "Raters{modality}",
            len(humans),
            table="metrics",
            row=_key(rater_type="human", modality=modality),
            modality=modality,
        )
        ratings = paper.number(
            "Ratings{modality}",
            humans["n_answered"].sum(),
            table="metrics",
            row=_key(rater_type="human", modality=modality),
            modality=modality,
        )
        own = _rows(votes, modality=modality)
        low = paper.number(
            "RatersPerDyad{modality}Min",
            own["n_raters"].min() if len(own) else None,
            table="majority_votes",
            row=_key(modality=modality),
            modality=modality,
        )
        high = paper.number(
            "RatersPerDyad{modality}Max",
            own["n_raters"].max() if len(own) else None,
            table="majority_votes",
            row=_key(modality=modality),
            modality=modality,
        )
        paper.say(
            f"- {modality}: {raters.quoted()} raters gave {ratings.quoted()} ratings; each dyad's crowd "
            + (
                f"held {low.quoted()} raters."
                if low.plain == high.plain
                else f"held {low.quoted()} to {high.quoted()} raters."
            )
        )


def _crowd_curve(paper: Paper, curves: pd.DataFrame | None, modality: str) -> str:
    own = _rows(curves, modality=modality)
    if own.empty:
        return ""
    one = _rows(own, k=1)
    single = paper.number(
        "CrowdCurve{modality}KOne",
        one["accuracy_mean"].iloc[0] if len(one) else None,
        table="crowd_curves",
        row=_key(modality=modality, k=1),
        modality=modality,
    )
    full = own[~own["beyond_min_raters"].map(_truthy).fillna(False).astype(bool)]
    if full.empty:
        return f" One rater alone was right on {single.quoted()} of dyads."
    top = full.loc[full["k"].astype(int).idxmax()]
    k = int(top["k"])
    size = paper.number(
        "CrowdCurve{modality}KMaxSize",
        k,
        table="crowd_curves",
        row=_key(modality=modality, k=k),
        modality=modality,
    )
    accuracy = paper.number(
        "CrowdCurve{modality}KMax",
        top["accuracy_mean"],
        table="crowd_curves",
        row=_key(modality=modality, k=k),
        modality=modality,
    )
    return (
        f" One rater alone was right on {single.quoted()} of dyads, a crowd of {size.quoted()} "
        f"(the largest every dyad has) on {accuracy.quoted()} (mean over rater resamples)."
    )


def _best_model(models: pd.DataFrame, variant: str) -> pd.Series | None:
    names = models["model"].astype(str)
    primary = models[~names.str.contains("@") | names.str.endswith(f"@{variant}")]
    answered = primary[pd.to_numeric(primary["accuracy"], errors="coerce").notna()]
    if answered.empty:
        return None
    return answered.sort_values(["accuracy", "model"], ascending=[False, True]).iloc[0]


def _refusals(paper: Paper, nonanswer: pd.DataFrame | None, model: str, modality: str, skipped: int) -> str:
    """The accuracy with a model's non-answers counted wrong and as coin flips (benchmarks 1.9)."""
    rows = _rows(nonanswer, model=model, modality=modality)
    missing = "" if len(rows) else "no row in nonanswer_accuracy.csv"
    row = rows.iloc[0] if len(rows) else {}
    keys = {
        "table": "nonanswer_accuracy",
        "row": _key(model=model, modality=modality),
        "missing": missing,
        "model": model,
        "modality": modality,
    }
    wrong = paper.number(
        "Model{model}AccNonanswerWrong{modality}", row.get("accuracy_nonanswer_wrong"), **keys
    )
    coin = paper.number(
        "Model{model}AccNonanswerCoin{modality}", row.get("accuracy_nonanswer_coinflip"), **keys
    )
    return f"; its {skipped} non-answers counted wrong: {wrong.quoted()}, as coin flips: {coin.quoted()}"


def _model_numbers(paper: Paper, row: pd.Series, modality: str, nonanswer: pd.DataFrame | None = None) -> str:
    model = str(row["model"])
    where = _key(model=model, modality=modality)
    keys = {"model": model, "modality": modality}
    asked, answered = int(row["n_items"]), int(row["n_answered"])
    count = paper.number("Model{model}Answered{modality}", answered, table="metrics", row=where, **keys)
    coverage = paper.number(
        "Model{model}Coverage{modality}", row["coverage"], table="metrics", row=where, **keys
    )
    none = f"no answers (0 of {asked} dyads answered)" if answered == 0 else ""
    numbers = {}
    for template, column in (
        ("Model{model}Acc{modality}", "accuracy"),
        ("Model{model}DPrime{modality}", "d_prime"),
        ("Model{model}Criterion{modality}", "criterion"),
        ("Model{model}P{modality}", "p_value"),
    ):
        numbers[column] = paper.number(
            template, row[column], table="metrics", row=where, missing=none, **keys
        )
    interval = paper.number(
        "Model{model}Acc{modality}CI",
        [row["ci_low"], row["ci_high"]],
        table="metrics",
        row=where,
        missing=none,
        **keys,
    )
    refusals = _refusals(paper, nonanswer, model, modality, asked - answered) if answered < asked else ""
    if none:
        return f"{model}: {none}, so no accuracy{refusals}"
    return (
        f"{model}: {numbers['accuracy'].quoted()} {interval.quoted()} on {count.quoted()} answered "
        f"dyads (coverage {coverage.quoted()}; d' {numbers['d_prime'].quoted()}, "
        f"c {numbers['criterion'].quoted()}; binomial p {numbers['p_value'].quoted()}){refusals}"
    )


def _accuracy(paper: Paper, tables: Mapping, modalities: list[str], variant: str) -> None:
    metrics = tables.get("metrics")
    for modality in modalities:
        title = _title(modality)
        sentences = []
        humans = _rows(metrics, rater_type="human", modality=modality)
        if len(humans):
            where = _key(rater_type="human", modality=modality)
            keys = {"table": "metrics", "row": where, "modality": modality}
            mean = paper.number("HumanAcc{modality}", pd.to_numeric(humans["accuracy"]).mean(), **keys)
            d = paper.number("HumanDPrime{modality}", pd.to_numeric(humans["d_prime"]).mean(), **keys)
            c = paper.number("HumanCriterion{modality}", pd.to_numeric(humans["criterion"]).mean(), **keys)
            sentences.append(
                f"{title}: raters were right on {mean.quoted()} of their dyads on average "
                f"(mean d' {d.quoted()}, mean c {c.quoted()})."
            )
        crowd = _rows(metrics, model=CROWD, modality=modality)
        if len(crowd):
            row = crowd.iloc[0]
            keys = {"table": "metrics", "row": _key(model=CROWD, modality=modality), "modality": modality}
            accuracy = paper.number("CrowdAcc{modality}", row["accuracy"], **keys)
            interval = paper.number("CrowdAcc{modality}CI", [row["ci_low"], row["ci_high"]], **keys)
            d = paper.number("CrowdDPrime{modality}", row["d_prime"], **keys)
            c = paper.number("CrowdCriterion{modality}", row["criterion"], **keys)
            p = paper.number("CrowdP{modality}", row["p_value"], **keys)
            sentences.append(
                f"Their majority vote reached {accuracy.quoted()} {interval.quoted()} (95% Wilson; "
                f"d' {d.quoted()}, c {c.quoted()}; binomial p {p.quoted()})."
                + _crowd_curve(paper, tables.get("crowd_curves"), modality)
            )
        elif humans.empty:
            sentences.append(f"{title}: no human ratings.")
        models = _rows(metrics, rater_type="model", modality=modality).sort_values("model", kind="stable")
        best = _best_model(models, variant) if len(models) else None
        if best is not None:
            keys = {
                "table": "metrics",
                "row": _key(model=best["model"], modality=modality),
                "modality": modality,
            }
            name = paper.number("BestModel{modality}", str(best["model"]), **keys)
            accuracy = paper.number("BestModelAcc{modality}", best["accuracy"], **keys)
            interval = paper.number("BestModelAcc{modality}CI", [best["ci_low"], best["ci_high"]], **keys)
            sentences.append(
                f"The best model (prompt variant {variant}) was {name.quoted()} with {accuracy.quoted()} "
                f"{interval.quoted()}."
            )
        paper.say(*sentences)
        if len(models):
            paper.say("")
            for _, row in models.iterrows():
                paper.say(f"- {_model_numbers(paper, row, modality, tables.get('nonanswer_accuracy'))}.")
        paper.say("")


def _mcnemar(paper: Paper, tables: Mapping, modalities: list[str]) -> None:
    table = tables.get("mcnemar")
    said = False
    for modality in modalities:
        rows = _rows(table, comparison="best_model_vs_crowd", modality_a=modality)
        if rows.empty:
            continue
        row = rows.iloc[0]
        where = _key(
            comparison="best_model_vs_crowd",
            model_a=row["model_a"],
            modality_a=modality,
            model_b=row["model_b"],
        )
        keys = {"table": "mcnemar", "row": where, "modality": modality}
        n = paper.number("McNemarBestVsCrowd{modality}N", row["n_items"], **keys)
        b = paper.number("McNemarBestVsCrowd{modality}B", row["b"], **keys)
        c = paper.number("McNemarBestVsCrowd{modality}C", row["c"], **keys)
        p = paper.number("McNemarBestVsCrowd{modality}P", row["p_value"], **keys)
        holm = paper.number("McNemarBestVsCrowd{modality}PHolm", row["p_holm"], **keys)
        paper.say(
            f"- {modality}: {row['model_a']} against the crowd on {n.quoted()} dyads: {b.quoted()} right "
            f"only for the model, {c.quoted()} only for the crowd; exact p {p.quoted()} "
            f"(Holm {holm.quoted()})."
        )
        said = True
    for first, second in PAPER_CONTRASTS:
        rows = _rows(table, comparison="modality_pair", model_a=CROWD, modality_a=first, modality_b=second)
        swapped = _rows(table, comparison="modality_pair", model_a=CROWD, modality_a=second, modality_b=first)
        rows = rows if len(rows) else swapped
        if rows.empty:
            continue
        row = rows.iloc[0]
        where = _key(
            comparison="modality_pair",
            model_a=CROWD,
            modality_a=row["modality_a"],
            modality_b=row["modality_b"],
        )
        p = paper.number(
            "McNemarCrowd{modality}Vs{other}P",
            row["p_value"],
            table="mcnemar",
            row=where,
            modality=first,
            other=second,
        )
        paper.say(f"- the crowd, {first} against {second} on the same dyads: exact p {p.quoted()}.")
        said = True
    if not said:
        paper.say("No McNemar test was possible (no model and crowd answered the same dyads).")


def _glmm(paper: Paper, tables: Mapping) -> None:
    contrasts, summary = tables.get("glmm_contrasts"), tables.get("glmm_summary")
    fitted = summary is not None and not summary.empty
    not_fitted = "" if fitted else "the GLMM was not fitted (no human trials; see logs/glmm.log)"
    # a part of the fit that did not converge flags every estimate of the fit, not its own row only
    fit = [_glmm_fit_flag(summary)] if fitted and _glmm_fit_flag(summary) else []
    if fitted:
        row = summary.iloc[0]
        keys = {"table": "glmm_summary", "row": f"term={row['term']} (every row holds the fit's settings)"}
        trials = paper.number("GlmmTrials", row["n_obs"], **keys)
        draws = paper.number("GlmmDraws", row["draws"], **keys)
        chains = paper.number("GlmmChains", row["chains"], **keys)
        plural = "" if chains.value == 1 else "s"
        paper.say(
            f"A Bayesian logistic GLMM, correct ~ 0 + modality + (1|rater) + (1|dyad), was fitted to the "
            f"{trials.quoted()} human trials ({chains.quoted()} chain{plural} of {draws.quoted()} draws). "
            "Contrasts in percentage points of accuracy (averaged over raters and dyads), with 95% HDIs "
            "and the posterior probability that each is positive:"
        )
        paper.say("")
    else:
        paper.say(f"No GLMM contrasts: {not_fitted}.")
    for high, low in PAPER_CONTRASTS:
        forward = _rows(contrasts, contrast=f"modality[{high}] - modality[{low}]")
        backward = _rows(contrasts, contrast=f"modality[{low}] - modality[{high}]")
        row = forward.iloc[0] if len(forward) else backward.iloc[0] if len(backward) else None
        missing = not_fitted or ("" if row is not None else f"no {high} - {low} contrast in the table")
        sign = -1.0 if row is not None and not len(forward) else 1.0
        flag = "; ".join(dict.fromkeys(f for f in (fit_flag(row) if row is not None else "", *fit) if f))
        where = (
            f"contrast={row['contrast']}"
            if row is not None
            else f"contrast=modality[{high}] - modality[{low}]"
        )
        negated = " (negated: the table has the reverse)" if sign < 0 else ""

        def get(column, row=row, sign=sign):
            return None if row is None else sign * float(row[column])

        def interval(low_col, high_col, row=row, sign=sign):
            if row is None:
                return None
            pair = [sign * float(row[low_col]), sign * float(row[high_col])]
            return sorted(pair)

        def prob(column, row=row, sign=sign):
            return None if row is None else (float(row[column]) if sign > 0 else 1.0 - float(row[column]))

        keys = {
            "table": "glmm_contrasts",
            "row": where,
            "flag": flag,
            "missing": missing,
            "modality": high,
            "other": low,
        }
        pp = paper.number("{modality}Over{other}PP", get("pp_mean"), column="pp_mean" + negated, **keys)
        hdi = paper.number(
            "{modality}Over{other}PPHDI",
            interval("pp_hdi_low", "pp_hdi_high"),
            column="pp_hdi_low, pp_hdi_high" + negated,
            **keys,
        )
        p = paper.number(
            "{modality}Over{other}Prob",
            prob("pp_p_gt_0"),
            column="1 - pp_p_gt_0 (the table has the reverse)" if sign < 0 else "pp_p_gt_0",
            **keys,
        )
        logit = paper.number("{modality}Over{other}Logit", get("mean"), column="mean" + negated, **keys)
        logit_hdi = paper.number(
            "{modality}Over{other}LogitHDI",
            interval("hdi_low", "hdi_high"),
            column="hdi_low, hdi_high" + negated,
            **keys,
        )
        if missing:
            continue
        flagged = f" (**flagged**: {flag})" if flag else ""
        paper.say(
            f"- {_title(high)} > {_title(low)}: {pp.plain}, 95% HDI {hdi.plain}, P(> 0) {p.plain} "
            f"(logit {logit.plain}, HDI {logit_hdi.plain}){flagged}."
        )


def _glmm_fit_flag(summary: pd.DataFrame) -> str:
    """The flagged parts of the GLMM fit, short: one part with its flag, several by name."""
    flagged = [(row["term"], fit_flag(row)) for row in summary.to_dict("records") if fit_flag(row)]
    if len(flagged) == 1:
        return f"GLMM {flagged[0][0]}: {flagged[0][1]}"
    if flagged:
        return f"GLMM parts flagged: {', '.join(term for term, _ in flagged)} (see Convergence)"
    return ""


def _rasch_flag(fits: pd.DataFrame | None, modality: str, rater_types: Iterable[str]) -> str:
    flags = []
    for rater_type in rater_types:
        rows = _rows(fits, modality=modality, rater_type=rater_type)
        flag = fit_flag(rows.iloc[0]) if len(rows) else "no fit in rasch_fits.csv"
        if flag:
            flags.append(f"Rasch {modality} / {rater_type}: {flag}")
    return "; ".join(flags)


def _difficulty(paper: Paper, tables: Mapping, modalities: list[str]) -> None:
    partial, fits = tables.get("rasch_partial"), tables.get("rasch_fits")
    correlations = tables.get("rasch_correlations")
    said = False
    for modality in modalities:
        rows = _rows(partial, modality=modality, measure="difficulty")
        if rows.empty:
            continue
        row = rows.iloc[0]
        flag = _rasch_flag(fits, modality, ("human", "model"))
        note = _text(row.get("partial_r_corrected_note"))
        keys = {
            "table": "rasch_partial",
            "row": _key(modality=modality, measure="difficulty"),
            "flag": flag,
            "modality": modality,
        }
        corrected = paper.number(
            "DifficultyPartialRCorr{modality}", row["partial_r_corrected"], missing=note, **keys
        )
        interval = paper.number(
            "DifficultyPartialRCorr{modality}CI",
            [row["partial_r_corrected_low"], row["partial_r_corrected_high"]],
            missing=note,
            **keys,
        )
        raw = paper.number("DifficultyPartialR{modality}", row["partial_r"], **keys)
        p = paper.number("DifficultyPartialP{modality}", row["partial_p"], **keys)
        n = paper.number("DifficultyPartialN{modality}", row["n"], **keys)
        accuracy_rows = _rows(partial, modality=modality, measure="accuracy")
        accuracy = ""
        if len(accuracy_rows):
            arow = accuracy_rows.iloc[0]
            number = paper.number(
                "AccuracyPartialRCorr{modality}",
                arow["partial_r_corrected"],
                missing=_text(arow.get("partial_r_corrected_note")),
                table="rasch_partial",
                row=_key(modality=modality, measure="accuracy"),
                modality=modality,
            )
            accuracy = f"; of the share of raters right and the models' mean accuracy: {number.quoted()}"
        corrected_text = f"n/a ({note})" if note else f"{corrected.plain} {interval.plain}"
        flagged = f" (**flagged**: {flag})" if flag else ""
        paper.say(
            f"- {modality}: over {n.plain} dyads, the partial correlation of human and model dyad "
            f"difficulty (controlling for the true class), corrected for attenuation: {corrected_text} "
            f"(uncorrected {raw.plain}, p {p.plain}){flagged}{accuracy}."
        )
        said = True
    for row in [] if correlations is None else correlations.to_dict("records"):
        rater_type, first, second = row["rater_type"], row["modality_a"], row["modality_b"]
        flag = "; ".join(
            f
            for f in (_rasch_flag(fits, first, (rater_type,)), _rasch_flag(fits, second, (rater_type,)))
            if f
        )
        note = _text(row.get("pearson_r_corrected_note"))
        keys = {
            "table": "rasch_correlations",
            "row": _key(rater_type=rater_type, modality_a=first, modality_b=second),
            "flag": flag,
            "missing": note,
            "ratertype": rater_type,
            "modality": first,
            "other": second,
        }
        r = paper.number("Difficulty{ratertype}RCorr{modality}{other}", row["pearson_r_corrected"], **keys)
        interval = paper.number(
            "Difficulty{ratertype}RCorr{modality}{other}CI",
            [row["pearson_r_corrected_low"], row["pearson_r_corrected_high"]],
            **keys,
        )
        value = f"n/a ({note})" if note else f"{r.plain} {interval.plain}"
        flagged = f" (**flagged**: {flag})" if flag else ""
        paper.say(f"- {rater_type} difficulty, {first} against {second}: corrected r {value}{flagged}.")
        said = True
    if not said:
        paper.say("No dyad difficulty was estimated (see rasch_fits.csv).")


def _convergence(paper: Paper, tables: Mapping) -> None:
    flagged = []
    summary = tables.get("glmm_summary")
    if summary is None or summary.empty:
        flagged.append("GLMM: not fitted (no human trials; see logs/glmm.log)")
    for row in [] if summary is None else summary.to_dict("records"):
        flag = fit_flag(row)
        if flag:
            flagged.append(f"GLMM {row.get('term')}: {flag}")
    fits = tables.get("rasch_fits")
    for row in [] if fits is None else fits.to_dict("records"):
        flag = fit_flag(row)
        if flag:
            flagged.append(f"Rasch {row.get('modality')} / {row.get('rater_type')}: {flag}")
    # a fit that cannot exist (one model) is said apart: there was nothing to converge
    not_applicable = [line for line in dict.fromkeys(flagged) if f": {NOT_APPLICABLE}" in line]
    failed = [line for line in dict.fromkeys(flagged) if line not in not_applicable]
    if failed:
        paper.say(
            "Not every Bayesian fit converged or was made; the numbers read from these are flagged "
            "or n/a above:"
        )
        paper.say("")
        for line in failed:
            paper.say(f"- {line}")
    else:
        made = " made" if not_applicable else ""
        paper.say(f"Every Bayesian fit{made} converged (R-hat, bulk and tail ESS, divergences).")
    if not_applicable:
        paper.say("")
        paper.say("Fits that cannot exist (nothing to fit), not counted as failures:")
        paper.say("")
        for line in not_applicable:
            paper.say(f"- {line}")


# The FriendBench paper's published figures (docs/benchmarks: the design 1.4, the ratings 1.6, the
# GLMM 1.8) by the macro that states the same number here. The per-modality accuracies are
# published beside the GLMM; here they are set beside the mean rater accuracy.
PUBLISHED = (
    ("DesignDyads", "96", "3 sites x 2 relationships x 2 gender mixes x 8 dyads"),
    ("RatersText", "about 90", "raters per modality"),
    ("RatersAudio", "about 90", "raters per modality"),
    ("RatersVideo", "about 90", "raters per modality"),
    ("RatersPerDyadTextMin", "25-35", "ratings per dyad (planned-missing design)"),
    ("RatersPerDyadTextMax", "25-35", "ratings per dyad (planned-missing design)"),
    ("HumanAccText", "49.9%", "accuracy, text"),
    ("HumanAccAudio", "56.3%", "accuracy, audio"),
    ("HumanAccVideo", "60.9%", "accuracy, video"),
    ("AudioOverTextPP", "6.5 pp", "GLMM contrast"),
    ("AudioOverTextPPHDI", "[4.1, 8.9]", "its 95% HDI"),
    ("AudioOverTextProb", ">0.999", "P(> 0)"),
    ("VideoOverAudioPP", "4.5 pp", "GLMM contrast"),
    ("VideoOverAudioPPHDI", "[1.9, 6.8]", "its 95% HDI"),
    ("VideoOverAudioProb", ">0.999", "P(> 0)"),
    ("VideoOverTextPP", "10.9 pp", "GLMM contrast"),
    ("VideoOverTextPPHDI", "[8.5, 13.3]", "its 95% HDI"),
    ("VideoOverTextProb", ">0.999", "P(> 0)"),
)


def published_comparison(numbers: Iterable[Number]) -> list[str]:
    """A markdown table: each published FriendBench figure beside this run's number (n/a and why
    where it has none, its flag where it has one)."""
    by_name = {number.name: number for number in numbers}
    lines = ["| macro | what | published | this run |", "|---|---|---|---|"]
    for name, published, what in PUBLISHED:
        number = by_name.get(name)
        if number is None:
            here = "not computed"
        else:
            here = f"n/a ({number.missing})" if number.missing else number.plain
            here += " (flagged: see Convergence)" if number.flag else ""
        lines.append(f"| `\\{name}` | {what} | {published} | {here.replace('|', '/')} |")
    return lines


def familiarity_paper(config: Mapping, tables: Mapping[str, pd.DataFrame | None]) -> Paper:
    """The familiarity study's numbers and draft, from its tables (BENCHMARK_TABLES)."""
    paper = Paper("familiarity", table_hashes(config))
    variants = (config.get("inference") or {}).get("prompt_variants") or ["v1"]
    modalities = _modalities(tables.get("metrics"), tables.get("majority_votes"))
    paper.lines = ["# Results: dyadic familiarity", ""]
    paper.say(
        "_Draft generated by rule paper_familiarity from the run's tables; numbers.tex holds every "
        "number below as a macro._"
    )
    paper.heading("Data")
    inputs = ("corpus", "design and stimuli", "released predictions", "human ratings", "models")
    _inputs(paper, config, inputs, tables)
    paper.heading("Filters and design")
    _funnel(paper, tables)
    paper.heading("Raters and crowd sizes")
    _raters(paper, tables, modalities)
    paper.heading("Accuracy: people and models, per modality")
    _accuracy(paper, tables, modalities, variants[0])
    paper.heading("Paired tests (McNemar)")
    _mcnemar(paper, tables, modalities)
    paper.heading("Modality effects (GLMM)")
    _glmm(paper, tables)
    paper.heading("Dyad difficulty: people against models")
    _difficulty(paper, tables, modalities)
    paper.heading("Convergence")
    _convergence(paper, tables)
    if (config.get("study") or {}).get("design_source") == "release":
        paper.heading("Beside the published FriendBench figures")
        paper.say("The FriendBench paper's figures beside this run's (the same macro):")
        paper.say("")
        for line in published_comparison(paper.numbers):
            paper.say(line)
    return paper


# --- who / when / how, streaming -----------------------------------------------------------------


def socialomni_paper(config: Mapping, tables: Mapping[str, pd.DataFrame | None]) -> Paper:
    """The who / when / how numbers and draft, from social_profile.csv."""
    paper = Paper("socialomni", table_hashes(config))
    paper.lines = ["# Results: who / when / how (SocialOmni-style)", ""]
    paper.say("_Draft generated by rule paper_socialomni; numbers.tex holds every number below as a macro._")
    paper.heading("Data")
    _inputs(paper, config, ("social benchmarks",))
    paper.heading("Who / when / how profile")
    profile = tables.get("social_profile")
    if profile is None or profile.empty:
        paper.say("No model was scored.")
        return paper
    for row in profile.sort_values("model", kind="stable").to_dict("records"):
        paper.say(f"- {row['model']}: " + "; ".join(_profile_parts(paper, row)) + ".")
    return paper


def _none(count, reason: str) -> str:
    """`reason` where a task's count is 0 or empty (the model did not take it), else ""."""
    return reason if _missing(count) or int(count) == 0 else ""


def _profile_parts(paper: Paper, row: Mapping) -> list[str]:
    """One model's who, when and how, each as a clause: its numbers, or why it has none."""
    model = row["model"]

    def number(template, value, missing=""):
        return paper.number(
            template, value, table="social_profile", row=_key(model=model), missing=missing, model=model
        )

    parts = []
    missing = _none(row.get("who_n"), "no who item scored")
    who = number("Who{model}Acc", row["who_accuracy"], missing)
    who_ci = number("Who{model}AccCI", [row["who_accuracy_low"], row["who_accuracy_high"]], missing)
    who_n = number("Who{model}N", row["who_n"])
    gap = number("Who{model}Gap", _scaled(row["who_consistency_gap"]), missing)
    parts.append(
        f"who n/a ({missing})"
        if missing
        else f"who {who.quoted()}{_ci(who_ci)} on {who_n.quoted()} items (consistent minus inconsistent "
        f"{gap.quoted()})"
    )
    missing = _none(row.get("when_n"), "no single-cut when item scored")
    when = number("When{model}Acc", row["when_accuracy"], missing)
    when_ci = number("When{model}AccCI", [row["when_accuracy_low"], row["when_accuracy_high"]], missing)
    parts.append(
        f"when, one cut n/a ({missing})" if missing else f"when, one cut {when.quoted()}{_ci(when_ci)}"
    )
    missing = _none(row.get("when_stream_n"), "not streamed")
    on_time = number("When{model}OnTime", row["when_on_time"], missing)
    on_time_ci = number("When{model}OnTimeCI", [row["when_on_time_low"], row["when_on_time_high"]], missing)
    early = number("When{model}Early", row["when_early"], missing)
    late = number("When{model}Late", row["when_late"], missing)
    f1 = number("When{model}FOne", row["when_f1"], missing)
    parts.append(
        f"when, streamed: n/a ({missing})"
        if missing
        else f"when, streamed: on time {on_time.quoted()}{_ci(on_time_ci)}, early {early.quoted()}, late "
        f"{late.quoted()}, F1 {f1.quoted()}"
    )
    missing = _none(row.get("how_n"), "no judged reply")
    how = number("How{model}Mean", row["how_mean"], missing)
    how_ci = number("How{model}MeanCI", [row["how_mean_low"], row["how_mean_high"]], missing)
    how_nz = number("How{model}MeanNoZeros", row["how_mean_without_zeros"], missing)
    how_n = number("How{model}N", row["how_n"])
    parts.append(
        f"how n/a ({missing})"
        if missing
        else f"how {how.quoted()}{_ci(how_ci)} on {how_n.quoted()} items "
        f"({how_nz.quoted()} without zero scores)"
    )
    return parts


def _ci(number: Number) -> str:
    return "" if number.missing else f" {number.plain}"


def _scaled(gap) -> float | None:
    return None if _missing(gap) else 100.0 * float(gap)


def streaming_paper(config: Mapping, tables: Mapping[str, pd.DataFrame | None]) -> Paper:
    """The streaming benchmark's numbers and draft, from streaming_metrics.csv."""
    paper = Paper("streaming", table_hashes(config))
    paper.lines = ["# Results: streaming (Omni-DuplexEval-style)", ""]
    paper.say("_Draft generated by rule paper_streaming; numbers.tex holds every number below as a macro._")
    paper.heading("Data")
    _inputs(paper, config, ("social benchmarks",))
    paper.heading("Real-time description and proactive reminders")
    metrics = tables.get("streaming_metrics")
    if metrics is None or metrics.empty:
        paper.say("No model was scored.")
        return paper
    order = metrics.assign(_all=metrics["split"].astype(str) != "all").sort_values(
        ["model", "_all", "split"], kind="stable"
    )
    for row in order.to_dict("records"):
        model, split = row["model"], row["split"]
        keys = {
            "table": "streaming_metrics",
            "row": _key(model=model, split=split),
            "model": model,
            "split": split,
        }
        items = paper.number("Stream{model}{split}Items", int(row["n_rtd"]) + int(row["n_pr"]), **keys)
        temporal = paper.number(
            "Stream{model}{split}Temporal",
            row["temporal_100"],
            missing="" if int(row["n_rtd"]) else "no description item",
            **keys,
        )
        content = paper.number(
            "Stream{model}{split}Content",
            row["content_100"],
            missing="" if int(row["n_rtd"]) else "no description item",
            **keys,
        )
        reminder = paper.number(
            "Stream{model}{split}Reminder",
            row["reminder_100"],
            missing="" if int(row["n_pr"]) else "no reminder item",
            **keys,
        )
        unparsed = row.get("n_unparsed_steps")
        streamed = not _missing(unparsed)
        steps = paper.number(
            "Stream{model}{split}Unparsed",
            unparsed,
            missing="" if streamed else "not streamed here (a baseline or imported responses)",
            **keys,
        )
        scores = []
        if not temporal.missing:
            scores.append(f"temporal {temporal.quoted()}, content {content.quoted()}")
        if not reminder.missing:
            scores.append(f"reminders {reminder.quoted()}")
        unparsed_text = f"; {steps.quoted()} streamed steps unparsed" if streamed else ""
        paper.say(
            f"- {model}, {split}: {items.quoted()} item{'' if items.value == 1 else 's'}; "
            f"{'; '.join(scores) or 'no score'}{unparsed_text}."
        )
    return paper


BUILDERS = {"familiarity": familiarity_paper, "socialomni": socialomni_paper, "streaming": streaming_paper}


def build_paper(benchmark: str, config: Mapping, tables: Mapping[str, pd.DataFrame | None]) -> Paper:
    if benchmark not in BUILDERS:
        raise ValueError(f"unknown benchmark {benchmark!r}: one of {', '.join(BUILDERS)}")
    return BUILDERS[benchmark](config, tables)


# --- the files ---------------------------------------------------------------------------------


def _comment(text: str) -> str:
    return " ".join(str(text).split())


def numbers_tex(paper: Paper) -> str:
    lines = [
        f"% omnisocial: the {paper.benchmark} numbers of this study (generated; do not edit).",
        "% \\input this file; each macro's comment: table; row; column; config hash of the settings it",
        "% depends on. A rerun that changes a number changes its line only.",
    ]
    for number in paper.numbers:
        notes = number.source()
        if number.missing:
            notes += f"; no value: {number.missing}"
        if number.flag:
            notes += f"; FLAGGED: {number.flag}"
        lines.append(f"\\newcommand{{\\{number.name}}}{{{number.tex}}} % {_comment(notes)}")
    return "\n".join(lines) + "\n"


def numbers_json(paper: Paper) -> str:
    entries = []
    for number in paper.numbers:
        entries.append(
            {
                "name": number.name,
                "value": number.value,
                "text": number.plain,
                "kind": number.kind,
                "table": TABLES[number.table][0],
                "row": number.row,
                "column": number.column,
                "config_hash": number.config_hash,
                "flag": number.flag,
                "missing": number.missing,
            }
        )
    return json.dumps({"benchmark": paper.benchmark, "numbers": entries}, indent=1, allow_nan=False) + "\n"


def results_markdown(paper: Paper) -> str:
    return "\n".join(paper.lines).rstrip() + "\n"


PAPER_FILES = ("numbers.tex", "numbers.json", "results.md")


def write_paper(paper: Paper, folder) -> list[Path]:
    """Write numbers.tex, numbers.json and results.md under `folder` (atomically)."""
    folder = Path(folder)
    paths = []
    for name, text in zip(
        PAPER_FILES, (numbers_tex(paper), numbers_json(paper), results_markdown(paper)), strict=True
    ):
        with atomic_path(folder / name) as tmp:
            Path(tmp).write_text(text, encoding="utf-8")
        paths.append(folder / name)
    return paths


# --- the outputs page ------------------------------------------------------------------------------

BENCHMARK_TITLES = {
    "familiarity": "Dyadic familiarity (`results/familiarity/paper/`)",
    "socialomni": "Who / when / how (`results/social/paper/socialomni/`)",
    "streaming": "Streaming (`results/social/paper/streaming/`)",
}


def macro_reference() -> str:
    """Markdown: every macro template of every benchmark, its format and where it is read from."""
    lines = [
        "Generated from `omnisocial.paper.MACROS` on every documentation build. A placeholder is a "
        "table key in letters (`{modality}` `Text`, `{model}` `gpt-4o@v1` -> `GptFourOAtVOne`).",
    ]
    for benchmark, macros in MACROS.items():
        lines += [
            "",
            f"#### {BENCHMARK_TITLES[benchmark]}",
            "",
            "| macro | written as | table | column | meaning |",
            "|---|---|---|---|---|",
        ]
        for macro in macros.values():
            example = EXAMPLES[macro.kind]
            cells = [
                f"`\\{macro.template}`",
                f"`{example}`",
                f"`{TABLES[macro.table][0]}`",
                f"`{macro.column}`",
                macro.meaning.replace("|", "/"),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# where docs/outputs.md lists the paper macros (docs/hooks/reference.py fills it on every build)
PAPER_MACROS_MARKER = "<!-- generated: the paper macros (omnisocial.paper.macro_reference) -->"


def with_macro_reference(page: str) -> str:
    """The outputs page with `macro_reference()` in place of its marker."""
    if PAPER_MACROS_MARKER not in page:
        raise ValueError(f"the outputs page has no {PAPER_MACROS_MARKER}")
    return page.replace(PAPER_MACROS_MARKER, macro_reference())


EXAMPLES = {
    "count": latex(FORMATS["count"](8640)),
    "percent": latex(FORMATS["percent"](0.563)),
    "percent_interval": latex(FORMATS["percent_interval"]((0.52, 0.604))),
    "pp": latex(FORMATS["pp"](6.5)),
    "pp_interval": latex(FORMATS["pp_interval"]((4.1, 8.9))),
    "decimal": latex(FORMATS["decimal"](-0.12)),
    "interval": latex(FORMATS["interval"]((0.12, 0.65))),
    "p": latex(FORMATS["p"](0.0004)),
    "prob": latex(FORMATS["prob"](0.9996)),
    "score": latex(FORMATS["score"](62.5)),
    "score_interval": latex(FORMATS["score_interval"]((55.0, 70.1))),
    "text": "gpt-4o",
}
