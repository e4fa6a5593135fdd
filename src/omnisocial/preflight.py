"""Start-time checks of the engines and devices a study configures (issue 60).

A study that asks for whisperx ASR on `cuda` used to fail after ingest, in its transcription
job. The workflow's `onstart` (workflow/rules/common.smk) calls `check_engines` before any job
runs, with what only the run knows (`Runtime`: --use-conda, whether jobs run on this machine, the
jobs that will run), and stops with every problem, each naming its key and the fix.

- `asr.engine` (when `transcribe_missing` will run): under --use-conda envs/asr.yaml holds both
  engines. Without conda, whisperx is found in this venv or in `.venv-asr` (`make venv-asr`; the
  rule hands the transcription to it, `omnisocial.familiarity.asr.transcribe_in_venv`), and
  faster-whisper in this venv (`make setup`).
- a local `transformers` model entry (when its jobs will run): without conda, its family's own
  package must be in the running venv (Qwen2.5-Omni: torchvision, `make venv-omni`; Voxtral:
  mistral-common, `make venv-voxtral`; under --use-conda envs/omni.yaml, envs/voxtral.yaml), and
  `options.device: cuda` needs a GPU this machine shows when jobs run here.
- `asr.device`: `cuda` needs an NVIDIA GPU that this machine shows, when jobs run here (a cluster
  job asks for one: corpus.smk's gpu resource); `.venv-asr` holds the lock's CPU build of torch,
  so it runs on the CPU only; CTranslate2 (both engines) has no float16 on the CPU
  (`asr.compute_type`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

from omnisocial.config import ConfigError

ASR_RULE = "transcribe_missing"
CPU_FIX = "set asr.device: cpu (with asr.compute_type: int8)"


def module_available(name: str) -> bool:
    """Whether `name` can be imported by this interpreter (found, not imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def nvidia_gpus(
    environ: Mapping[str, str] | None = None, driver: Path = Path("/proc/driver/nvidia/gpus")
) -> int:
    """How many NVIDIA GPUs this machine shows a job: the driver's GPU folders, fewer when
    CUDA_VISIBLE_DEVICES names fewer (empty or -1: none). No CUDA library is loaded."""
    environ = os.environ if environ is None else environ
    found = len(list(driver.iterdir())) if driver.is_dir() else 0
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return found
    named = [d for d in visible.split(",") if d.strip()]
    if not named or named[0].strip() == "-1":
        return 0
    return min(found, len(named))


@dataclass(frozen=True)
class Runtime:
    """What the run knows at start that the config does not say."""

    use_conda: bool
    local: bool  # jobs run on this machine (not submitted to a cluster)
    # the interpreter of a built `.venv-asr`, or None (familiarity.asr.asr_venv_python: the
    # workflow passes it, as this shared layer imports no benchmark)
    asr_venv: Callable[[], Path | None]
    rules: Set[str] = frozenset()  # the rules of the jobs that will run
    # (where, entry) of each registry model whose jobs will run, e.g. ("models.qwen-omni", {...})
    models: tuple = ()
    has_module: Callable[[str], bool] = module_available
    gpus: Callable[[], int] = field(default=nvidia_gpus)


def asr_problems(config: Mapping, runtime: Runtime) -> list[str]:
    """Each reason the configured ASR cannot run as the run would start it (module docstring)."""
    if ASR_RULE not in runtime.rules:
        return []
    asr = config["asr"]
    engine, device = asr["engine"], str(asr["device"])
    cuda = device.startswith("cuda")
    problems = []
    in_asr_venv = False
    if runtime.use_conda:
        pass  # envs/asr.yaml: whisperx 3.8.6 and faster-whisper, with CUDA torch 2.8
    elif engine == "whisperx" and not runtime.has_module("whisperx"):
        if runtime.asr_venv() is None:
            problems.append(
                "asr.engine whisperx: whisperx is not installed in this venv and .venv-asr is not built: "
                "run `make venv-asr` (transcribe_missing hands the transcription to it), or run with "
                "--use-conda (envs/asr.yaml), or set asr.engine: faster-whisper"
            )
        else:
            in_asr_venv = True
    elif engine == "faster-whisper" and not runtime.has_module("faster_whisper"):
        problems.append(
            "asr.engine faster-whisper: the faster_whisper package is not installed in this venv: run "
            "`make setup` (it installs it), or run with --use-conda (envs/asr.yaml)"
        )
    if cuda and in_asr_venv:
        problems.append(
            f"asr.device {device}: .venv-asr holds the lock's CPU build of torch, so whisperx runs there "
            f"on the CPU only: {CPU_FIX}, or run with --use-conda on a machine with an NVIDIA GPU"
        )
    elif cuda and runtime.local and runtime.gpus() == 0:
        problems.append(
            f"asr.device {device}: this machine shows no NVIDIA GPU (no /proc/driver/nvidia/gpus, or "
            f"CUDA_VISIBLE_DEVICES hides them) and the jobs run here: {CPU_FIX}, run on a GPU machine, "
            "or submit the jobs to a cluster (docs/cluster.md: the transcription job asks for a GPU)"
        )
    if not cuda and str(asr["compute_type"]).startswith("float16"):
        problems.append(
            f"asr.compute_type {asr['compute_type']}: CTranslate2 has no float16 on the CPU "
            f"(asr.device {device}): set asr.compute_type: int8 (or float32)"
        )
    return problems


# a family's own package and the family venv / conda env that holds it
FAMILY_VENVS = {
    "qwen2_5_omni": ("torchvision", "make venv-omni", "envs/omni.yaml"),
    "voxtral": ("mistral_common", "make venv-voxtral", "envs/voxtral.yaml"),
}


def model_problems(runtime: Runtime) -> list[str]:
    """Each local model entry whose family package or device the run cannot have (module docstring)."""
    problems = []
    for where, entry in runtime.models:
        if entry.get("backend") != "transformers":
            continue
        options = entry.get("options") or {}
        family = options.get("family")
        if family in FAMILY_VENVS and not runtime.use_conda:
            package, make, env = FAMILY_VENVS[family]
            if not runtime.has_module(package):
                problems.append(
                    f"{where}.options.family {family}: {package} is not installed in this venv: build the "
                    f"family's venv (`{make}`) and run the workflow from it, or run with --use-conda ({env})"
                )
        device = str(options.get("device", "auto"))
        if device.startswith("cuda") and runtime.local and runtime.gpus() == 0:
            problems.append(
                f"{where}.options.device {device}: this machine shows no NVIDIA GPU and the jobs run "
                "here: set options.device: cpu (or auto), run on a GPU machine, or submit the jobs to a "
                "cluster (docs/cluster.md)"
            )
    return problems


def check_engines(config: Mapping, runtime: Runtime) -> None:
    """Raise ConfigError listing every configured engine or device the run cannot have."""
    problems = asr_problems(config, runtime) + model_problems(runtime)
    if problems:
        lines = "\n".join(f"  - {problem}" for problem in problems)
        raise ConfigError(
            f"the study's engines are not ready ({len(problems)} problem(s)); no job was started:\n{lines}"
        )
