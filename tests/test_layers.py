"""The house (issue 21): imports point down, from the command line to the benchmarks to the shared layers.

Every module under src/omnisocial is parsed (ast, nothing imported) and each of its imports
checked, the ones inside functions and relative ones included:

- the command line (`omnisocial.cli`) is the top: it may import anything, and nothing imports it
  (nor any benchmark's `cli` module, which only `omnisocial.cli` loads);
- a benchmark package (familiarity, socialomni, duplexeval) imports the shared layers and
  itself, never another benchmark;
- everything else is a shared layer (found by listing the package, so a new module is covered:
  stats, media, models, judges, figures, tables, io, importing, config, workflow, summary,
  demo_kit, prompt_templates, errors, slurm, streaming, processes, item_reasons, settings,
  docs_reference, paper, preflight, snakemake_hint) and imports neither the command line nor a benchmark.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "omnisocial"
REPO = PACKAGE.parents[1]
BENCHMARKS = ("familiarity", "socialomni", "duplexeval")
COMMAND_LINE = "cli"
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()  # none left: judges/llm.py takes prepared specs (issue 18)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, root: Path) -> set[str]:
    """Every module (or module attribute) `path` imports, relative imports resolved to full names."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            # `from omnisocial import cli` imports the module omnisocial.cli
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def layer(module: str) -> str:
    """'cli', 'benchmark:<name>' or 'shared' of a module of the package."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top == COMMAND_LINE:
        return "cli"
    if top in BENCHMARKS:
        return f"benchmark:{top}"
    return "shared"


def violations(root: Path = PACKAGE) -> list[tuple[str, str]]:
    """(importing module, forbidden target): a command line module or another layer's benchmark."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        here = layer(module)
        if here == "cli":
            continue
        for target in imported_names(path, root):
            parts = target.split(".")
            if parts[0] != root.name or len(parts) < 2:
                continue
            if "cli" in parts[1:]:  # omnisocial.cli, omnisocial.<benchmark>.cli or a name in one
                found.add((module, ".".join(parts[: parts.index("cli", 1) + 1])))
            elif parts[1] in BENCHMARKS and here != f"benchmark:{parts[1]}":
                found.add((module, f"{root.name}.{parts[1]}"))
    return sorted(found)


def shared_layers(root: Path = PACKAGE) -> set[str]:
    tops = {p.stem for p in root.glob("*.py")}
    tops |= {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    return {top for top in tops if top not in (*BENCHMARKS, COMMAND_LINE, "__init__", "__main__")}


def test_the_shared_layers_are_the_modules_below_the_benchmarks():
    expected = {"stats", "media", "models", "judges", "figures", "tables", "io", "importing"}
    expected |= {"config", "workflow", "summary", "demo_kit", "prompt_templates", "errors", "slurm"}
    expected |= {"streaming", "processes", "item_reasons", "docs_reference", "explorer"}
    expected |= {"settings", "paper", "preflight", "snakemake_hint"}
    assert shared_layers() == expected
    assert not (PACKAGE / "corpus").exists()  # the empty left-over package (familiarity/corpus is the one)


def test_no_arrow_up_to_the_command_line_or_a_benchmark():
    found = violations()
    unexpected = [(m, t) for m, t in found if (m, t) not in KNOWN_EXCEPTIONS]
    assert not unexpected, "\n".join(f"{m} imports {t}" for m, t in unexpected)
    # an exception nobody needs any more is taken out of the list
    fixed = KNOWN_EXCEPTIONS - set(found)
    assert not fixed, f"fixed: remove {fixed} from KNOWN_EXCEPTIONS"


def test_the_glmm_internals_live_in_the_glmm_package():
    stats = PACKAGE / "stats"
    assert not (stats / "_glmm_kernel.py").exists() and not (stats / "_mcmc.py").exists()
    assert (stats / "glmm" / "_kernel.py").is_file() and (stats / "glmm" / "_mcmc.py").is_file()


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_walk_finds_lazy_relative_and_attribute_imports(tmp_path):
    """A small package shaped like this one: every kind of arrow up is found, the allowed ones are not."""
    root = tmp_path / "omnisocial"
    for package in ("", "stats/", "familiarity/", "socialomni/", "duplexeval/"):
        _write(root, f"{package}__init__.py", "")
    _write(root, "cli.py", "from omnisocial.familiarity import x\nfrom .duplexeval.cli import register\n")
    _write(root, "errors.py", "")
    _write(root, "stats/rasch.py", "def run():\n    from ..cli import InputError\n")
    _write(root, "stats/glmm.py", "from omnisocial import cli, errors\nimport omnisocial.socialomni.cli\n")
    _write(root, "stats/tests.py", "from . import glmm\nfrom omnisocial.errors import InputError\n")
    _write(root, "io.py", "if True:\n    from omnisocial.familiarity.contracts import TRIALS\n")
    _write(root, "familiarity/inference.py", "from ..stats import glmm\nfrom .contracts import TRIALS\n")
    _write(root, "socialomni/cli.py", "from omnisocial.cli import EXIT_OK\nfrom .parsing import PARSERS\n")
    _write(root, "duplexeval/judged.py", "from omnisocial.socialomni.parsing import PARSERS\n")
    _write(root, "duplexeval/cli.py", "from omnisocial.duplexeval import judged\n")
    assert violations(root) == [
        ("omnisocial.duplexeval.judged", "omnisocial.socialomni"),
        ("omnisocial.io", "omnisocial.familiarity"),
        ("omnisocial.socialomni.cli", "omnisocial.cli"),
        ("omnisocial.stats.glmm", "omnisocial.cli"),
        ("omnisocial.stats.glmm", "omnisocial.socialomni.cli"),
        ("omnisocial.stats.rasch", "omnisocial.cli"),
    ]
    assert shared_layers(root) == {"errors", "io", "stats"}


@pytest.mark.parametrize(
    "module,layer_name",
    [
        ("omnisocial.cli", "cli"),
        ("omnisocial.duplexeval.cli", "benchmark:duplexeval"),
        ("omnisocial.stats.glmm._kernel", "shared"),
        ("omnisocial.errors", "shared"),
        ("omnisocial", "shared"),
    ],
)
def test_layers(module, layer_name):
    assert layer(module) == layer_name


def rule_file_imports() -> set[str]:
    """The omnisocial modules the Snakefile and rule files import while Snakemake parses."""
    found = set()
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").rglob("*.smk"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("from", "import") and words[1].startswith("omnisocial"):
                found.add(words[1])
    return found


def test_the_workflow_parse_imports_no_scipy():
    """Every job parses the whole workflow: the modules the rule files import stay scipy-free
    (scipy.stats alone costs about a second per job), as release.prediction_files does."""
    import subprocess
    import sys

    modules = sorted(rule_file_imports())
    assert "omnisocial.familiarity.release" in modules and "omnisocial.config" in modules
    show = "print(sorted(m for m in sys.modules if m.startswith('scipy')))"
    code = f"import sys; import {', '.join(modules)}; {show}"
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert shown.stdout.strip() == "[]", shown.stdout[:500]
