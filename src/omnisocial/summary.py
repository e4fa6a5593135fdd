"""The run's first page and the renderings of its tables.

- `render_table(table, stem, title=...)` writes `<stem>.html` (shown inline by the Snakemake
  report; it names the CSV and renderings beside it), `<stem>.md` and `<stem>.tex` (for the
  paper) beside a result CSV; `render_tables(titles, log)` renders every `<stem>.csv` of a
  run in one process (rule render_tables).
- `build_summary(...)` turns the result tables of a run into the sections of the summary
  page: which inputs were real or simulated, the raters imported per modality against the
  plan (`ratings.raters_per_modality`) with the exports read, the filter funnel, the models with their
  coverage (answered / asked; a model with no answers is listed with 0 / n, never dropped),
  the finish reasons of every model's calls (failed ones included), a headline results
  table and the convergence status of every Bayesian fit.
- `write_summary(sections, folder)` writes `summary.md`, `summary.html` and one CSV per
  section (`summary_<section>.csv`).

Every function reads DataFrames (missing tables are None and their section says so), so the
tests and the notebook call them without a workflow run.
"""

from __future__ import annotations

import html
import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from omnisocial.io import atomic_path

# the sequential stages of the filter report, in the order the funnel applies them
FUNNEL_STAGES = (
    ("ingest_pass", "ingested (transcript and media found)"),
    ("f1_prompt_pass", "F1 prompt identified"),
    ("f2_turns_pass", "F2 enough turns"),
    ("f3_speech_pass", "F3 speech per speaker"),
    ("f4_tracks_pass", "F4 tracks distinct and in sync"),
    ("f5_amount_pass", "F5 amount of speech"),
    ("audit_pass", "prompt audit"),
)
# the prompt audit's value where there was no transcript to audit and audit_min_hits is 0
NOT_AUDITED = "not audited (no transcript)"
MAX_HTML_ROWS = 2000
HTML_STYLE = (
    "body{font-family:sans-serif;font-size:13px;margin:8px}"
    "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}"
    "th{background:#f0f0f0;position:sticky;top:0}td:first-child,th:first-child{text-align:left}"
    "caption{text-align:left;font-weight:bold;padding:4px 0}.note{color:#b00020;font-weight:bold}"
    # a table scrolls in its own box (header row in view, one line a row), not the page: the
    # report shows the page in a frame whose own scroll bars can lie out of sight
    ".scroll{overflow:auto;max-width:100%;max-height:85vh}.scroll table{width:max-content}"
)


def _format(value, decimals: int | None = None) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        if decimals is not None:
            return f"{value:.{decimals}f}"
        if value.is_integer() and abs(value) < 1e15:  # a count in a column with gaps: 1510, not 1.51e+03
            return str(int(value))
        return f"{value:.3g}" if abs(value) < 1e3 else f"{value:.0f}"
    return str(value)


# R-hat is read against 1.01: three decimals, so 1.015 never prints as "1.01" beside "not converged"
FIXED_DECIMALS = {"r_hat": 3}


def _decimals(column) -> int | None:
    return next((d for prefix, d in FIXED_DECIMALS.items() if str(column).startswith(prefix)), None)


def formatted(table: pd.DataFrame) -> pd.DataFrame:
    """Every cell as text: floats to 3 significant digits (whole numbers as integers, R-hat to 3
    decimals), missing values empty."""
    if not len(table.columns):
        return table
    text = table.astype(object)
    for column in text.columns:
        decimals = _decimals(column)
        text[column] = text[column].map(lambda value, d=decimals: _format(value, d))
    return text


def html_table(table: pd.DataFrame, title: str = "", note: str = "", files: str = "") -> str:
    """A standalone HTML page showing `table` (the first MAX_HTML_ROWS rows, saying so); `files`
    is a line about the files beside it."""
    shown = table.head(MAX_HTML_ROWS)
    cut = (
        f"<p>first {MAX_HTML_ROWS} of {len(table)} rows; the CSV has them all</p>"
        if len(table) > MAX_HTML_ROWS
        else f"<p>{len(table)} rows</p>"
    )
    note_html = f'<p class="note">{html.escape(note)}</p>' if note else ""
    files_html = f"<p>{html.escape(files)}</p>" if files else ""
    body = formatted(shown).to_html(index=False, escape=True, border=0)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{HTML_STYLE}</style></head><body><h3>{html.escape(title)}</h3>{note_html}"
        f"{cut}{files_html}<div class='scroll'>{body}</div></body></html>\n"
    )


