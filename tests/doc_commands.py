"""The shell commands shown in README.md and docs/ (issue 49), for the tests that run them.

A command is a line of a fenced block whose language is bash, sh, shell or console (a line ending
in `\\` continues on the next; a `# comment` is not part of it), or an inline code span of prose
that starts with `snakemake ` or `omnisocial ` and passes an option (`snakemake --cores all`; not
a name such as `omnisocial rating-server`, nor a template with `<...>`).

A command a test does not run is marked as an illustration with an HTML comment, which the
rendered page does not show: `<!-- illustration: why -->` on the line before a fenced block marks
the block; on the line of an inline command, or the line before it, it marks that command.
docs/development.md#doc-commands describes the convention.

A command runs as a newcomer types it (issue 60): in a clean shell (`run_in_clean_shell`: only HOME
and a minimal PATH, nothing the test adds) that has done only the setup the README shows
(`SETUP`, the activation of the project's venv), from a folder laid out like the checkout.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
MARK = re.compile(r"<!--\s*illustration:\s*(?P<why>.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<language>[\w-]*)\s*$")
INLINE = re.compile(r"`((?:snakemake|omnisocial) [^`]*)`")
# What a new terminal has done before a documented command: the README's activation step (a
# test checks the README shows it), in a shell whose PATH is the system's alone.
SETUP = ". .venv/bin/activate"
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class DocCommand:
    page: str  # README.md, docs/real-study.md, ...
    line: int
    text: str  # the command as written, without its comment
    illustration: str | None  # why it is not run (the mark's text), or None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text)


def pages(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _strip_comment(line: str) -> str:
    """The command without its `# comment` (as bash reads it: a `#` starting a word; the pages
    quote no `#`)."""
    return re.sub(r"(^|\s)#.*$", "", line).strip()


def page_commands(path: Path, root: Path = REPO) -> list[DocCommand]:
    name = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[DocCommand] = []
    number = 0
    while number < len(lines):
        line = lines[number]
        fence = FENCE.match(line)
        if fence:
            language = fence.group("language")
            previous = lines[number - 1] if number else ""
            mark = MARK.search(previous)
            end = number + 1
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            if language in SHELL_LANGUAGES:
                found += _block_commands(name, lines, number + 1, end, mark.group("why") if mark else None)
            number = end + 1
            continue
        for match in INLINE.finditer(line):
            text = match.group(1).strip()
            if "<" in text or not re.search(r"\s-", text):
                continue  # a name or a template, not a command
            mark = MARK.search(line) or (MARK.search(lines[number - 1]) if number else None)
            found.append(DocCommand(name, number + 1, text, mark.group("why") if mark else None))
        number += 1
    return found


def _block_commands(page: str, lines: list[str], start: int, end: int, why: str | None) -> list[DocCommand]:
    found = []
    pending, first = "", start
    for number in range(start, end):
        raw = lines[number].rstrip()
        if raw.lstrip().startswith("$ "):  # a console prompt
            raw = raw.lstrip()[2:]
        if not pending:
            first = number
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        text = _strip_comment(pending + raw)
        pending = ""
        if text:
            found.append(DocCommand(page, first + 1, " ".join(text.split()), why))
    return found


def doc_commands(root: Path = REPO) -> list[DocCommand]:
    return [command for path in pages(root) for command in page_commands(path, root)]


def find(text: str, root: Path = REPO) -> DocCommand:
    """The one documented command with exactly this text (a test runs what the page shows)."""
    matches = [command for command in doc_commands(root) if command.text == text]
    assert matches, f"no page shows the command {text!r} any more: update the test that runs it"
    return matches[0]


def documented(page: str, pattern: str, root: Path = REPO) -> DocCommand:
    """The command of `page` matching the regular expression `pattern` (the first one)."""
    for command in page_commands(root / page, root):
        if re.fullmatch(pattern, command.text):
            return command
    raise AssertionError(f"{page} shows no command matching {pattern!r} any more")


# --- what every command is checked for, run or not ------------------------------------------------

# the file a page tells the reader to make (a copy of an example config): it stands for that example
COPIES = {"config/my_study.yaml": "config/seamless.example.yaml"}
RULE = re.compile(r"^(?:rule|checkpoint)\s+(\w+)\s*:", re.M)
MAKE_TARGET = re.compile(r"^([\w.%/-]+(?:[ \t]+[\w.%/-]+)*)[ \t]*:(?!=)", re.M)


def workflow_rules(root: Path = REPO) -> set[str]:
    files = [root / "Snakefile", *sorted((root / "workflow" / "rules").rglob("*.smk"))]
    return {name for path in files for name in RULE.findall(path.read_text(encoding="utf-8"))}


def make_targets(root: Path = REPO) -> set[str]:
    text = (root / "Makefile").read_text(encoding="utf-8")
    return {target for names in MAKE_TARGET.findall(text) for target in names.split()}


def problems(command: DocCommand, root: Path = REPO) -> list[str]:
    """How the command fails to read as its program reads it: options its parser rejects, a
    config file that does not exist (or a target read as one), a target no rule or recipe makes."""
    argv = command.argv
    while argv and re.fullmatch(r"\w+=.*", argv[0]):  # VAR=value before the program
        argv = argv[1:]
    if not argv:
        return []
    program, args = argv[0], argv[1:]
    try:
        if program == "snakemake":
            return _snakemake_problems(args, root)
        if program == "omnisocial":
            from omnisocial.cli import build_parser

            build_parser(next((a for a in args if not a.startswith("-")), None)).parse_args(args)
        if program == "make":
            unknown = [
                t for t in args if not t.startswith("-") and "=" not in t and t not in make_targets(root)
            ]
            return [f"make has no target {t!r}" for t in unknown]
    except SystemExit:
        return [f"{program} rejects its arguments (see the usage above)"]
    return []


def _snakemake_problems(args: list[str], root: Path) -> list[str]:
    from snakemake.cli import get_argument_parser

    parsed = get_argument_parser().parse_args(args)
    found = []
    for path in map(str, parsed.configfile or []):
        if not (root / COPIES.get(path, path)).is_file():
            found.append(
                f"--configfile {path}: no such file"
                + (
                    " (a target after --configfile is read as a config file: name it first)"
                    if "/" not in path
                    else ""
                )
            )
    rules = workflow_rules(root)
    for target in map(str, parsed.targets or []):
        if "/" not in target and "." not in target and target not in rules:
            found.append(f"no rule {target!r}")
    return found


# --- running a command as a newcomer types it -------------------------------------------------------


def clean_env() -> dict[str, str]:
    """A new terminal's environment as far as a command can tell: HOME and the system PATH."""
    return {"HOME": os.environ.get("HOME", "/root"), "PATH": CLEAN_PATH}


def run_in_clean_shell(
    command: str, cwd: Path, setup: str | None = SETUP, timeout: float = 900, **kwargs
) -> subprocess.CompletedProcess:
    """`command` run by bash in `cwd` with `clean_env()`, after `setup` (None: nothing done before)."""
    script = command if setup is None else f"{setup}\n{command}"
    return subprocess.run(
        ["/bin/bash", "-c", script],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def start_in_clean_shell(command: str, cwd: Path, setup: str | None = SETUP, **kwargs) -> subprocess.Popen:
    """`run_in_clean_shell` for a command that runs until stopped (a server): `exec` keeps its pid."""
    script = f"exec {command}" if setup is None else f"{setup}\nexec {command}"
    return subprocess.Popen(["/bin/bash", "-c", script], cwd=cwd, env=clean_env(), **kwargs)
