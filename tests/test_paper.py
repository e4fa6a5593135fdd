"""The paper's numbers (issue 63, omnisocial.paper): one LaTeX macro per quoted number with its
source, the same numbers as JSON, and a draft results section that says n/a and why, and carries
a fit's flag, instead of a number where one applies. A figure-only setting changes no byte; the
GLMM's draws change the GLMM's macros only; every macro compiles with pdflatex."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from omnisocial import paper

MODALITIES = ("text", "audio", "video")
CONFIG = {
    "study": {"design_source": "pipeline"},
    "corpus": {"source": "demo", "root": "data/demo/seamless"},
    "ratings": {"source": "simulated"},
    "models": [{"name": "chance"}],
    "inference": {"prompt_variants": ["v1", "v2"]},
    "analysis": {"seed": 11, "glmm": {"draws": 100, "tune": 100, "chains": 1}, "rasch": {"draws": 100}},
    "figures": {"dpi": 150, "font_size": 8},
    "threads": {"glmm": 1},
    "social": {"enabled": True, "source": "demo", "results": "results/social"},
}


def _filter_report():
    return pd.DataFrame(
        {
            "interaction_id": list("abcdef"),
            "ingest_pass": [True, True, True, True, True, False],
            "f1_prompt_pass": [True, True, True, True, False, False],
            "f2_turns_pass": [True, True, True, False, True, False],
            "passed": [True, True, True, False, False, False],
        }
    )


def _design():
    return pd.DataFrame({"dyad_id": ["D1", "D2", "D3"], "relationship": ["familiar", "stranger", "familiar"]})


def _metrics():
    rows = []
    for modality in MODALITIES:
        for rater, accuracy in (("R1", 0.5), ("R2", 0.7)):
            rows.append(
                {
                    "model": f"{modality[0]}{rater}",
                    "modality": modality,
                    "n_items": 10,
                    "n_answered": 10,
                    "coverage": 1.0,
                    "accuracy": accuracy,
                    "ci_low": 0.2,
                    "ci_high": 0.9,
                    "p_value": 0.5,
                    "d_prime": 0.4,
                    "criterion": -0.1,
                    "rater_type": "human",
                }
            )
        rows.append(
            {
                "model": "human_majority",
                "modality": modality,
                "n_items": 24,
                "n_answered": 24,
                "coverage": 1.0,
                "accuracy": 0.625,
                "ci_low": 0.427,
                "ci_high": 0.788,
                "p_value": 0.3075,
                "d_prime": 0.65,
                "criterion": 0.05,
                "rater_type": "crowd",
            }
        )
        for model, accuracy, answered in (
            ("gpt-4o@v1", 0.75, 20),
            ("gpt-4o@v2", 0.8, 24),
            ("silent@v1", None, 0),
        ):
            rows.append(
                {
                    "model": model,
                    "modality": modality,
                    "n_items": 24,
                    "n_answered": answered,
                    "coverage": answered / 24,
                    "accuracy": accuracy,
                    "ci_low": None if accuracy is None else 0.53,
                    "ci_high": None if accuracy is None else 0.89,
                    "p_value": None if accuracy is None else 0.0414,
                    "d_prime": None if accuracy is None else 1.3,
                    "criterion": None if accuracy is None else 0.2,
                    "rater_type": "model",
                }
            )
    return pd.DataFrame(rows)


def _votes():
    return pd.DataFrame(
        [{"modality": m, "item_id": d, "n_raters": n} for m in MODALITIES for d, n in (("D1", 2), ("D2", 3))]
    )


def _curves():
    return pd.DataFrame(
        [
            {"modality": m, "k": k, "accuracy_mean": 0.55 + 0.02 * k, "beyond_min_raters": k > 2}
            for m in MODALITIES
            for k in (1, 2, 3)
        ]
    )


def _mcnemar():
    return pd.DataFrame(
        [
            {
                "comparison": "best_model_vs_crowd",
                "model_a": "gpt-4o@v1",
                "modality_a": "audio",
                "model_b": "human_majority",
                "modality_b": "audio",
                "n_items": 20,
                "b": 5,
                "c": 2,
                "statistic": 2.0,
                "p_value": 0.453,
                "p_holm": 0.906,
            },
            {
                "comparison": "modality_pair",
                "model_a": "human_majority",
                "modality_a": "audio",
                "model_b": "human_majority",
                "modality_b": "text",
                "n_items": 24,
                "b": 6,
                "c": 1,
                "statistic": 1.0,
                "p_value": 0.0000123,
                "p_holm": 0.0001,
            },
        ]
    )


def _glmm(flag: str = ""):
    summary = pd.DataFrame(
        {
            "term": ["modality[audio]", "modality[text]"],
            "n_obs": [720, 720],
            "draws": [100, 100],
            "chains": [1, 1],
            "converged": [not flag, not flag],
            "flag": [flag, flag],
        }
    )
    rows = []
    for contrast, pp, p in (
        ("audio] - modality[text", 6.5, 0.9996),
        ("audio] - modality[video", -4.5, 0.001),
        ("text] - modality[video", -10.9, 0.0),
    ):
        rows.append(
            {
                "contrast": f"modality[{contrast}]",
                "mean": pp / 25,
                "hdi_low": pp / 25 - 0.1,
                "hdi_high": pp / 25 + 0.1,
                "pp_mean": pp,
                "pp_hdi_low": pp - 2.4,
                "pp_hdi_high": pp + 2.4,
                "pp_p_gt_0": p,
                "converged": not flag,
                "flag": flag,
            }
        )
    return summary, pd.DataFrame(rows)


def _rasch(fitted_model: bool = True):
    fits = pd.DataFrame(
        [
            {
                "modality": m,
                "rater_type": t,
                "fitted": t == "human" or fitted_model,
                "reason": "" if t == "human" or fitted_model else "fewer than 2 persons",
                "converged": t == "human" or fitted_model,
                "flag": "",
            }
            for m in MODALITIES
            for t in ("human", "model")
        ]
    )
    partial = pd.DataFrame(
        [
            {
                "modality": m,
                "measure": measure,
                "n": 24,
                "partial_r": 0.31,
                "partial_p": 0.04,
                "partial_r_corrected": 0.52,
                "partial_r_corrected_low": 0.1,
                "partial_r_corrected_high": 0.9,
                "partial_r_corrected_note": "",
            }
            for m in MODALITIES
            for measure in ("accuracy", "difficulty")
        ]
    )
    correlations = pd.DataFrame(
        [
            {
                "rater_type": "human",
                "modality_a": "audio",
                "modality_b": "text",
                "pearson_r_corrected": None,
                "pearson_r_corrected_low": None,
                "pearson_r_corrected_high": None,
                "pearson_r_corrected_note": "reliability 0.12 below min_reliability 0.2",
            }
        ]
    )
    return fits, partial, correlations


def _nonanswer():
    rows = [
        {
            "model": model,
            "modality": m,
            "accuracy_answered": answered,
            "accuracy_nonanswer_wrong": wrong,
            "accuracy_nonanswer_coinflip": coin,
            "rater_type": "model",
        }
        for m in MODALITIES
        for model, answered, wrong, coin in (
            ("gpt-4o@v1", 0.75, 0.625, 0.7083),
            ("silent@v1", None, 0.0, 0.5),
        )
    ]
    return pd.DataFrame(rows)


def tables(flag: str = "", fitted_model: bool = True) -> dict:
    summary, contrasts = _glmm(flag)
    fits, partial, correlations = _rasch(fitted_model)
    return {
        "filter_report": _filter_report(),
        "design": _design(),
        "metrics": _metrics(),
        "nonanswer_accuracy": _nonanswer(),
        "majority_votes": _votes(),
        "crowd_curves": _curves(),
        "mcnemar": _mcnemar(),
        "glmm_summary": summary,
        "glmm_contrasts": contrasts,
        "rasch_fits": fits,
        "rasch_partial": partial,
        "rasch_correlations": correlations,
    }


def _social():
    profile = pd.DataFrame(
        [
            {
                "model": "random",
                "who_accuracy": 0.25,
                "who_n": 12,
                "who_correct": 3,
                "when_n": 16,
                "when_stream_n": 10,
                "who_accuracy_low": 0.09,
                "who_accuracy_high": 0.53,
                "who_consistency_gap": -0.1,
                "when_accuracy": 0.5,
                "when_accuracy_low": 0.2,
                "when_accuracy_high": 0.8,
                "when_on_time": 0.0,
                "when_on_time_low": 0.0,
                "when_on_time_high": 0.3,
                "when_early": 0.0,
                "when_late": 0.0,
                "when_f1": 0.0,
                "how_mean": None,
                "how_mean_low": None,
                "how_mean_high": None,
                "how_mean_without_zeros": None,
                "how_n": 0,
            }
        ]
    )
    streaming = pd.DataFrame(
        [
            {
                "model": "captions",
                "split": split,
                "n_rtd": 3 if split != "PR_event" else 0,
                "temporal_100": 40.0 if split != "PR_event" else None,
                "content_100": 33.3 if split != "PR_event" else None,
                "n_pr": 1 if split != "RTD_OCR" else 0,
                "reminder_100": 100.0 if split != "RTD_OCR" else None,
                "n_unparsed_steps": pd.NA,
            }
            for split in ("PR_event", "RTD_OCR", "all")
        ]
    )
    return {"social_profile": profile}, {"streaming_metrics": streaming}


def macros(tex: str) -> dict[str, str]:
    """macro name -> its whole line."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^\\newcommand\{\\(\w+)\}.*$", tex, flags=re.M)}


