"""Write the bytecode of the modules the workflow's jobs import, once, at setup (`make setup`).

    .venv/bin/python .ci/write_bytecode.py [MODULE ...]

Setup installs without compiling: compiling all ~24,000 installed modules took 69 s of a cold
setup's 86 on 2 cores, and the workflow imports a few thousand of them. Left to the first
import, that compilation would fall in a fresh clone's first demo (about 26 CPU-s: its judge
jobs alone spent 7 s each compiling transformers and sentence-transformers) and in its tests.

This imports what the package imports, with bytecode writing on (whatever
PYTHONDONTWRITEBYTECODE says), so the compiled files are there before the first job:

- every module of `omnisocial`;
- every other module its source imports, at top level or inside a function (parsed with `ast`,
  nothing listed by hand), and for `from X import Y` the name `Y` too: a lazy package such as
  transformers loads its submodule only then;
- the MODULEs named on the command line (the Makefile names Snakemake's own).

A module that is not installed (an optional extra such as whisperx) or fails to import is
skipped and named in the summary line; the script still exits 0: it only saves time.
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import subprocess
import sys
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "omnisocial"


def imports_of_source(source: Path = SOURCE) -> dict[str, set[str]]:
    """module -> the names its source imports from it ({} for `import X`), for every absolute
    import in `source`'s Python files but the standard library's and the package's own."""
    wanted: dict[str, set[str]] = {}
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    wanted.setdefault(alias.name, set())
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                wanted.setdefault(node.module, set()).update(a.name for a in node.names if a.name != "*")
    return {
        module: names
        for module, names in wanted.items()
        if module.split(".")[0] not in {*sys.stdlib_module_names, "omnisocial"}
    }


def package_modules(package: str = "omnisocial") -> list[str]:
    """Every module of the installed `package`, the package itself first."""
    root = importlib.import_module(package)
    return [package, *(info.name for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."))]


def write_bytecode(wanted: dict[str, set[str]]) -> tuple[list[str], dict[str, str]]:
    """Import every module of `wanted` and its names; (imported, {skipped module: why})."""
    sys.dont_write_bytecode = False
    imported: list[str] = []
    skipped: dict[str, str] = {}
    for module, names in wanted.items():
        try:
            loaded = importlib.import_module(module)
            for name in sorted(names):
                getattr(loaded, name, None)
        except Exception as error:  # an optional extra, or a module that needs what is absent here
            skipped[module] = f"{type(error).__name__}: {error}".splitlines()[0][:120]
        else:
            imported.append(module)
    return imported, skipped


def main(arguments: list[str]) -> int:
    """Import everything in this process and, in reverse order, in a second one: on two cores
    each compiles about half (a module the other has written is only loaded), in about three
    quarters of one process's time (27 s against 36 s). Both write each file atomically, as
    every import does."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # its import-time notices are not ours
    reverse = arguments[:1] == ["--reverse"]
    extra = arguments[1:] if reverse else arguments
    partner = None
    if not reverse and (os.cpu_count() or 1) > 1:
        partner = subprocess.Popen([sys.executable, __file__, "--reverse", *extra], stdout=subprocess.DEVNULL)
    started = time.perf_counter()
    before = set(sys.modules)
    wanted = {module: set() for module in package_modules()}
    wanted.update(imports_of_source())
    wanted.update({module: set() for module in extra})
    order = list(wanted)[::-1] if reverse else list(wanted)
    imported, skipped = write_bytecode({module: wanted[module] for module in order})
    if partner is not None:
        partner.wait()
    if not reverse:
        loaded = len(set(sys.modules) - before)
        print(
            f"bytecode: {len(imported)} modules imported ({loaded} loaded in all) in "
            f"{time.perf_counter() - started:.1f} s; not here: "
            + (", ".join(f"{module} ({why})" for module, why in sorted(skipped.items())) or "none")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
