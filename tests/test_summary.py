"""The summary page (omnisocial.summary) and the HTML / markdown / LaTeX renderings of tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from omnisocial import summary


def _filter_report():
    return pd.DataFrame(
        {
            "interaction_id": ["a", "b", "c", "d"],
            "ingest_pass": [True, True, True, False],
            "f1_prompt_pass": [True, True, False, False],
            "f2_turns_pass": [True, False, True, False],
            "passed": [True, False, False, False],
        }
    )


def _metrics():
    return pd.DataFrame(
        {
            "model": ["R1", "human_majority", "m@v1", "m@v2", "silent@v1"],
            "modality": ["text"] * 5,
            "n_items": [8, 24, 24, 24, 24],
            "n_answered": [8, 24, 20, 24, 0],
            "accuracy": [0.6, 0.7, 0.8, 0.9, float("nan")],
            "ci_low": [0.3, 0.5, 0.6, 0.7, float("nan")],
            "ci_high": [0.8, 0.85, 0.9, 0.97, float("nan")],
            "rater_type": ["human", "crowd", "model", "model", "model"],
        }
    )


def test_funnel_counts_are_sequential():
    funnel = summary.funnel_section(_filter_report(), pd.DataFrame({"dyad_id": ["D1"]}))
    assert list(funnel["n"]) == [4, 3, 2, 1, 1, 1]
    assert list(funnel["excluded"]) == [0, 1, 1, 1, 0, 0]
    assert funnel["stage"].iloc[-1] == "dyads sampled into the design"


def test_coverage_lists_a_model_without_answers():
    coverage = summary.coverage_section(_metrics()).set_index("model")
    assert coverage.loc["silent@v1", "text"] == "0/24 (no answers)"
    assert coverage.loc["m@v1", "text"] == "20/24"
    assert "R1" not in coverage.index and "human_majority" not in coverage.index


def test_headline_uses_the_primary_variant():
    headline = summary.headline_section(_metrics(), variant="v1").iloc[0]
    assert headline["best model"] == "m@v1"  # m@v2 is better but not the primary variant
    assert headline["its coverage"] == "20/24"
    assert headline["crowd accuracy [95% CI]"] == "0.70 [0.50, 0.85]"


def test_convergence_and_markdown(tmp_path):
    glmm = pd.DataFrame(
        {
            "term": ["modality[text]"],
            "r_hat": [1.0],
            "ess_bulk": [900.0],
            "converged": [True],
            "flag": [None],
            "divergences": [0],
        }
    )
    rasch = pd.DataFrame(
        {
            "modality": ["text", "audio"],
            "rater_type": ["human", "model"],
            "fitted": [True, False],
            "reason": [None, "too few persons"],
            "r_hat_max": [1.01, float("nan")],
            "ess_bulk_min": [300.0, float("nan")],
            "converged": [False, None],
            "flag": [
                "not converged: ess_bulk 300 < 400; 145 divergent transitions > 0",
                "not applicable: too few persons",
            ],
            "divergences": [145, None],
        }
    )
    config = {
        "corpus": {"source": "demo"},
        "ratings": {"source": "simulated"},
        "models": [{"name": "m"}],
        "social": {"enabled": False},
    }
    sections = summary.build_summary(
        config,
        {"filter_report": _filter_report(), "metrics": _metrics(), "glmm_summary": glmm, "rasch_fits": rasch},
    )
    convergence = sections["convergence"]
    assert list(convergence["converged"])[:2] == [True, False] and pd.isna(convergence["converged"].iloc[2])
    assert convergence["flag"].iloc[2] == "not applicable: too few persons"  # one model: no fit to make
    # the divergent transitions of every fit, beside R-hat and ESS; none for a fit not made
    assert convergence["divergences"].tolist()[:2] == [0, 145] and pd.isna(convergence["divergences"].iloc[2])
    paths = summary.write_summary(sections, tmp_path)
    text = (tmp_path / "summary.md").read_text()
    assert "**SIMULATED DATA**" in text and "**1 Bayesian fit part(s) not converged**" in text
    assert (
        "| silent@v1 | 0/24 (no answers) |" in text.replace("  ", " ").replace("  ", " ")
        or "silent@v1" in text
    )
    assert (tmp_path / "summary.html").read_text().count("<table") == len(sections) - sum(
        t.empty for t in sections.values()
    )
    assert {p.name for p in paths} >= {"summary.md", "summary.html", "summary_funnel.csv"}


def test_render_table_writes_html_markdown_latex(tmp_path):
    table = pd.DataFrame(
        {"model": ["a_b"], "accuracy": [0.123456], "source": ["simulated rater panel (demo)"]}
    )
    html, md, tex = summary.render_table(table, tmp_path / "metrics", title="metrics")
    assert "<table" in html.read_text() and "SIMULATED DATA" in html.read_text()
    assert "0.123" in md.read_text() and "| model" in md.read_text()
    assert "\\begin{tabular}" in tex.read_text() and "a\\_b" in tex.read_text()
    # the report shows the page, not its folder: the page names the files beside it
    assert "<p>The full table is metrics.csv beside this page; metrics.md and metrics.tex" in html.read_text()


def test_render_tables_renders_every_csv_beside_it_one_log_line_each(tmp_path, caplog):
    """Rule render_tables' one call: every table, the same bytes as rendering each on its own."""
    tables = {
        tmp_path / "analysis" / "metrics": pd.DataFrame({"model": ["a"], "accuracy": [0.5]}),
        tmp_path / "social" / "who_metrics": pd.DataFrame({"model": ["b"], "n": [3]}),
    }
    for stem, table in tables.items():
        stem.parent.mkdir()
        table.to_csv(f"{stem}.csv", index=False)
    titles = {str(stem): f"title of {stem.name}" for stem in tables}
    with caplog.at_level("INFO"):
        paths = summary.render_tables(titles)
    assert paths == [Path(f"{stem}.{ext}") for stem in tables for ext in ("html", "md", "tex")]
    assert [r.getMessage().split(":")[0] for r in caplog.records] == list(titles.values())
    alone = tmp_path / "alone"
    alone.mkdir()
    for stem in tables:
        rendered = summary.render_table(pd.read_csv(f"{stem}.csv"), alone / stem.name, titles[str(stem)])
        for ext, path in zip(("html", "md", "tex"), rendered, strict=True):
            assert Path(f"{stem}.{ext}").read_bytes() == path.read_bytes(), (stem, ext)