# --- names and formats -------------------------------------------------------------------------


def test_macro_names_are_table_keys_in_letters():
    assert paper.macro_part("gpt-4o@v1") == "GptFourOAtVOne"
    assert paper.macro_part("human_majority") == "HumanMajority"
    assert paper.macro_part("release:qwen2.5-omni") == "ReleaseQwenTwoFiveOmni"
    with pytest.raises(ValueError, match="no letter or digit"):
        paper.macro_part("--")


def test_numbers_are_written_as_a_paper_writes_them():
    number = paper.Number("X", "t", "pp", -4.51, "glmm_contrasts", "r", "c", "h")
    assert number.plain == "\u22124.5 pp" and number.tex == r"\ensuremath{-}4.5~pp"
    assert paper.latex(paper.FORMATS["percent"](0.5634)) == r"56.3\%"
    assert paper.FORMATS["percent_interval"]([0.52, 0.6049]) == "[52.0%, 60.5%]"
    assert paper.latex(paper.FORMATS["p"](0.00004)) == r"\ensuremath{<}0.001"
    assert paper.FORMATS["p"](0.0234) == "0.023"
    assert paper.latex(paper.FORMATS["prob"](0.9996)) == r"\ensuremath{>}0.999"
    assert paper.FORMATS["count"](8640.0) == "8,640"
    assert paper.FORMATS["pp"](-0.04) == "0.0 pp" and paper.FORMATS["decimal"](-0.004) == "0.00"  # no -0.0
    assert paper.latex("release:gpt_4o") == r"release:gpt\_4o"