def markdown_table(table: pd.DataFrame) -> str:
    """A GitHub-flavoured markdown table (tabulate), or a line saying it is empty."""
    if table.empty:
        return "_(no rows)_\n"
    return formatted(table).to_markdown(index=False) + "\n"


def latex_table(table: pd.DataFrame, caption: str = "") -> str:
    """A booktabs LaTeX tabular (pandas' Styler, which needs jinja2)."""
    text = formatted(table)
    return text.to_latex(index=False, caption=caption or None, escape=True)


def simulated_note(table: pd.DataFrame) -> str:
    if "source" in table.columns and table["source"].astype(str).str.contains("simulated", case=False).any():
        return (
            "SIMULATED DATA: rows of this table come from the demo's simulated rater panel, not from people."
        )
    return ""


def files_line(name: str) -> str:
    """What lies beside a rendered table (the report shows the page, not the folder)."""
    return f"The full table is {name}.csv beside this page; {name}.md and {name}.tex render it for the paper."


def render_table(table: pd.DataFrame, stem, title: str = "") -> list[Path]:
    """Write `<stem>.html`, `<stem>.md` and `<stem>.tex`; return the three paths."""
    stem = Path(stem)
    title = title or stem.name
    note = simulated_note(table)
    paths = []
    for suffix, text in (
        ("html", html_table(table, title, note, files_line(stem.name))),
        ("md", (f"**{note}**\n\n" if note else "") + markdown_table(table)),
        ("tex", latex_table(table, caption=title)),
    ):
        target = stem.with_name(f"{stem.name}.{suffix}")
        with atomic_path(target) as tmp:
            Path(tmp).write_text(text, encoding="utf-8")
        paths.append(target)
    return paths


def render_tables(titles: Mapping[str, str], log: logging.Logger | None = None) -> list[Path]:
    """Render every `<stem>.csv` of `titles` (stem -> title) beside it, one log line a table;
    return the paths written (three a table, in the order of `titles`)."""
    log = log or logging.getLogger(__name__)
    paths = []
    for stem, title in titles.items():
        written = render_table(pd.read_csv(f"{stem}.csv"), stem, title=title)
        log.info("%s: wrote %s", title, ", ".join(map(str, written)))
        paths.extend(written)
    return paths


# --- the summary page -------------------------------------------------------------------


def _listed(names, shown: int = 5) -> str:
    names = list(names)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(map(str, names[:shown])) + more


# set in the summary's config by rule report_summary when release.root is a generated release
# (omnisocial friendbench-demo marks its folder): its design, ratings and predictions are simulated
GENERATED_KEY = "generated_release"
GENERATED_STATUS = "simulated (generated release: omnisocial friendbench-demo)"


def release_rows(
    config: Mapping, released: pd.DataFrame | None = None, report: pd.DataFrame | None = None
) -> list[dict]:
    """The release's rows of the inputs: its design (when the study's design is the release's) and
    its predictions (the files they were read from and the number of released prediction sets)."""
    release = config.get("release") or {}
    name = release.get("name") or release.get("metadata") or "the release"
    status = GENERATED_STATUS if config.get(GENERATED_KEY) else "real (released data set)"
    rows = []
    if (config.get("study") or {}).get("design_source") == "release":
        rows.append(
            {
                "input": "design and stimuli",
                "status": status,
                "detail": f"release {name}: metadata {release.get('metadata')}, "
                f"root {release.get('root') or '-'}",
            }
        )
    path = (release.get("predictions") or {}).get("path")
    if path:
        if released is None or report is None:
            detail = f"release.predictions.path: {path} (not imported yet)"
        else:
            files = list(dict.fromkeys(report["file"].astype(str)))
            sets = released[["model", "modality"]].drop_duplicates()
            detail = (
                f"{released['model'].nunique()} released prediction sets (models; "
                f"{len(sets)} model x modality) of release {name}, "
                f"from {len(files)} file(s): {_listed(files)}"
            )
        rows.append({"input": "released predictions", "status": status, "detail": detail})
    return rows


