"""One line, not a traceback, for a target written after `--configfile` (issue 60).

`--configfile` takes several files, so `snakemake --cores all --configfile config/my_study.yaml
survey_materials` reads `survey_materials` as a config file, and Snakemake ends in a raw
FileNotFoundError traceback before it reads the Snakefile (no hook of the workflow runs that
early). `make setup` installs a `.pth` file into the venv (`install`) that calls `check()` when
a `snakemake` process starts (other processes import nothing): a word after `--configfile` that
is no file and reads as a target (no folder, no config suffix) ends the process with one line
naming the fix, as the README explains it.
"""

from __future__ import annotations

import os
import sys

PTH_NAME = "omnisocial_snakemake_hint.pth"
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
EXIT_USAGE = 2


def misplaced_target(argv: list[str], exists=os.path.exists) -> str | None:
    """The first word that `--configfile` swallows and that reads as a target, or None."""
    taking = False
    for arg in argv:
        if arg.startswith("-"):
            taking = arg == "--configfile" or arg == "--configfiles"
            continue
        if taking and not exists(arg) and "/" not in arg and not arg.endswith(CONFIG_SUFFIXES):
            return arg
    return None


def message(argv: list[str], target: str) -> str:
    files = [a for a in argv if a != target]
    return (
        f"snakemake: {target!r} after --configfile is read as a config file (--configfile takes "
        f"several): name the target first (snakemake {target} {' '.join(files)}), or write "
        "--configfile=FILE"
    )


def check(argv: list[str] | None = None) -> None:
    """In a snakemake process, end it with one line when `misplaced_target` finds a word."""
    argv = sys.argv if argv is None else argv
    if not argv or os.path.basename(argv[0]) != "snakemake":
        return
    target = misplaced_target(argv[1:])
    if target is not None:
        print(message(argv[1:], target), file=sys.stderr, flush=True)
        os._exit(EXIT_USAGE)  # Python is still starting (a .pth file): no exception may leave it


def install(site_packages: str | None = None):
    """Write the `.pth` file that runs `check()` at start into the venv's site-packages; its path."""
    import sysconfig
    from pathlib import Path

    folder = Path(site_packages or sysconfig.get_paths()["purelib"])
    path = folder / PTH_NAME
    # one line, run by site at every start: other processes import nothing (os and sys are loaded)
    path.write_text(
        'import os, sys; os.path.basename((getattr(sys, "argv", None) or [""])[0]) == "snakemake" '
        'and __import__("omnisocial.snakemake_hint").snakemake_hint.check()\n'
    )
    return path


if __name__ == "__main__":  # make setup: python -m omnisocial.snakemake_hint
    print(f"installed {install()}")