def test_two_keys_that_read_alike_stop_with_both_sources():
    built = paper.Paper("socialomni", {})
    built.number("Who{model}Acc", 0.5, table="social_profile", row="model=qwen2.5", model="qwen2.5")
    with pytest.raises(
        ValueError, match=r"\\WhoQwenTwoFiveAcc would stand for two numbers: .*model=qwen2.5.*qwen25"
    ):
        built.number("Who{model}Acc", 0.6, table="social_profile", row="model=qwen25", model="qwen25")


# --- the familiarity numbers and draft ----------------------------------------------------------


def test_every_number_names_its_table_row_column_and_config_hash(tmp_path):
    built = paper.familiarity_paper(CONFIG, tables())
    tex = paper.numbers_tex(built)
    lines = macros(tex)
    hashes = paper.table_hashes(CONFIG)
    assert lines["AudioOverTextPP"] == (
        r"\newcommand{\AudioOverTextPP}{6.5~pp} % analysis/glmm_contrasts.csv; "
        f"contrast=modality[audio] - modality[text]; pp_mean; config {hashes['glmm_contrasts']}"
    )
    assert r"\newcommand{\AudioOverTextPPHDI}{[4.1, 8.9]}" in lines["AudioOverTextPPHDI"]
    assert r"{\ensuremath{>}0.999}" in lines["AudioOverTextProb"]
    # the table has audio - video: the paper's Video > Audio is its negation, said in the comment
    assert r"\newcommand{\VideoOverAudioPP}{4.5~pp}" in lines["VideoOverAudioPP"]
    assert "pp_mean (negated: the table has the reverse)" in lines["VideoOverAudioPP"]
    assert r"{[2.1, 6.9]}" in lines["VideoOverAudioPPHDI"]
    assert r"{0.999} %" in lines["VideoOverAudioProb"]  # 1 - 0.001, not above 0.999
    assert "1 - pp_p_gt_0 (the table has the reverse)" in lines["VideoOverAudioProb"]
    assert r"{62.5\%}" in lines["CrowdAccAudio"] and r"{[42.7\%, 78.8\%]}" in lines["CrowdAccAudioCI"]
    assert (
        "analysis/metrics.csv; model=human_majority, modality=audio; accuracy; config"
        in lines["CrowdAccAudio"]
    )
    assert r"{60.0\%}" in lines["HumanAccText"]  # mean of the raters' 0.5 and 0.7
    assert r"{gpt-4o@v1}" in lines["BestModelAudio"]  # the first prompt variant's best, not v2's
    assert r"{\ensuremath{<}0.001}" in lines["McNemarCrowdAudioVsTextP"]
    # the funnel, in order: 6 in the corpus, 5 ingested, 4 with a prompt, 3 with turns, 3 eligible
    counts = [
        lines[name].split("}{")[1].split("}")[0]
        for name in ("FunnelCorpus", "FunnelIngest", "FunnelFOnePrompt", "FunnelFTwoTurns", "FunnelEligible")
    ]
    assert counts == ["6", "5", "4", "3", "3"]
    assert all(re.fullmatch(r"[A-Za-z]+", name) for name in lines)
    data = json.loads(paper.numbers_json(built))
    entry = next(n for n in data["numbers"] if n["name"] == "CrowdAccAudioCI")
    assert entry["value"] == [0.427, 0.788] and entry["text"] == "[42.7%, 78.8%]"
    assert entry["table"] == "analysis/metrics.csv" and entry["column"] == "ci_low, ci_high"
    assert [n["name"] for n in data["numbers"]] == list(lines)


