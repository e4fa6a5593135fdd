"""The report's pages as a reader sees them (issue 21): the front page's list of inputs is a list,
and a wide table scrolls in its own box instead of being cut.

The captions are rendered as `snakemake --report` renders them: jinja2 with trim_blocks and
lstrip_blocks (snakemake.report.auto_report, Snakemake 9), then docutils. The tables are the
real `omnisocial.summary` pages, opened by headless chromium where it is installed. One job
(rule render_tables) renders every reported table, each captioned by its own rst.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
import pytest
from docutils.core import publish_parts

from omnisocial.config import load_config
from omnisocial.summary import html_table, summary_html

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "workflow" / "report"
CONFIGS = ("demo.yaml", "seamless.example.yaml", "friendbench_release.example.yaml")


def caption_html(path: Path, config: dict, **environment) -> str:
    class Snakemake:  # what a caption sees of the run (params and wildcards: none here)
        params: dict = {}
        wildcards: dict = {}

    Snakemake.config = config
    text = jinja2.Environment(**environment).from_string(path.read_text()).render(snakemake=Snakemake)
    return publish_parts(text, writer="html", settings_overrides={"report_level": 5})["body"]


def snakemake_caption(path: Path, config: dict) -> str:
    return caption_html(path, config, trim_blocks=True, lstrip_blocks=True)


@pytest.mark.parametrize("name", CONFIGS)
def test_the_front_page_lists_the_inputs_one_item_each(name):
    config = load_config(ROOT / "config" / name)
    page = snakemake_caption(REPORT / "workflow.rst", config)
    listed = re.search(r"<p>Inputs, real or simulated:</p>\s*<ul[^>]*>(.*?)</ul>", page, re.S)
    assert listed, page
    items = re.findall(r"<li>(.*?)</li>", listed.group(1), re.S)
    assert [item.split(":")[0] for item in items] == [
        "Design",
        "Human ratings",
        "Models",
        "Social benchmarks",
    ]
    simulated = config["ratings"]["source"] == "simulated"
    assert ("<strong>SIMULATED</strong>, a simulated rater panel" in items[1]) == simulated
    # the simulated-data warning is a paragraph of its own, not the end of the one before
    assert ("<p><strong>SIMULATED DATA</strong>: the human ratings" in page) == simulated
    assert "<p><strong>Familiarity (FriendBench-style)</strong>" in page


@pytest.mark.parametrize("name", CONFIGS)
def test_every_caption_reads_the_same_under_snakemakes_whitespace_control(name):
    """A block tag that ends a line takes the line break with it under trim_blocks: no caption
    may depend on that line break (the front page's list items ran together so)."""
    config = load_config(ROOT / "config" / name)
    config["social"]["enabled"] = name != "friendbench_release.example.yaml"
    for path in sorted(REPORT.glob("*.rst")):
        plain = re.sub(r"\s+", " ", caption_html(path, config))
        assert re.sub(r"\s+", " ", snakemake_caption(path, config)) == plain, path.name


def wide_table(rows: int = 60, columns: int = 30) -> pd.DataFrame:
    values = np.random.default_rng(0).normal(size=(rows, columns))
    table = pd.DataFrame(values, columns=[f"posterior_quantity_{k}_hdi_low" for k in range(columns)])
    table.insert(0, "model", [f"omni-model-{k}@v1" for k in range(rows)])
    return table


def test_tables_sit_in_a_scrolling_box():
    page = html_table(wide_table(), "wide", note="")
    assert re.search(r"<div class='scroll'><table[^>]*>.*</table>\s*</div>", page, re.S)
    assert ".scroll{overflow:auto;max-width:100%" in page
    summary = summary_html({"headline": wide_table(3), "coverage": pd.DataFrame({"model": []})})
    assert summary.count("<div class='scroll'><table") == 1  # an empty section says so instead
    assert "(no rows)" in summary


def _browser() -> str | None:
    return next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )


MEASURE = """<script>
const box = document.querySelector('.scroll');
document.body.setAttribute('data-measured', [box.scrollWidth, box.clientWidth,
  document.documentElement.scrollWidth, window.innerWidth, box.getBoundingClientRect().bottom,
  window.innerHeight].join(','));
</script>"""


