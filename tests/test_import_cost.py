"""Workflow jobs import only the heavy libraries they use (issue 21).

Each Snakemake `script:` job is a fresh Python process, so a module-level `from scipy import
stats` (~1.3 s CPU; scipy.signal loads it too, ~1.6 s) is paid by every job whose script imports
a module that imports it, whether the job calls it or not. The package imports scipy.stats,
scipy.signal, scipy.optimize, scipy.ndimage, statsmodels, torch, numba... inside the functions
that use them; this test pins that down for every package module a workflow script imports.

One subprocess imports what every job imports (numpy, pandas, omnisocial.workflow, io, tables),
checks that none of it is heavy, then forks a child per module: each child imports its module
and reports which heavy modules are loaded.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
HEAVY = (
    "scipy.stats",
    "scipy.signal",
    "scipy.optimize",
    "scipy.ndimage",
    "statsmodels",
    "matplotlib",
    "sklearn",
    "torch",
    "numba",
    "pymc",
    "arviz",
    "bambi",
    "sentence_transformers",
)
BASE = ("numpy", "pandas", "omnisocial.io", "omnisocial.tables", "omnisocial.workflow")
FIGURES = {"matplotlib"}  # the figure modules draw with matplotlib (figures/style.py sets it up)

# Every package module a workflow script imports at its top (test_the_list_covers_every_script
# keeps it complete), with the heavy modules it may load on import and why. Empty: none.
ALLOWED: dict[str, set[str]] = {
    "omnisocial.demo_kit": set(),  # scipy.signal only in espeak, when it resamples
    "omnisocial.duplexeval.agreement": set(),
    "omnisocial.duplexeval.baselines": set(),
    "omnisocial.duplexeval.contracts": set(),
    "omnisocial.duplexeval.demo": set(),
    "omnisocial.duplexeval.description": set(),
    "omnisocial.duplexeval.figures": FIGURES,
    "omnisocial.duplexeval.importers": set(),
    "omnisocial.duplexeval.judge_requests": set(),
    "omnisocial.duplexeval.judged": set(),
    "omnisocial.duplexeval.metrics": set(),
    "omnisocial.duplexeval.reminders": set(),
    "omnisocial.duplexeval.streamed": set(),
    "omnisocial.familiarity.analysis": set(),  # scipy.stats, numba: inside the fits
    "omnisocial.familiarity.asr": set(),
    "omnisocial.familiarity.clips": set(),
    "omnisocial.familiarity.contracts": set(),
    "omnisocial.familiarity.corpus.demo": set(),
    "omnisocial.familiarity.corpus.seamless": set(),
    "omnisocial.familiarity.figures": FIGURES,
    "omnisocial.familiarity.figures.diagnostics": FIGURES,
    "omnisocial.familiarity.figures.overview": FIGURES,
    "omnisocial.familiarity.filters": set(),
    "omnisocial.familiarity.inference": set(),
    "omnisocial.familiarity.ratings": set(),
    "omnisocial.familiarity.ratings.collect": set(),
    "omnisocial.familiarity.ratings.design": set(),
    "omnisocial.familiarity.ratings.experiment": set(),
    "omnisocial.familiarity.ratings.frozen": set(),
    "omnisocial.familiarity.ratings.jatos": set(),
    "omnisocial.familiarity.ratings.panel": set(),
    "omnisocial.familiarity.release": set(),
    "omnisocial.familiarity.sampling": set(),
    "omnisocial.familiarity.signals": set(),
    "omnisocial.familiarity.stimuli": set(),
    "omnisocial.familiarity.transcripts": set(),
    "omnisocial.figures.style": FIGURES,
    "omnisocial.importing": set(),
    "omnisocial.io": set(),
    "omnisocial.item_reasons": set(),
    "omnisocial.judges.calibration": set(),
    "omnisocial.judges.embedding": set(),  # sentence_transformers: only when a model is loaded
    "omnisocial.judges.lexical": set(),
    "omnisocial.judges.llm": set(),
    "omnisocial.judges.replies": set(),
    "omnisocial.models.registry": set(),  # torch: only in the local transformers backend
    "omnisocial.models.runner": set(),
    "omnisocial.paper": set(),
    "omnisocial.settings": set(),
    "omnisocial.socialomni.baselines": set(),
    "omnisocial.socialomni.contracts": set(),
    "omnisocial.socialomni.demo": set(),
    "omnisocial.socialomni.figures": FIGURES,
    "omnisocial.socialomni.how": set(),
    "omnisocial.socialomni.importers": set(),
    "omnisocial.socialomni.profile": set(),
    "omnisocial.socialomni.requests": set(),
    "omnisocial.socialomni.runs": set(),
    "omnisocial.socialomni.stream": set(),
    "omnisocial.socialomni.when": set(),
    "omnisocial.socialomni.who": set(),
    "omnisocial.streaming": set(),
    "omnisocial.streaming.media": set(),
    "omnisocial.summary": set(),
    "omnisocial.explorer": set(),  # the results explorer (rule explorer): json and the io layer
    "omnisocial.tables": set(),
    "omnisocial.workflow": set(),
}

PROBE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
heavy, modules, base = json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
for module in base:  # what every job imports, once, before the forks
    __import__(module)
base = sorted(m for m in heavy if m in sys.modules)
found = {}
for module in modules:
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        try:
            __import__(module)
            out = sorted(m for m in heavy if m in sys.modules)
        except Exception as error:
            out = {"error": repr(error)}
        os.write(write, json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        found[module] = json.loads(pipe.read())
    os.wait()
print(json.dumps({"base": base, "found": found}))
"""


def script_imports() -> set[str]:
    """The omnisocial modules the workflow scripts import at their top level."""
    names = set()
    for path in sorted(SCRIPTS.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("omnisocial"):
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names if a.name.startswith("omnisocial"))
    return names


def test_the_list_covers_every_script():
    assert script_imports() == set(ALLOWED)


@pytest.fixture(scope="module")
def loaded() -> dict:
    command = [sys.executable, "-c", PROBE, str(REPO / "src"), json.dumps(HEAVY), json.dumps(sorted(ALLOWED))]
    command.append(json.dumps(BASE))
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(result.stdout)


@pytest.mark.heavy  # 5 CPU-s
def test_what_every_job_imports_loads_no_heavy_module(loaded):
    assert loaded["base"] == []


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_a_script_module_loads_only_the_heavy_modules_it_needs(loaded, module):
    found = loaded["found"][module]
    assert isinstance(found, list), found  # an import error, reported by the child
    assert set(found) <= ALLOWED[module], f"{module} loads {sorted(set(found) - ALLOWED[module])} on import"


def test_the_probe_sees_a_heavy_import(loaded):
    """The figure modules do load matplotlib: the probe detects a heavy module when there is one."""
    assert "matplotlib" in loaded["found"]["omnisocial.figures.style"]


def test_sdt_normal_quantile_is_norm_ppf_bit_for_bit():
    """sdt and wilson_interval take scipy.special.ndtri for stats.norm.ppf (no scipy.stats on import):
    the same bits on every log-linear rate (k + 0.5) / (n + 1), n < 2000, and on confidence levels."""
    from scipy import stats
    from scipy.special import ndtri

    rates = np.concatenate([(np.arange(n + 1) + 0.5) / (n + 1) for n in range(2000)])
    levels = 0.5 + np.linspace(0.001, 0.999, 999) / 2
    for q in (rates, levels):
        assert np.array_equal(ndtri(q).view(np.int64), stats.norm.ppf(q).view(np.int64))
    assert type(ndtri(0.975)) is type(stats.norm.ppf(0.975))