def test_no_answers_and_no_fit_are_said_instead_of_a_number():
    built = paper.familiarity_paper(CONFIG, tables(fitted_model=False))
    lines = macros(paper.numbers_tex(built))
    assert lines["ModelSilentAtVOneAccText"].startswith(r"\newcommand{\ModelSilentAtVOneAccText}{n/a} %")
    assert "no value: no answers (0 of 24 dyads answered)" in lines["ModelSilentAtVOneAccText"]
    draft = paper.results_markdown(built)
    assert (
        "silent@v1: no answers (0 of 24 dyads answered), so no accuracy; its 24 non-answers counted wrong: "
        "0.0%, as coin flips: 50.0%." in draft
    )
    # refusals: the accuracy with the non-answers counted wrong and as coin flips beside it
    assert "binomial p 0.041); its 4 non-answers counted wrong: 62.5%, as coin flips: 70.8%." in draft
    assert "ModelGptFourOAtVTwoAccNonanswerWrongText" not in lines  # it answered every dyad
    # a reliability too low for the correction: n/a and why, in the macro and the draft
    assert "no value: reliability 0.12 below min_reliability 0.2" in lines["DifficultyHumanRCorrAudioText"]
    assert "corrected r n/a (reliability 0.12 below min_reliability 0.2)" in draft
    # a Rasch fit not made flags the correlation read from it
    assert (
        "FLAGGED: Rasch text / model: not fitted: fewer than 2 persons" in lines["DifficultyPartialRCorrText"]
    )
    assert "(**flagged**: Rasch text / model: not fitted: fewer than 2 persons)" in draft
    empty = tables()
    empty["glmm_summary"], empty["glmm_contrasts"] = (
        empty["glmm_summary"].iloc[0:0],
        empty["glmm_contrasts"].iloc[0:0],
    )
    built = paper.familiarity_paper(CONFIG, empty)
    lines = macros(paper.numbers_tex(built))
    assert lines["AudioOverTextPP"].startswith(r"\newcommand{\AudioOverTextPP}{n/a} %")
    draft = paper.results_markdown(built)
    assert "No GLMM contrasts: the GLMM was not fitted (no human trials" in draft
    assert "- GLMM: not fitted (no human trials; see logs/glmm.log)" in draft.split("## Convergence")[1]


