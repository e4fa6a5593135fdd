"""Config validation against the workflow's JSON schema, with defaults filled in.

Errors name the key path (e.g. `filters.min_turns`) and what was expected, so a malformed
config fails before any job runs. A valid config's mappings are then sorted by key (lists keep
their order), so that reordering a config's keys changes nothing Snakemake compares.

The schema's defaults are a real study's. `check_study` then checks what the schema cannot
say: a real corpus needs its folder, a release design its metadata table, and a config that
mixes real inputs with demo or simulated ones (`input_kinds`) stops, naming the keys, unless
it sets `allow_simulated: true`. `check_inputs` (the workflow calls it at start) checks that the
inputs it names exist: the corpus folder and tables, each API entry's key in the environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import jsonschema
import yaml

DEFAULT_SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """The config breaks its schema; the message names the key."""


def _with_defaults(validator_class):
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = _copy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _copy(value):
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _describe(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(part) for part in error.absolute_path) or "<top level>"
    if error.validator == "additionalProperties":
        return f"{path}: {error.message} (allowed keys: {', '.join(sorted(error.schema['properties']))})"
    return f"{path}: {error.message}"


def sort_mappings(value):
    """Reorder every mapping inside `value` by key, in place (lists keep their order); returns `value`.

    Snakemake compares a rule's dict params by their repr, so a config whose keys are merely
    written in another order would otherwise rerun every rule that takes a section as params.
    In place, so that Snakemake's own `config` object (and every reference into it) is the
    one reordered. Keys are ordered by their text, then their type (YAML may mix 1 and "1")."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: (str(item[0]), type(item[0]).__name__))
        value.clear()
        for key, item in items:
            value[key] = sort_mappings(item)
    elif isinstance(value, list):
        for item in value:
            sort_mappings(item)
    return value