def inputs_section(
    config: Mapping, released: pd.DataFrame | None = None, release_report: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Which inputs were real and which simulated, from the run's config; a released design lists
    the release, not a corpus the run never read (`release_rows`)."""
    corpus = config.get("corpus", {})
    ratings = config.get("ratings", {})
    social = config.get("social", {})
    from_release = (config.get("study") or {}).get("design_source") == "release"
    corpus_row = {
        "input": "corpus",
        "status": "simulated (demo corpus)" if corpus.get("source") == "demo" else "real",
        "detail": f"corpus.source: {corpus.get('source')}, root {corpus.get('root')}",
    }
    baselines = "none (a released design has no corpus)" if from_release else "offline baselines"
    rows = [
        *([] if from_release else [corpus_row]),
        *release_rows(config, released, release_report),
        {
            "input": "human ratings",
            "status": "simulated (demo rater panel)"
            if ratings.get("source") == "simulated"
            else GENERATED_STATUS
            if from_release and config.get(GENERATED_KEY) and ratings.get("source") == "exports"
            else "real",
            "detail": f"ratings.source: {ratings.get('source')}",
        },
        {
            "input": "models",
            "status": (
                ("registry models" if from_release else "registry models + baselines")
                if config.get("models")
                else baselines
            ),
            "detail": "models: "
            + (
                ", ".join(
                    str(m.get("name", m)) if isinstance(m, Mapping) else str(m)
                    for m in config.get("models") or []
                )
                or "none configured"
            ),
        },
    ]
    if social.get("enabled"):
        rows.append(
            {
                "input": "social benchmarks",
                "status": "simulated (demo clips)"
                if social.get("source") == "demo"
                else "real (released files)",
                "detail": f"social.source: {social.get('source')}",
            }
        )
    else:
        rows.append({"input": "social benchmarks", "status": "not run", "detail": "social.enabled: false"})
    return pd.DataFrame(rows)


def _off_plan(sections: Mapping[str, pd.DataFrame]) -> list[str]:
    raters = sections.get("raters")
    if raters is None or raters.empty:
        return []
    return list(raters.loc[raters["note"] != "as planned", "modality"])


def _passed(values: pd.Series) -> pd.Series:
    return values.astype(str).str.lower().isin({"true", "1", "yes"})


def _unmeasured_lags(filter_report: pd.DataFrame, left: pd.Series) -> str:
    """' (N with the track lag not measurable)' for the interactions F4 kept without a lag; else ''."""
    if "f4_lag_measured" not in filter_report.columns:
        return ""
    measured = filter_report["f4_lag_measured"].astype(str).str.lower()
    count = int((left & measured.isin({"false", "0", "no"})).sum())
    return f" ({count} with the track lag not measurable)" if count else ""


def _not_audited(filter_report: pd.DataFrame, left: pd.Series) -> str:
    """' (N not audited: no transcript)' for the interactions the audit kept without auditing; else ''."""
    if "audit_value" not in filter_report.columns:
        return ""
    count = int((left & (filter_report["audit_value"].astype(str) == NOT_AUDITED)).sum())
    return f" ({count} not audited: no transcript)" if count else ""


def funnel_section(filter_report: pd.DataFrame | None, design: pd.DataFrame | None = None) -> pd.DataFrame:
    """Interactions left after each filter stage (sequential), then the dyads of the design."""
    rows = []
    if filter_report is not None:
        left = pd.Series(True, index=filter_report.index)
        rows.append({"stage": "interactions in the corpus", "n": len(filter_report), "excluded": 0})
        for column, label in FUNNEL_STAGES:
            if column not in filter_report.columns:
                continue
            before = int(left.sum())
            left &= _passed(filter_report[column])
            if column == "f4_tracks_pass":
                label += _unmeasured_lags(filter_report, left)
            if column == "audit_pass":
                label += _not_audited(filter_report, left)
            rows.append({"stage": label, "n": int(left.sum()), "excluded": before - int(left.sum())})
        if "passed" in filter_report.columns:
            before = int(left.sum())
            left &= _passed(filter_report["passed"])
            rows.append(
                {
                    "stage": "eligible (all filters passed)",
                    "n": int(left.sum()),
                    "excluded": before - int(left.sum()),
                }
            )
    if design is not None:
        eligible = rows[-1]["n"] if rows else len(design)
        rows.append(
            {"stage": "dyads sampled into the design", "n": len(design), "excluded": eligible - len(design)}
        )
    return pd.DataFrame(rows, columns=["stage", "n", "excluded"])


def coverage_section(metrics: pd.DataFrame | None) -> pd.DataFrame:
    """One row per model: answered / asked per modality (models with no answers included)."""
    if metrics is None or metrics.empty:
        return pd.DataFrame(columns=["model"])
    kinds = (
        metrics["rater_type"] if "rater_type" in metrics.columns else pd.Series("model", index=metrics.index)
    )
    models = metrics[kinds == "model"]
    rows = {}
    for row in models.itertuples(index=False):
        answered = int(row.n_answered) if pd.notna(row.n_answered) else 0
        asked = int(row.n_items) if pd.notna(row.n_items) else 0
        flag = " (no answers)" if answered == 0 else ""
        rows.setdefault(row.model, {"model": row.model})[row.modality] = f"{answered}/{asked}{flag}"
    order = [m for m in ("text", "audio", "video") if m in set(models["modality"])]
    return pd.DataFrame(list(rows.values()), columns=["model", *order]).fillna("not asked")


def finish_reasons_section(responses: pd.DataFrame | None) -> pd.DataFrame:
    """One row per model: its calls, how many failed, and a count per finish reason.

    Read from the models' RESPONSES tables. A reply cut by the token limit or blocked is a
    failure that keeps its finish reason (length / MAX_TOKENS / SAFETY ...), so a model that
    spends its limit on reasoning shows here rather than as unparsed answers; "(not given)"
    counts calls with no finish reason: no reply came (HTTP error, timeout) or the backend
    reports none (local models, offline baselines). `audio paths` counts how
    the stimuli's audio reached the model (video entries: in_video, separate_part, none,
    no_track).
    """
    columns = ["model", "calls", "failed"]
    if responses is None or responses.empty or "finish_reason" not in responses.columns:
        return pd.DataFrame(columns=columns)
    frame = responses.assign(
        finish_reason=responses["finish_reason"].fillna("").astype(str).replace("", "(not given)"),
        audio_path=responses.get("audio_path", pd.Series("", index=responses.index)).fillna("").astype(str),
        failed=responses["status"].astype(str).eq("failed"),
    )
    counts = pd.crosstab(frame["name"], frame["finish_reason"])
    reasons = sorted(counts.columns, key=lambda r: (r == "(not given)", r.lower()))
    rows = []
    for name, group in frame.groupby("name", sort=True):
        paths = group.loc[group["audio_path"] != "", "audio_path"].value_counts()
        rows.append(
            {
                "model": name,
                "calls": len(group),
                "failed": int(group["failed"].sum()),
                **{reason: int(counts.loc[name, reason]) for reason in reasons},
                "audio paths": ", ".join(f"{path} {n}" for path, n in sorted(paths.items())),
            }
        )
    return pd.DataFrame(rows, columns=[*columns, *reasons, "audio paths"])


def _interval(row) -> str:
    if pd.isna(row.accuracy):
        return "no answers"
    return f"{row.accuracy:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]"


def headline_section(metrics: pd.DataFrame | None, variant: str = "v1") -> pd.DataFrame:
    """Per modality: mean human rater, the crowd (majority vote) and the best model at `variant`."""
    if metrics is None or metrics.empty:
        return pd.DataFrame(columns=["modality"])
    rows = []
    for modality in [m for m in ("text", "audio", "video") if m in set(metrics["modality"])]:
        part = metrics[metrics["modality"] == modality]
        humans = part[part["rater_type"] == "human"]
        crowd = part[part["rater_type"] == "crowd"]
        models = part[part["rater_type"] == "model"]
        models = models[
            ~models["model"].astype(str).str.contains("@")
            | models["model"].astype(str).str.endswith(f"@{variant}")
        ]
        row = {
            "modality": modality,
            "raters": len(humans),
            "mean rater accuracy": f"{humans['accuracy'].mean():.2f}" if len(humans) else "",
            "crowd accuracy [95% CI]": _interval(crowd.iloc[0]) if len(crowd) else "",
        }
        answered = models.dropna(subset=["accuracy"])
        if len(answered):
            best = answered.sort_values(["accuracy", "model"], ascending=[False, True]).iloc[0]
            row["best model"] = best["model"]
            row["best model accuracy [95% CI]"] = _interval(best)
            row["its coverage"] = f"{int(best['n_answered'])}/{int(best['n_items'])}"
        rows.append(row)
    return pd.DataFrame(rows)


def convergence_section(glmm_summary: pd.DataFrame | None, rasch_fits: pd.DataFrame | None) -> pd.DataFrame:
    """Every Bayesian fit: GLMM terms and Rasch fits with R-hat, ESS, the fit's divergent
    transitions (above the config's max_divergences they flag the fit) and the convergence flag.
    A Rasch fit that cannot exist (fewer than 2 persons or dyads: one model) keeps what
    rasch_fits says of it: `converged` NA and the flag "not applicable: <why>"."""
    rows = []
    if glmm_summary is not None:
        for row in glmm_summary.itertuples(index=False):
            rows.append(
                {
                    "fit": "GLMM",
                    "part": row.term,
                    "r_hat": row.r_hat,
                    "ess_bulk": row.ess_bulk,
                    "ess_tail": getattr(row, "ess_tail", math.nan),
                    "divergences": _count(getattr(row, "divergences", None)),
                    "converged": bool(row.converged) if pd.notna(row.converged) else False,
                    "flag": row.flag if isinstance(row.flag, str) else "",
                }
            )
    if rasch_fits is not None:
        for row in rasch_fits.itertuples(index=False):
            rows.append(
                {
                    "fit": "Rasch",
                    "part": f"{row.modality} / {row.rater_type}",
                    "r_hat": row.r_hat_max,
                    "ess_bulk": row.ess_bulk_min,
                    "ess_tail": getattr(row, "ess_tail_min", math.nan),
                    "divergences": _count(getattr(row, "divergences", None)),
                    # as rasch_fits says it: NA with "not applicable: <why>" for a fit not made
                    "converged": bool(row.converged) if pd.notna(row.converged) else pd.NA,
                    "flag": row.flag if isinstance(row.flag, str) else "",
                }
            )
    columns = ["fit", "part", "r_hat", "ess_bulk", "ess_tail", "divergences", "converged", "flag"]
    return pd.DataFrame(rows, columns=columns).astype({"divergences": "Int64", "converged": "boolean"})


def not_converged(convergence: pd.DataFrame) -> int:
    """Fit parts that were fitted and miss the convergence rule (a part not applicable is none)."""
    return int(convergence["converged"].astype("boolean").eq(False).sum())


GLMM_CONTRAST_COLUMNS = ["contrast", "pp", "pp_hdi", "pp_p_gt_0", "logit", "logit_hdi", "converged", "flag"]


def glmm_contrasts_section(contrasts: pd.DataFrame | None) -> pd.DataFrame | None:
    """The GLMM's modality contrasts as the paper states them: the difference in percentage points
    of accuracy (glmm_contrasts' pp_definition, by default averaged over the raters and dyads)
    with its 95% HDI and posterior probability, beside the logit-scale difference and its HDI."""
    if contrasts is None:
        return None
    rows = []
    for row in contrasts.itertuples(index=False):
        pp = getattr(row, "pp_mean", math.nan)
        rows.append(
            {
                "contrast": row.contrast,
                "pp": pp,
                "pp_hdi": f"[{row.pp_hdi_low:.1f}, {row.pp_hdi_high:.1f}]" if pd.notna(pp) else "",
                "pp_p_gt_0": getattr(row, "pp_p_gt_0", math.nan),
                "logit": row.mean,
                "logit_hdi": f"[{row.hdi_low:.3f}, {row.hdi_high:.3f}]",
                "converged": bool(row.converged) if pd.notna(row.converged) else False,
                "flag": row.flag if isinstance(row.flag, str) else "",
            }
        )
    return pd.DataFrame(rows, columns=GLMM_CONTRAST_COLUMNS)


def _count(value) -> int | None:
    """A count read from a table; None where it is missing (an older table, or no fit)."""
    return None if value is None or pd.isna(value) else int(value)


def social_section(profile: pd.DataFrame | None) -> pd.DataFrame:
    """The who / when / how profile, one row per model (empty when the benchmarks did not run)."""
    if profile is None or profile.empty:
        return pd.DataFrame(columns=["model"])
    columns = ["model", "who_accuracy", "when_accuracy", "when_f1", "how_mean"]
    return profile[[c for c in columns if c in profile.columns]].copy()


def streaming_section(streaming: pd.DataFrame | None) -> pd.DataFrame:
    if streaming is None or streaming.empty:
        return pd.DataFrame(columns=["model"])
    return streaming.copy()


TIMING_COLUMNS = ["model", "n", "on_time", "early", "late", "no_response", "mean_offset",
                  "mean_offset_low", "mean_offset_high"]  # fmt: skip
STREAM_CALL_COLUMNS = ["model", "benchmark", "protocol", "n_items", "n_planned", "n_steps", "n_calls",
                       "n_cached", "n_unparsed", "n_failed_items"]  # fmt: skip


def social_timing_section(timing: pd.DataFrame | None) -> pd.DataFrame:
    """The streaming when timing table per model (silence baseline and streamed models):
    rates, mean signed offset with its 95% interval, P/R/F1 per delta, unparsed steps."""
    if timing is None or timing.empty:
        return pd.DataFrame(columns=TIMING_COLUMNS)
    prf = [c for c in timing.columns if c.split("_")[0] in ("precision", "recall", "f1")]
    extra = [c for c in ("n_unparsed", "n_failed_items") if c in timing.columns]
    return timing[[*TIMING_COLUMNS, *prf, *extra]].copy()


def stream_calls_section(summaries: pd.DataFrame | None) -> pd.DataFrame:
    """Calls of every streaming job, per model and benchmark (streaming.STREAM_SUMMARY rows):
    planned, steps answered (cached included), calls made in the last run, unparsed, failed."""
    if summaries is None or summaries.empty:
        return pd.DataFrame(columns=STREAM_CALL_COLUMNS)
    return (
        summaries[STREAM_CALL_COLUMNS].sort_values(["benchmark", "model", "protocol"]).reset_index(drop=True)
    )


SECTION_TITLES = {
    "inputs": "Inputs: real or simulated",
    "raters": "Raters: imported against the plan (ratings.raters_per_modality)",
    "funnel": "Filter funnel",
    "coverage": "Models and coverage (answered / asked)",
    "finish_reasons": "Finish reasons per model (failed calls included)",
    "headline": "Headline: familiarity accuracy by modality",
    "convergence": "Convergence of every Bayesian fit",
    "glmm_contrasts": "GLMM modality contrasts: percentage points of accuracy (and logit)",
    "social": "Who / when / how profile",
    "streaming": "Streaming (Omni-DuplexEval-style)",
    "social_timing": "When to speak, streamed: timing per model (SocialOmni-style)",
    "stream_calls": "Streaming calls per model and benchmark",
}


def build_summary(
    config: Mapping,
    tables: Mapping[str, pd.DataFrame | None],
    variant: str = "v1",
) -> dict[str, pd.DataFrame]:
    """The summary's sections (name -> table) from the run's tables (missing ones as None).

    tables: filter_report, design, raters (`familiarity.ratings.panel.raters_section`, built by
    the caller), metrics, responses (the models' RESPONSES, concatenated), glmm_summary,
    glmm_contrasts, rasch_fits, social_profile, streaming_metrics, social_timing (the streaming when timing
    table), stream_calls (every streaming job's STREAM_SUMMARY row), release_predictions and
    release_report (the released predictions and their import report).
    """
    get = tables.get
    sections = {
        "inputs": inputs_section(config, get("release_predictions"), get("release_report")),
        "raters": get("raters"),
        "funnel": funnel_section(get("filter_report"), get("design")),
        "coverage": coverage_section(get("metrics")),
        "finish_reasons": finish_reasons_section(get("responses")),
        "headline": headline_section(get("metrics"), variant),
        "convergence": convergence_section(get("glmm_summary"), get("rasch_fits")),
        "glmm_contrasts": glmm_contrasts_section(get("glmm_contrasts")),
    }
    if (config.get("social") or {}).get("enabled"):
        sections["social"] = social_section(get("social_profile"))
        sections["streaming"] = streaming_section(get("streaming_metrics"))
        sections["social_timing"] = social_timing_section(get("social_timing"))
        sections["stream_calls"] = stream_calls_section(get("stream_calls"))
    return {name: table for name, table in sections.items() if table is not None}  # raters: given or not


EXPLORER_LINE = "Every item beside its stimulus, the truth and every answer: the results explorer"


def summary_markdown(sections: Mapping[str, pd.DataFrame], explorer: str = "") -> str:
    """The page as markdown; `explorer`: the explorer's index.html relative to the page (a link)."""
    lines = ["# omnisocial: run summary", ""]
    if explorer:
        lines += [f"{EXPLORER_LINE} ([{explorer}]({explorer})).", ""]
    inputs = sections.get("inputs")
    if inputs is not None and inputs["status"].astype(str).str.startswith("simulated").any():
        lines += ["**SIMULATED DATA**: some inputs are the demo's simulated stand-ins (see Inputs).", ""]
    if _off_plan(sections):
        lines += [f"**Raters differ from the plan** for {', '.join(_off_plan(sections))} (see Raters).", ""]
    convergence = sections.get("convergence")
    if convergence is not None and len(convergence) and not_converged(convergence):
        lines += [
            f"**{not_converged(convergence)} Bayesian fit part(s) not converged** (see Convergence).",
            "",
        ]
    for name, table in sections.items():
        lines += [f"## {SECTION_TITLES.get(name, name)}", "", markdown_table(table)]
    return "\n".join(lines)


def console_summary(path) -> str:
    """summary.md as the end of a run prints it: the explorer's link relative to the folder the
    run was started in (the terminal it is printed in can open it), not to the summary's folder.
    The file itself keeps its link relative to its own folder."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith(EXPLORER_LINE + " (["):
            link = line[len(EXPLORER_LINE) + 3 :].split("]", 1)[0]
            here = os.path.normpath(path.parent / link)
            lines[index] = line.replace(f"([{link}]({link}))", f"([{here}]({here}))")
    return "".join(lines)


def summary_html(sections: Mapping[str, pd.DataFrame], explorer: str = "") -> str:
    parts = []
    for name, table in sections.items():
        body = (
            f"<div class='scroll'>{formatted(table).to_html(index=False, escape=True, border=0)}</div>"
            if len(table)
            else "<p>(no rows)</p>"
        )
        parts.append(f"<h3 id='{name}'>{html.escape(SECTION_TITLES.get(name, name))}</h3>{body}")
    notes = []
    inputs = sections.get("inputs")
    if inputs is not None and inputs["status"].astype(str).str.startswith("simulated").any():
        notes.append("SIMULATED DATA: some inputs are the demo's simulated stand-ins (see Inputs).")
    if _off_plan(sections):
        notes.append(f"Raters differ from the plan for {', '.join(_off_plan(sections))} (see Raters).")
    convergence = sections.get("convergence")
    if convergence is not None and len(convergence) and not convergence["converged"].all():
        notes.append("Some Bayesian fits did not converge or were not fitted (see Convergence).")
    notes_html = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    if explorer:
        link = html.escape(explorer)
        notes_html += f"<p id='explorer'>{EXPLORER_LINE}: <a href='{link}'>{link}</a></p>"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>omnisocial summary</title>"
        f"<style>{HTML_STYLE}</style></head><body><h2 id='summary'>omnisocial: run summary</h2>"
        f"{notes_html}{''.join(parts)}</body></html>\n"
    )


def write_summary(sections: Mapping[str, pd.DataFrame], folder, explorer: str = "") -> list[Path]:
    """Write summary.md, summary.html and summary_<section>.csv under `folder`; `explorer`: the
    results explorer's page relative to `folder`, linked from both pages."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in (
        ("summary.md", summary_markdown(sections, explorer)),
        ("summary.html", summary_html(sections, explorer)),
    ):
        with atomic_path(folder / name) as tmp:
            Path(tmp).write_text(text, encoding="utf-8")
        paths.append(folder / name)
    for name, table in sections.items():
        target = folder / f"summary_{name}.csv"
        with atomic_path(target) as tmp:
            table.to_csv(tmp, index=False)
        paths.append(target)
    return paths


def read_optional(path) -> pd.DataFrame | None:
    """A CSV, or None when the path is empty or missing; a list of paths: the CSVs that
    exist, concatenated (None when none does)."""
    if isinstance(path, (list, tuple)):
        frames = [frame for frame in map(read_optional, path) if frame is not None]
        return pd.concat(frames, ignore_index=True) if frames else None
    if not path or not Path(path).is_file():
        return None
    return pd.read_csv(path)