def test_a_flagged_fit_carries_its_flag_into_the_draft_and_the_comment():
    flag = "not converged: r_hat 1.050 > 1.01"
    built = paper.familiarity_paper(CONFIG, tables(flag=flag))
    lines = macros(paper.numbers_tex(built))
    # its own row's flag, then every flagged part of the fit (a contrast of a fit whose rater SD did
    # not converge is flagged even where its own R-hat and ESS pass)
    assert (
        f"; FLAGGED: {flag}; GLMM parts flagged: modality[audio], modality[text] (see Convergence)"
        in lines["AudioOverTextPP"]
    )
    assert "FLAGGED" not in lines["CrowdAccAudio"]
    draft = paper.results_markdown(built)
    assert (
        f"- Audio > Text: 6.5 pp, 95% HDI [4.1, 8.9], P(> 0) >0.999 (logit 0.26, HDI [0.16, 0.36]) "
        f"(**flagged**: {flag}; GLMM parts flagged: modality[audio], modality[text] (see Convergence))."
        in draft
    )
    assert f"- GLMM modality[audio]: {flag}" in draft


def test_a_contrast_of_a_fit_with_one_unconverged_part_carries_that_part():
    """The demo's case: the rater SD misses its tail ESS, the contrasts' own rows pass."""
    given = tables()
    summary = given["glmm_summary"].copy()
    summary.loc[len(summary)] = {
        "term": "1|rater_id_sigma",
        "n_obs": 720,
        "draws": 100,
        "chains": 1,
        "converged": False,
        "flag": "not converged: ess_tail 381 < 400",
    }
    given["glmm_summary"] = summary
    lines = macros(paper.numbers_tex(paper.familiarity_paper(CONFIG, given)))
    assert lines["VideoOverTextPP"].endswith(
        "; FLAGGED: GLMM 1|rater_id_sigma: not converged: ess_tail 381 < 400"
    )
    assert "FLAGGED" not in lines["GlmmDraws"]


def test_a_released_design_sets_its_numbers_beside_the_published_ones():
    config = copy.deepcopy(CONFIG)
    config["study"] = {"design_source": "release"}
    given = tables(flag="not converged")
    del given["filter_report"]
    draft = paper.results_markdown(paper.familiarity_paper(config, given))
    table = draft.split("## Beside the published FriendBench figures")[1]
    assert "| `\\AudioOverTextPP` | GLMM contrast | 6.5 pp | 6.5 pp (flagged: see Convergence) |" in table
    assert "| `\\HumanAccText` | accuracy, text | 49.9% | 60.0% |" in table
    assert "| `\\DesignDyads` | 3 sites x 2 relationships x 2 gender mixes x 8 dyads | 96 | 3 |" in table
    assert "The design was imported from a released data set" in draft
    assert "Beside the published" not in paper.results_markdown(paper.familiarity_paper(CONFIG, tables()))


def test_convergence_is_read_from_whatever_columns_the_table_has():
    assert paper.fit_flag({"converged": "True", "flag": ""}) == ""
    assert paper.fit_flag({"converged": False}) == "not converged"
    assert paper.fit_flag({"converged": float("nan"), "flag": "not applicable: no modality effect"}) == (
        "not applicable: no modality effect"
    )
    assert paper.fit_flag({"status": "not applicable: one modality"}) == "not applicable: one modality"
    assert paper.fit_flag({"fitted": "False", "reason": "too few raters", "converged": False}) == (
        "not fitted: too few raters"
    )


def test_a_fit_that_cannot_exist_is_said_apart_not_as_a_failure():
    """rasch_fits as the rasch rule writes a side with one model: converged empty, the flag
    'not applicable: <why>'; the convergence section lists it apart from the fits that failed."""
    given = tables()
    fits = given["rasch_fits"]
    lone = (fits["modality"] == "audio") & (fits["rater_type"] == "model")
    fits["converged"] = fits["converged"].astype(object)
    fits.loc[lone, ["fitted", "reason", "converged", "flag"]] = [
        False,
        "1 model and 24 dyads (2 of each needed)",
        None,
        "not applicable: 1 model and 24 dyads (2 of each needed)",
    ]
    section = paper.results_markdown(paper.familiarity_paper(CONFIG, given)).split("## Convergence")[1]
    assert "Every Bayesian fit made converged" in section and "Not every Bayesian fit" not in section
    assert "- Rasch audio / model: not applicable: 1 model and 24 dyads (2 of each needed)" in section
    assert "Every Bayesian fit converged" in paper.results_markdown(paper.familiarity_paper(CONFIG, tables()))