def test_inputs_name_the_release_and_no_corpus_it_never_read():
    released = pd.DataFrame(
        {
            "model": ["release:o3-high"] * 3 + ["release:gpt-4o"] * 2,
            "modality": ["text", "audio", "video", "text", "audio"],
            "item_id": ["fb_0000"] * 5,
        }
    )
    shards = [f"/data/fb/preds/part-{k:05d}.parquet" for k in range(7)]
    report = pd.DataFrame(
        {"file": [f for f in shards for _ in range(2)], "reason": ["imported", "duplicate"] * 7}
    )
    config = {
        "study": {"design_source": "release"},
        "corpus": {"source": "seamless", "root": ""},  # the schema default: never read here
        "release": {
            "name": "FriendBench validation",
            "root": "/data/fb",
            "metadata": "/data/fb/metadata.jsonl",
            "predictions": {"path": "/data/fb/preds"},
        },
        "ratings": {"source": "exports"},
        "models": [],
    }
    inputs = summary.inputs_section(config, released, report).set_index("input")
    assert "corpus" not in inputs.index
    assert inputs.loc["design and stimuli", "detail"] == (
        "release FriendBench validation: metadata /data/fb/metadata.jsonl, root /data/fb"
    )
    detail = inputs.loc["released predictions", "detail"]
    assert detail.startswith("2 released prediction sets (models; 5 model x modality) of release FriendBench")
    assert "from 7 file(s): /data/fb/preds/part-00000.parquet" in detail and "and 2 more" in detail
    assert inputs.loc["models", "status"] == "none (a released design has no corpus)"
    # a pipeline design beside released predictions lists its corpus and the release's predictions
    pipeline = {
        **config,
        "study": {"design_source": "pipeline"},
        "corpus": {"source": "seamless", "root": "/c"},
    }
    sections = summary.build_summary(pipeline, {"release_predictions": released, "release_report": report})
    rows = sections["inputs"].set_index("input")
    assert "design and stimuli" not in rows.index and rows.loc["corpus", "status"] == "real"
    assert rows.loc["released predictions", "status"] == "real (released data set)"
    before = summary.inputs_section(pipeline).set_index("input")  # not imported yet
    assert (
        before.loc["released predictions", "detail"]
        == "release.predictions.path: /data/fb/preds (not imported yet)"
    )


def test_tables_print_r_hat_with_three_decimals_and_counts_as_integers():
    """1.015 is not converged at the 1.01 target: it must not print as "1.01"; a count column
    with a gap (floats) prints 1510, not 1.51e+03; other floats keep 3 significant digits."""
    from omnisocial.summary import formatted

    table = pd.DataFrame(
        {
            "r_hat": [1.015, 1.0, float("nan")],
            "r_hat_max": [1.0049, 1.2, 1.01],
            "n": [1510.0, float("nan"), 3.0],
            "estimate": [0.123456, 12345.6, -2.5],
        }
    )
    text = formatted(table)
    assert text["r_hat"].tolist() == ["1.015", "1.000", ""]
    assert text["r_hat_max"].tolist() == ["1.005", "1.200", "1.010"]
    assert text["n"].tolist() == ["1510", "", "3"]
    assert text["estimate"].tolist() == ["0.123", "12346", "-2.5"]