def safe_load_yaml(text: str):
    """yaml.safe_load through libyaml where PyYAML has it: the same objects, faster on the
    schema, which every snakemake call (every dry run) validates its config against
    (docs/performance.md#code)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def validate_config(config: dict, schema_path: str | os.PathLike = DEFAULT_SCHEMA) -> dict:
    """Fill defaults into `config` in place and raise ConfigError listing every violation.

    A valid config then has its mappings sorted by key, in place (`sort_mappings`): two configs
    that differ only in key order are the same config to every rule."""
    schema = safe_load_yaml(Path(schema_path).read_text())
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = "\n".join(f"  - {_describe(error)}" for error in errors)
        raise ConfigError(f"invalid config ({len(errors)} problem(s)):\n{lines}")
    return sort_mappings(config)


def input_kinds(config: Mapping) -> tuple[list[str], list[str]]:
    """(real inputs, demo or simulated inputs) of a validated config, each as `key=value`."""
    real, demo = [], []
    if config["study"]["design_source"] == "release":
        real.append("study.design_source=release")
    elif config["corpus"]["source"] == "demo":
        demo.append("corpus.source=demo")
    else:
        real.append(f"corpus.source={config['corpus']['source']}")
    ratings = config["ratings"]["source"]
    (demo if ratings == "simulated" else real).append(f"ratings.source={ratings}")
    if config["social"]["enabled"]:
        social = config["social"]["source"]
        (demo if social == "demo" else real).append(f"social.source={social}")
    if config["release"]["predictions"]["path"]:
        real.append("release.predictions.path")
    return real, demo


def check_study(config: Mapping) -> Mapping:
    """Raise ConfigError for what a validated config needs beyond its schema (module docstring)."""
    problems = []
    if config["study"]["design_source"] == "release":
        if not config["release"]["metadata"]:
            problems.append("release.metadata: required when study.design_source is release")
    elif config["corpus"]["source"] == "seamless" and not config["corpus"]["root"]:
        problems.append("corpus.root: required when corpus.source is seamless (the downloaded corpus folder)")
    social = config["social"]
    if social["enabled"] and social["source"] == "released":
        for key in ("socialomni_root", "duplexeval_root"):
            if not social[key]:
                problems.append(f"social.{key}: required when social.enabled and social.source is released")
    real, demo = input_kinds(config)
    if real and demo and not config["allow_simulated"]:
        problems.append(
            f"the config mixes real inputs ({', '.join(real)}) with demo or simulated ones "
            f"({', '.join(demo)}): set those keys to real sources, or set allow_simulated: true to run "
            "it anyway (the outputs' source columns then say which parts are simulated)"
        )
    if problems:
        lines = "\n".join(f"  - {problem}" for problem in problems)
        raise ConfigError(f"invalid config ({len(problems)} problem(s)):\n{lines}")
    return config


def check_inputs(
    config: Mapping, environ: Mapping[str, str] | None = None, benchmark_problems: Iterable[str] = ()
) -> Mapping:
    """Raise ConfigError, before any job, for the inputs a validated study names but cannot have:
    a corpus folder or metadata table that does not exist, a model or judge entry whose
    `api_key_env` is not set, and `benchmark_problems`, what a benchmark's own check found (the
    workflow passes `familiarity.release.release_problems`: this shared layer imports no
    benchmark). Each problem names its key and what to do."""
    environ = os.environ if environ is None else environ
    problems = []
    corpus = config["corpus"]
    if config["study"]["design_source"] == "pipeline" and corpus["source"] == "seamless" and corpus["root"]:
        root = Path(corpus["root"])
        if not root.is_dir():
            problems.append(
                f"corpus.root: {root} is not a folder: set it to your Seamless Interaction download "
                f"(the folder holding {corpus['label']}/ and interactions.csv, relationships.csv)"
            )
        else:
            if not (root / corpus["label"]).is_dir():
                found = sorted(p.name for p in root.iterdir() if p.is_dir())
                problems.append(
                    f"corpus.label: {root / corpus['label']} is not a folder: set corpus.label to the "
                    f"folder under corpus.root holding the recordings (found: {', '.join(found) or 'none'})"
                )
            for key, default in (
                ("interactions_csv", "interactions.csv"),
                ("relationships_csv", "relationships.csv"),
            ):
                path = Path(corpus[key] or root / default)
                if not path.is_file():
                    given = "" if corpus[key] else f" (corpus.{key} is empty: the default {{root}}/{default})"
                    problems.append(
                        f"corpus.{key}: {path} not found{given}: set corpus.{key} to the corpus's "
                        f"{default.removesuffix('.csv')} table"
                    )
        for key in ("gender_table", "participants_csv"):
            if corpus[key] and not Path(corpus[key]).is_file():
                problems.append(f'corpus.{key}: {corpus[key]} not found: fix the path, or set it to ""')
    problems += list(benchmark_problems)
    for where, entry in _api_entries(config):
        variable = entry["api_key_env"]
        if not environ.get(variable):
            problems.append(
                f"{where}.api_key_env: the environment variable {variable} of entry "
                f"{entry.get('name')!r} is not set: export {variable}=<your key> before running "
                "(keys never go in the config), or remove the entry"
            )
    if problems:
        lines = "\n".join(f"  - {problem}" for problem in problems)
        raise ConfigError(f"the study's inputs are not ready ({len(problems)} problem(s)):\n{lines}")
    return config


def _api_entries(config: Mapping) -> list[tuple[str, Mapping]]:
    """(key path, entry) of every registry entry the study runs that names an api_key_env."""
    found = []

    def walk(value, where: str) -> None:
        if isinstance(value, Mapping):
            if value.get("api_key_env"):
                found.append((where, value))
                return
            for key, item in value.items():
                walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{where}[{index}]")

    walk(config.get("models") or [], "models")
    if config["social"]["enabled"]:
        walk(config["social"], "social")
    return found


def load_config(path: str | os.PathLike, schema_path: str | os.PathLike = DEFAULT_SCHEMA) -> dict:
    config = safe_load_yaml(Path(path).read_text()) or {}
    return check_study(validate_config(config, schema_path))


def results_folder(path: str | os.PathLike) -> str:
    """The results folder of the study config at `path` (its `results`, or the schema's default)."""
    return validate_config(safe_load_yaml(Path(path).read_text()) or {})["results"]


if __name__ == "__main__":  # `python -m omnisocial.config CONFIG`: its results folder (make report)
    import sys

    print(results_folder(sys.argv[1]))