def test_the_draft_follows_the_papers_order_and_says_simulated_data():
    draft = paper.results_markdown(paper.familiarity_paper(CONFIG, tables()))
    headings = re.findall(r"^## (.+)$", draft, flags=re.M)
    assert headings == [
        "Data",
        "Filters and design",
        "Raters and crowd sizes",
        "Accuracy: people and models, per modality",
        "Paired tests (McNemar)",
        "Modality effects (GLMM)",
        "Dyad difficulty: people against models",
        "Convergence",
    ]
    assert "**SIMULATED DATA**" in draft
    assert "- interactions in the corpus: 6\n- left after ingested (transcript and media found): 5\n" in draft
    assert "- passed every filter: 3\n" in draft
    assert "The design holds 3 dyads (2 familiar, 1 stranger)." in draft
    assert "- audio: 2 raters gave 20 ratings; each dyad's crowd held 2 to 3 raters." in draft
    assert "a crowd of 2 (the largest every dyad has) on 59.0%" in draft


# --- reruns: a number's change changes its line only ----------------------------------------------


def test_a_figure_only_setting_changes_no_byte():
    before = paper.familiarity_paper(CONFIG, tables())
    changed = copy.deepcopy(CONFIG)
    changed["figures"] = {"dpi": 600, "font_size": 10, "formats": ["png", "svg"]}
    changed["threads"] = {"glmm": 4}
    changed["results"] = "elsewhere/familiarity"
    after = paper.familiarity_paper(changed, tables())
    assert paper.numbers_tex(after) == paper.numbers_tex(before)
    assert paper.numbers_json(after) == paper.numbers_json(before)
    assert paper.results_markdown(after) == paper.results_markdown(before)
    assert paper.number_settings(changed) == {
        k: v for k, v in CONFIG.items() if k not in ("figures", "threads")
    }


def _trials(seed: int = 5) -> pd.DataFrame:
    """Human trials with a modality effect (text < audio < video) and rater and dyad effects."""
    rng = np.random.default_rng(seed)
    dyads = {f"D{i:02d}": rng.normal(0, 0.5) for i in range(16)}
    rows = []
    for m, modality in enumerate(MODALITIES):
        for r in range(10):
            skill = rng.normal(0, 0.4)
            for dyad, ease in dyads.items():
                p = 1 / (1 + np.exp(-(0.4 * m + skill + ease)))
                correct = bool(rng.random() < p)
                truth = "familiar" if int(dyad[1:]) % 2 else "stranger"
                other = "stranger" if truth == "familiar" else "familiar"
                rows.append(
                    {
                        "rater_id": f"{modality}{r}",
                        "dyad_id": dyad,
                        "modality": modality,
                        "response": truth if correct else other,
                        "correct": correct,
                        "source": "simulated rater panel (demo)",
                    }
                )
    return pd.DataFrame(rows)


def test_more_glmm_draws_change_the_glmm_macros_only():
    """Two real GLMM fits (about a CPU-second) of the same trials, 150 and 250 draws."""
    from omnisocial.familiarity.analysis import glmm_tables
    from omnisocial.settings import Glmm

    trials = _trials()
    outputs, entries = {}, {}
    for draws in (150, 250):
        config = copy.deepcopy(CONFIG)
        config["analysis"]["glmm"] = {"draws": draws, "tune": 150, "chains": 2}
        settings = Glmm.of({**config["analysis"]["glmm"], "target_accept": 0.9, "max_divergences": 0})
        fitted = glmm_tables(trials, settings, 11)
        built = paper.familiarity_paper(config, {**tables(), **fitted})
        outputs[draws] = macros(paper.numbers_tex(built))
        entries[draws] = {n["name"]: n for n in json.loads(paper.numbers_json(built))["numbers"]}
    before, after = outputs[150], outputs[250]
    # numbers.json alike: every entry but the GLMM's the same
    assert {n for n in entries[150] if entries[150][n] != entries[250][n]} == {
        name for name in before if before[name] != after[name]
    }
    assert list(before) == list(after)
    changed = {name for name in before if before[name] != after[name]}
    glmm = {name for name, line in before.items() if "analysis/glmm_" in line}
    assert changed and changed <= glmm, changed - glmm
    assert {"GlmmDraws", "AudioOverTextPP"} <= changed
    assert after["GlmmDraws"].startswith(r"\newcommand{\GlmmDraws}{250}")