def test_social_sections_list_streaming_calls_and_the_timing_per_model(tmp_path):
    calls = pd.DataFrame(
        {
            "model": ["m2", "m1"], "benchmark": ["socialomni", "socialomni"],
            "protocol": ["when_stream", "when_stream"], "n_items": [2, 2], "n_planned": [20, 20],
            "n_steps": [9, 7], "n_calls": [6, 7], "n_cached": [3, 0], "n_silence": [7, 5],
            "n_utterance": [2, 1], "n_unparsed": [0, 1], "n_failed_items": [0, 0],
        }
    )  # fmt: skip
    timing = pd.DataFrame(
        {
            "model": ["baseline_signal", "m1"], "n": [2, 2], "on_time": [0.5, 0.0], "early": [0.0, 0.0],
            "late": [0.5, 1.0], "no_response": [0.0, 0.0], "n_responses": [2, 2], "mean_offset": [1.2, 1.9],
            "mean_offset_low": [0.1, 1.5], "mean_offset_high": [2.3, 2.3], "precision_0.5": [0.5, 0.0],
            "recall_0.5": [0.5, 0.0], "f1_0.5": [0.5, 0.0], "n_steps": [None, 7], "n_calls": [None, 7],
            "n_unparsed": [None, 1], "n_failed_items": [None, 0],
        }
    )  # fmt: skip
    config = {"social": {"enabled": True}}
    sections = summary.build_summary(config, {"stream_calls": calls, "social_timing": timing})
    assert sections["stream_calls"]["model"].tolist() == ["m1", "m2"]
    assert sections["stream_calls"].loc[1, "n_calls"] == 6 and "n_silence" not in sections["stream_calls"]
    assert {"mean_offset_low", "f1_0.5", "n_unparsed"} <= set(sections["social_timing"].columns)
    assert "n_calls" not in sections["social_timing"]  # the calls table has them
    summary.write_summary(sections, tmp_path)
    text = (tmp_path / "summary.md").read_text()
    assert "## Streaming calls per model and benchmark" in text and "When to speak, streamed" in text
    empty = summary.build_summary(config, {})
    assert empty["stream_calls"].empty and list(empty["stream_calls"].columns)[:3] == [
        "model",
        "benchmark",
        "protocol",
    ]


def test_glmm_contrasts_section_shows_percentage_points_beside_logits(tmp_path):
    """Issue 52: the summary page states the modality contrasts as the paper does (pp, 95% HDI,
    P > 0) beside the logit ones, and keeps a flagged row flagged."""
    contrasts = pd.DataFrame(
        {
            "contrast": ["modality[audio] - modality[text]"],
            "mean": [0.27],
            "hdi_low": [0.1],
            "hdi_high": [0.43],
            "p_gt_0": [0.998],
            "pp_mean": [6.28],
            "pp_hdi_low": [3.98],
            "pp_hdi_high": [8.6],
            "pp_p_gt_0": [1.0],
            "converged": [False],
            "flag": ["not converged: ess_tail 218 < 400"],
        }
    )
    sections = summary.build_summary({"social": {"enabled": False}}, {"glmm_contrasts": contrasts})
    row = sections["glmm_contrasts"].iloc[0]
    assert row["pp"] == 6.28 and row["pp_hdi"] == "[4.0, 8.6]" and row["logit_hdi"] == "[0.100, 0.430]"
    assert not row["converged"] and "ess_tail" in row["flag"]
    summary.write_summary(sections, tmp_path)
    assert "GLMM modality contrasts: percentage points" in (tmp_path / "summary.md").read_text()
    assert "glmm_contrasts" not in summary.build_summary({"social": {"enabled": False}}, {})


def test_the_printed_summary_links_the_explorer_from_the_run_folder(tmp_path, monkeypatch):
    """Issue 60: summary.md links the explorer relative to its own folder (../explorer/index.html);
    the end of a run prints it with the link relative to the folder the run started in, which the
    terminal it is printed in can open."""
    monkeypatch.chdir(tmp_path)
    folder = Path("results/familiarity/summary")
    summary.write_summary({}, folder, explorer="../explorer/index.html")
    index = Path("results/familiarity/explorer/index.html")
    index.parent.mkdir(parents=True)
    index.write_text("<html></html>")
    on_disk = (folder / "summary.md").read_text()
    assert "([../explorer/index.html](../explorer/index.html))" in on_disk
    printed = summary.console_summary(folder / "summary.md")
    assert f"{summary.EXPLORER_LINE} ([{index}]({index}))." in printed
    assert Path(printed.split("([", 1)[1].split("]", 1)[0]).is_file()  # opens from here
    assert printed.replace(str(index), "../explorer/index.html") == on_disk  # nothing else changed


def test_a_generated_release_is_said_to_be_simulated():
    """Issue 60: a study run on `omnisocial friendbench-demo`'s release (rule report_summary passes
    its mark) lists its design, ratings and predictions as simulated, not as a real data set."""
    config = {
        "study": {"design_source": "release"},
        "release": {"name": "FriendBench validation", "metadata": "m.csv", "root": "data/friendbench"},
        "ratings": {"source": "exports"},
        "models": [],
    }
    real = summary.inputs_section(config)
    assert {"real (released data set)", "real"} <= set(real["status"])
    generated = summary.inputs_section(
        config | {summary.GENERATED_KEY: "data/friendbench/GENERATED_BY_OMNISOCIAL.json"}
    )
    statuses = dict(zip(generated["input"], generated["status"], strict=True))
    assert statuses["design and stimuli"] == statuses["human ratings"] == summary.GENERATED_STATUS
    assert summary.GENERATED_STATUS.startswith("simulated")  # the page's SIMULATED DATA banner reads it
