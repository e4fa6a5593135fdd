""".ci/write_bytecode.py (make setup): which modules it finds in the package's source, and that
importing them writes their bytecode even where PYTHONDONTWRITEBYTECODE is set."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "write_bytecode.py"
_spec = importlib.util.spec_from_file_location("write_bytecode", SCRIPT)
write_bytecode = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(write_bytecode)


def test_the_source_scan_finds_lazy_and_top_level_imports_but_not_the_standard_library():
    wanted = write_bytecode.imports_of_source()
    # imported inside functions (judges/embedding.py, stats/glmm, the ASR path)
    assert {"transformers", "pymc", "scipy.signal", "faster_whisper"} <= set(wanted)
    assert {"pandas", "numpy", "matplotlib"} <= {name.split(".")[0] for name in wanted}
    assert not {"json", "os", "__future__", "concurrent.futures"} & set(wanted)
    assert not [name for name in wanted if name.split(".")[0] == "omnisocial"]


def test_from_imports_keep_their_names_so_a_lazy_package_loads_the_submodule(tmp_path):
    source = tmp_path / "pkg"
    source.mkdir()
    (source / "a.py").write_text("def f():\n    from transformers import AutoModel, AutoTokenizer\n")
    (source / "b.py").write_text("import yaml\nfrom . import a\nfrom pandas import *\n")
    assert write_bytecode.imports_of_source(source) == {
        "transformers": {"AutoModel", "AutoTokenizer"},
        "yaml": set(),
        "pandas": set(),
    }


def test_importing_writes_bytecode_where_the_environment_forbids_it_and_names_what_is_missing(tmp_path):
    package = tmp_path / "probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "lazy.py").write_text("import json\n")
    program = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); sys.path.insert(0, {str(SCRIPT.parent)!r})\n"
        "import write_bytecode as w\n"
        "imported, skipped = w.write_bytecode({'probe_pkg.lazy': set(), 'probe_pkg': {'VALUE'}, "
        "'no_such_module_here': set()})\n"
        "print(sorted(imported), sorted(skipped), skipped['no_such_module_here'])\n"
    )
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "['probe_pkg', 'probe_pkg.lazy'] ['no_such_module_here'] "
        "ModuleNotFoundError: No module named 'no_such_module_here'"
    )
    compiled = sorted(path.name.split(".")[0] for path in (package / "__pycache__").glob("*.pyc"))
    assert compiled == ["__init__", "lazy"]
