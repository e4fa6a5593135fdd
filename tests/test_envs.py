"""Static honesty check for `--use-conda`: each rule's env lists what its code imports.

Conda channels cannot be reached on the development machines, so instead of building the
envs we read every rule's script, follow its `omnisocial` imports through the package
(lazy imports inside functions included), and require each third-party distribution and
each external program it calls to be pinned in the rule's env file.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
RULES = sorted((ROOT / "workflow" / "rules").rglob("*.smk"))
# Where conda-forge names a distribution differently from PyPI.
CONDA_NAMES = {"torch": "pytorch", "soundfile": "pysoundfile"}
# Programs the package runs as subprocesses, and the conda package that brings each.
PROGRAMS = {"ffmpeg": "ffmpeg", "ffprobe": "ffmpeg", "espeak-ng": "espeak-ng"}


def _rule_blocks():
    for path in RULES:
        text = path.read_text()
        for match in re.finditer(r"^\s*rule (\w+):\n(.*?)(?=^\s*rule \w+:|\Z)", text, re.M | re.S):
            name, body = match.groups()
            conda = re.search(r'conda:\s*\n\s*"([^"]+)"', body)
            script = re.search(r'script:\s*\n\s*"([^"]+)"', body)
            script = script and script.group(1)
            if re.search(r"conda:\s*\n\s*model_conda_env\(", body):
                # a model rule: every env a registry entry's family can pick (FAMILY_ENVS)
                for env in MODEL_ENVS:
                    yield path, f"{name}[{env}]", str(ROOT / "envs" / env), script
                continue
            yield path, name, conda and conda.group(1), script


def _model_envs() -> tuple[str, ...]:
    sys.path.insert(0, str(SRC))
    from omnisocial.models.entries import DEFAULT_MODEL_ENV, FAMILY_ENVS

    return (DEFAULT_MODEL_ENV, *sorted(set(FAMILY_ENVS.values())))


MODEL_ENVS = _model_envs()
# What a family's env brings beyond the code's own imports (loaded by transformers, not imported).
FAMILY_EXTRAS = {"omni.yaml": {"torchvision"}, "voxtral.yaml": {"mistral-common", "soxr"}}
# Envs whose pins are those of a family venv's requirement file, not the test venv's.
FAMILY_REQUIREMENTS = {"omni.yaml": "omni.txt", "voxtral.yaml": "voxtral.txt"}


def _module_path(module: str) -> Path | None:
    base = SRC.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """Top-level third-party names and omnisocial modules imported anywhere in `path`."""
    tree = ast.parse(path.read_text())
    external, internal = set(), set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif _loads_by_name(node):  # importlib.import_module("x") / resources.files("x")
            names = [node.args[0].value]
        for name in names:
            if name.split(".")[0] == "omnisocial":
                internal.add(name)
            elif name.split(".")[0] not in sys.stdlib_module_names:
                external.add(name.split(".")[0])
    return external, internal


def _loads_by_name(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "files") and isinstance(node.args[0].value, str)


def _programs(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        PROGRAMS[node.value]
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in PROGRAMS
    }


@cache
def _closure(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    external, programs, seen, todo = set(), set(), set(), [path]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        found, internal = _imports(current)
        external |= found
        programs |= _programs(current)
        for module in internal:
            parts = module.split(".")
            for depth in range(1, len(parts) + 1):  # parent packages run their __init__ too
                resolved = _module_path(".".join(parts[:depth]))
                if resolved is not None:
                    todo.append(resolved)
    return frozenset(external), frozenset(programs)


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def _installed_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distribution(import_name: str) -> str:
    dists = _installed_distributions().get(import_name)
    # Not installed here (whisperx lives only in envs/asr.yaml): the import name is the name.
    return _normalise(dists[0] if dists else import_name)


def _env_packages(env_file: Path) -> tuple[dict[str, str], dict[str, str]]:
    env = yaml.safe_load(env_file.read_text())
    assert env["channels"][0] == "conda-forge", f"{env_file.name}: conda-forge must come first"
    conda, pip = {}, {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for line in dep.get("pip", []):
                name, _, version = line.partition("==")
                assert version, f"{env_file.name}: pip entry {line!r} is not pinned exactly"
                pip[_normalise(name)] = version
        else:
            name, _, version = dep.partition("=")
            assert version and not version.startswith(("=", "<", ">")), (
                f"{env_file.name}: {dep!r} needs an exact pin"
            )
            conda[_normalise(name)] = version
    return conda, pip


RULE_CASES = [case for case in _rule_blocks() if case[3]]


def test_every_rule_has_an_env_and_a_script():
    assert RULE_CASES, "no rules found"
    for path, name, conda, _script in _rule_blocks():
        assert conda, f"{path.name}: rule {name} has no conda env"


@pytest.mark.parametrize(("smk", "rule", "conda", "script"), RULE_CASES, ids=[c[1] for c in RULE_CASES])
def test_rule_env_lists_what_its_code_imports(smk, rule, conda, script):
    env_file = (smk.parent / conda).resolve()
    script_file = (smk.parent / script).resolve()
    conda_pkgs, pip_pkgs = _env_packages(env_file)
    external, programs = _closure(script_file)
    missing = []
    for import_name in sorted(external):
        dist = _distribution(import_name)
        if dist not in pip_pkgs and CONDA_NAMES.get(dist, dist) not in conda_pkgs:
            missing.append(f"{dist} (import {import_name})")
    missing += [f"{program} (program)" for program in sorted(programs) if program not in conda_pkgs]
    missing += sorted(FAMILY_EXTRAS.get(env_file.name, set()) - set(pip_pkgs))
    assert not missing, f"rule {rule}: {env_file.name} lacks {', '.join(missing)}"


# whisperx 3.8.6 requires torch~=2.8.0; the test venv runs torch 2.13 without whisperx.
PIN_EXCEPTIONS = {"asr.yaml": {"torch", "torchaudio", "torchvision"}}


def test_env_pins_match_the_test_venv_where_both_use_pypi():
    """A pip pin in an env should be the version the tests ran against."""
    for env_file in sorted((ROOT / "envs").glob("*.yaml")):
        if env_file.name in FAMILY_REQUIREMENTS:
            continue  # test_family_env_pins_match_their_venv
        _conda, pip = _env_packages(env_file)
        for name, version in pip.items():
            if name in PIN_EXCEPTIONS.get(env_file.name, ()):
                continue
            try:
                installed = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue  # e.g. whisperx lives in envs/asr.yaml only
            assert installed.split("+")[0] == version, (
                f"{env_file.name}: {name}=={version}, venv has {installed}"
            )


def _requirements(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned exactly"
            pins[_normalise(name.split("[")[0])] = version
    return pins


@pytest.mark.parametrize(("env", "requirements"), sorted(FAMILY_REQUIREMENTS.items()))
def test_family_env_pins_match_their_venv(env, requirements):
    """A family env pins what its venv (make venv-omni / venv-voxtral) runs, package for package."""
    _conda, pip = _env_packages(ROOT / "envs" / env)
    pins = _requirements(ROOT / "requirements" / requirements)
    wrong = {
        name: (version, pins.get(name))
        for name, version in pip.items()
        if pins.get(name, "").split("+")[0] != version
    }
    assert not wrong, f"{env} vs requirements/{requirements}: {wrong}"


def test_model_rules_pick_the_env_of_the_entrys_family():
    from omnisocial.models.entries import model_env_file

    def entry(family, backend="transformers"):
        return {"backend": backend, "options": {"family": family}}

    assert model_env_file(entry("qwen2_5_omni")) == "omni.yaml"
    assert model_env_file(entry("voxtral")) == "voxtral.yaml"
    assert model_env_file(entry("qwen2_audio")) == "inference.yaml"
    assert model_env_file(entry("chat")) == "inference.yaml"
    assert model_env_file({"backend": "openai", "model": "gpt-4o"}) == "inference.yaml"
    for env in MODEL_ENVS:
        assert (ROOT / "envs" / env).is_file()