def test_a_wide_table_scrolls_in_its_box_in_a_browser(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("chromium not on PATH (make system-deps installs it; .ci/run runs that)")
    page = tmp_path / "wide.html"
    page.write_text(html_table(wide_table(), "wide").replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=800,600",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    measured = re.search(r'data-measured="([\d.,]+)"', dom)
    assert measured, dom[:2000]
    box_scroll, box_width, page_scroll, window_width, box_bottom, window_height = map(
        float, measured.group(1).split(",")
    )
    assert box_scroll > 2 * box_width  # the table is far wider than its box: the box scrolls
    assert page_scroll <= window_width  # and the page itself is not wider than the window
    assert box_bottom <= window_height  # the box's horizontal scroll bar is in view


# The parsed workflow's rule render_tables and the tables it should render (REPORT_TABLES),
# through Snakemake's API: no job runs, and no dry run plans the whole DAG.
RENDER_RULE = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.io import get_flag_value
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
snakefile, workdir, configfile = map(Path, sys.argv[1:4])
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(snakefile=snakefile, workdir=workdir, resource_settings=ResourceSettings(),
                            config_settings=ConfigSettings(configfiles=[configfile]))._workflow
    rule = workflow.get_rule("render_tables")
    reported = {}
    for path in rule.output.html:
        flag = get_flag_value(path, "report")
        caption = flag.caption.get_path_or_uri(secret_free=True)
        reported[str(path)] = {"caption": caption, "category": flag.category,
                               "subcategory": flag.subcategory, "labels": flag.labels}
    print("RULE " + json.dumps({
        "rules": [r.name for r in workflow.rules], "wildcards": sorted(rule.wildcard_names),
        "input": list(map(str, rule.input)), "md": list(map(str, rule.output.md)),
        "tex": list(map(str, rule.output.tex)), "reported": reported, "params": dict(rule.params),
        "local": rule.name in workflow._localrules, "all": list(map(str, workflow.get_rule("all").input)),
        "tables": workflow.globals["REPORT_TABLES"]}))
"""


def test_one_job_renders_every_reported_table_with_its_caption(tmp_path):
    """The demo's reported tables (every study, social included) are one job's outputs, each HTML
    in the report under its category with its own caption, and `all` asks for every rendering."""
    config = load_config(ROOT / "config" / "demo.yaml")
    assert config["social"]["enabled"]
    (tmp_path / "config.yaml").write_text((ROOT / "config" / "demo.yaml").read_text())
    args = [str(ROOT / "Snakefile"), str(tmp_path), str(tmp_path / "config.yaml")]
    result = subprocess.run(
        [sys.executable, "-c", RENDER_RULE, *args],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    said = json.loads(result.stdout.split("RULE ", 1)[1])
    tables = said["tables"]
    assert any(stem.startswith("results/social/") for stem in tables)  # both studies' tables
    assert "render_table" not in said["rules"] and said["wildcards"] == [] and said["local"]
    assert said["input"] == [f"{stem}.csv" for stem in tables]
    assert said["md"] == [f"{stem}.md" for stem in tables]
    assert said["tex"] == [f"{stem}.tex" for stem in tables]
    assert list(said["reported"]) == [f"{stem}.html" for stem in tables]
    assert said["params"] == {"titles": [table["label"] for table in tables.values()]}
    assert {f"{stem}.{ext}" for stem in tables for ext in ("html", "md", "tex")} <= set(said["all"])
    for stem, table in tables.items():
        flag = said["reported"][f"{stem}.html"]
        assert Path(flag["caption"]).resolve() == REPORT / f"{table['caption']}.rst", stem
        assert Path(flag["caption"]).is_file(), stem
        assert (flag["category"], flag["subcategory"]) == (table["category"], table["subcategory"]), stem
        assert flag["labels"] == {"table": table["label"]}, stem


def test_the_introduction_says_what_the_study_ran():
    """Issue 60: a study's report names what that study ran, not the demo's social benchmarks and
    "survey exports (or the simulated panel)" for every study."""
    pages = {}
    for name in (*CONFIGS, "friendbench_val.example.yaml"):
        config = load_config(ROOT / "config" / name)
        pages[name] = re.sub(
            r"\s+", " ", re.sub(r"<[^>]+>", "", snakemake_caption(REPORT / "workflow.rst", config))
        )
    demo, seamless, release, val = (pages[n] for n in (*CONFIGS, "friendbench_val.example.yaml"))
    assert "the familiarity benchmark and the social benchmarks (who / when / how, streaming)" in demo
    assert (
        "Who / when / how (SocialOmni-style)" in demo
        and "the demo's simulated panel (audio, text, video)" in demo
    )
    assert "Corpus and filters: the corpus (demo)" in demo
    for page in (seamless, release, val):
        assert "the familiarity benchmark alone (the social benchmarks were not run" in page
        assert "Who / when / how (SocialOmni-style)" not in page and "Streaming (Omni" not in page
        assert "simulated panel" not in page
    assert (
        "Corpus and filters: the corpus (seamless) is ingested (transcripts, or ASR where missing)"
        in seamless
    )
    assert "survey exports (audio, text, video) are imported" in seamless
    assert "Design: imported from the release FriendBench validation (data/friendbench/validation/" in release
    assert "the release's own model predictions are imported" in release
    assert "Corpus and filters" not in release and "filter funnel" not in release
    assert "no registry model." in val and "model predictions are imported" not in val