# --- the social benchmarks ---------------------------------------------------------------------------


def test_social_numbers_say_what_a_model_did_not_do():
    profile, streaming = _social()
    built = paper.socialomni_paper(CONFIG, profile)
    lines = macros(paper.numbers_tex(built))
    assert r"{25.0\%}" in lines["WhoRandomAcc"] and r"{\ensuremath{-}10.0~pp}" in lines["WhoRandomGap"]
    assert "no value: no judged reply" in lines["HowRandomMean"]
    draft = paper.results_markdown(built)
    assert "how n/a (no judged reply)." in draft and "when, streamed: on time 0.0% [0.0%, 30.0%]," in draft
    stream = paper.streaming_paper(CONFIG, streaming)
    lines = macros(paper.numbers_tex(stream))
    assert "no value: no description item" in lines["StreamCaptionsPREventTemporal"]
    assert r"{100.0}" in lines["StreamCaptionsAllReminder"]
    assert list(lines)[0].startswith("StreamCaptionsAll")  # 'all' first
    assert "- captions, PR_event: 1 item; reminders 100.0." in paper.results_markdown(stream)


# --- the files, LaTeX and the docs ---------------------------------------------------------------------


def _every_paper(tmp_path: Path) -> list[Path]:
    profile, streaming = _social()
    folders = []
    for name, built in (
        ("familiarity", paper.familiarity_paper(CONFIG, tables(flag="not converged"))),
        ("socialomni", paper.socialomni_paper(CONFIG, profile)),
        ("streaming", paper.streaming_paper(CONFIG, streaming)),
    ):
        paper.write_paper(built, tmp_path / name)
        folders.append(tmp_path / name)
    return folders


def test_every_macro_compiles_with_pdflatex(tmp_path):
    """A small document that \\inputs every benchmark's numbers.tex and uses every macro."""
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed (Debian: texlive-latex-base; .ci/system-deps.sh installs it)")
    folders = _every_paper(tmp_path)
    names = [name for folder in folders for name in macros((folder / "numbers.tex").read_text())]
    assert len(names) == len(set(names)), "a macro defined by two benchmarks"
    body = "\n".join(f"\\texttt{{{name}}}: \\{name}\\par" for name in names)
    inputs = "\n".join(f"\\input{{{folder.name}/numbers.tex}}" for folder in folders)
    document = tmp_path / "numbers_test.tex"
    document.write_text(
        f"\\documentclass{{article}}\n{inputs}\n\\begin{{document}}\n{body}\n\\end{{document}}\n"
    )
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", document.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert (tmp_path / "numbers_test.pdf").stat().st_size > 0
    log = (tmp_path / "numbers_test.log").read_text(errors="replace")
    assert "Undefined control sequence" not in log and "Missing $ inserted" not in log


def test_the_files_are_written_and_the_json_has_every_macro(tmp_path):
    folder = _every_paper(tmp_path)[0]
    assert sorted(p.name for p in folder.iterdir()) == ["numbers.json", "numbers.tex", "results.md"]
    data = json.loads((folder / "numbers.json").read_text())
    assert [n["name"] for n in data["numbers"]] == list(macros((folder / "numbers.tex").read_text()))
    assert all(n["config_hash"] for n in data["numbers"])


def test_the_outputs_page_lists_every_macro_template():
    """docs/outputs.md holds the marker the docs hook fills with every macro template."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "outputs.md").read_text()
    rendered = paper.with_macro_reference(page)
    for macros_of in paper.MACROS.values():
        for template in macros_of:
            assert f"`\\{template}`" in rendered, template
    assert paper.PAPER_MACROS_MARKER not in rendered
    assert (
        "paper.with_macro_reference"
        in (Path(__file__).resolve().parents[1] / "docs" / "hooks" / "reference.py").read_text()
    )
