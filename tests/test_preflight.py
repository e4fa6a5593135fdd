"""Start-time checks (issue 60): each configured engine and device is there before any job runs
(omnisocial.preflight, the workflow's onstart), and a release design names what release.root
holds and what each FriendBench layout expects (config.check_inputs) instead of a raw
MissingInputException."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from doc_commands import REPO, run_in_clean_shell
from test_rating_workflow import checkout

from omnisocial.config import ConfigError, check_inputs, validate_config
from omnisocial.familiarity.release import GENERATED_MARK, detect_layout, release_problem, release_problems
from omnisocial.familiarity.release_demo import write_release
from omnisocial.preflight import Runtime, asr_problems, check_engines, nvidia_gpus

ASR = frozenset({"transcribe_missing"})


def asr_config(engine="whisperx", device="cuda", compute_type="float16") -> dict:
    return validate_config(
        {
            "asr": {"engine": engine, "device": device, "compute_type": compute_type},
            "corpus": {"source": "demo"},
        }
    )


def runtime(*, conda=False, local=True, modules=(), asr_venv=None, gpus=0, rules=ASR, models=()) -> Runtime:
    return Runtime(
        use_conda=conda,
        local=local,
        rules=rules,
        models=models,
        has_module=lambda name: name in modules,
        asr_venv=lambda: asr_venv,
        gpus=lambda: gpus,
    )


def test_whisperx_on_cuda_without_whisperx_names_make_venv_asr_and_the_device():
    """config/seamless.example.yaml's ASR in the README's setup: no whisperx, no GPU."""
    problems = asr_problems(asr_config(), runtime())
    assert len(problems) == 2
    assert problems[0].startswith("asr.engine whisperx: whisperx is not installed in this venv and .venv-asr")
    assert "run `make venv-asr`" in problems[0] and "--use-conda" in problems[0]
    assert problems[1].startswith("asr.device cuda: this machine shows no NVIDIA GPU")
    assert "set asr.device: cpu (with asr.compute_type: int8)" in problems[1]
    with pytest.raises(ConfigError, match=r"engines are not ready \(2 problem\(s\)\); no job was started"):
        check_engines(asr_config(), runtime())


def test_each_way_whisperx_can_be_there():
    venv = Path("/x/.venv-asr/bin/python")
    # .venv-asr built: whisperx runs there, on its CPU torch only
    assert asr_problems(asr_config(device="cpu", compute_type="int8"), runtime(asr_venv=venv)) == []
    [problem] = asr_problems(asr_config(), runtime(asr_venv=venv, gpus=1))
    assert problem.startswith("asr.device cuda: .venv-asr holds the lock's CPU build of torch")
    # in this venv, with a GPU; or under --use-conda (envs/asr.yaml), where jobs go to a GPU
    assert asr_problems(asr_config(), runtime(modules={"whisperx"}, gpus=1)) == []
    assert asr_problems(asr_config(), runtime(conda=True, gpus=1)) == []
    [problem] = asr_problems(asr_config(), runtime(conda=True, gpus=0))
    assert problem.startswith("asr.device cuda: this machine shows no NVIDIA GPU")
    # submitted to a cluster: the job asks for its GPU; this machine's do not matter
    assert asr_problems(asr_config(), runtime(conda=True, local=False)) == []


def test_faster_whisper_and_compute_types():
    assert (
        asr_problems(asr_config("faster-whisper", "cpu", "int8"), runtime(modules={"faster_whisper"})) == []
    )
    [problem] = asr_problems(asr_config("faster-whisper", "cpu", "int8"), runtime())
    assert problem.startswith("asr.engine faster-whisper: the faster_whisper package is not installed")
    [problem] = asr_problems(
        asr_config("faster-whisper", "cpu", "float16"), runtime(modules={"faster_whisper"})
    )
    assert problem.startswith("asr.compute_type float16: CTranslate2 has no float16 on the CPU")


def test_no_check_when_no_transcription_job_runs():
    assert asr_problems(asr_config(), runtime(rules=frozenset({"ingest_corpus"}))) == []


def test_the_gpus_a_job_sees(tmp_path):
    driver = tmp_path / "gpus"
    assert nvidia_gpus({}, driver) == 0
    for address in ("0000:01:00.0", "0000:02:00.0"):
        (driver / address).mkdir(parents=True)
    assert nvidia_gpus({}, driver) == 2
    assert nvidia_gpus({"CUDA_VISIBLE_DEVICES": "1"}, driver) == 1
    assert nvidia_gpus({"CUDA_VISIBLE_DEVICES": ""}, driver) == 0
    assert nvidia_gpus({"CUDA_VISIBLE_DEVICES": "-1"}, driver) == 0


def release_config(root: Path, preset: str) -> dict:
    config = yaml.safe_load((REPO / "config" / preset).read_text().replace("data/friendbench", str(root)))
    return validate_config(config)


@pytest.mark.parametrize(
    "preset, table",
    [
        ("friendbench_release.example.yaml", "validation/data/metadata.csv"),
        ("friendbench_val.example.yaml", "val/metadata.jsonl"),
    ],
)
def test_a_release_root_without_the_layout_says_what_it_holds_and_what_each_layout_expects(
    tmp_path, preset, table
):
    root = tmp_path / "friendbench"
    (root / "downloads").mkdir(parents=True)
    (root / "README.md").write_text("not the release\n")
    with pytest.raises(ConfigError) as raised:
        config = release_config(root, preset)
        check_inputs(config, {}, release_problems(config))
    message = str(raised.value)
    assert (
        f"release.metadata: {root / table} not found; release.root {root} holds README.md, downloads/."
        in message
    )
    assert (
        "the val/ (JSON lines) layout: val/metadata.jsonl + val/human_responses.jsonl, read by "
        "config/friendbench_val.example.yaml; the validation/ (CSV) layout: validation/data/metadata.csv "
        "(and optionally validation/ratings/human_ratings.csv, validation/ratings/model_predictions.csv, "
        "validation/baselines/results.csv), read by config/friendbench_release.example.yaml" in message
    )
    assert "`omnisocial friendbench-demo data/friendbench`" in message
    assert "not a folder" in release_problem(tmp_path / "nowhere", tmp_path / "nowhere" / table)


@pytest.mark.heavy  # 5 CPU-s
def test_the_generated_release_holds_both_layouts_and_says_it_is_generated(tmp_path):
    root = write_release(tmp_path / "friendbench", {"n_dyads": 4, "raters_per_modality": 2})
    for preset, name in (
        ("friendbench_release.example.yaml", "validation/ (CSV)"),
        ("friendbench_val.example.yaml", "val/ (JSON lines)"),
    ):
        config = release_config(root, preset)
        assert not release_problems(config) and check_inputs(config, {}, release_problems(config)) is config
        found, said = detect_layout(root, config["release"]["metadata"])
        assert found == name and said.endswith(
            "a small GENERATED release (omnisocial friendbench-demo), not the real data"
        )
        assert "(not there" not in said
    assert (root / GENERATED_MARK).is_file()
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    write_release(root, {"n_dyads": 4, "raters_per_modality": 2})  # its own folder: replaced, same bytes
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    (tmp_path / "download").mkdir()
    with pytest.raises(ValueError, match="was not made by omnisocial friendbench-demo"):
        write_release(tmp_path / "download")


def test_a_study_that_cannot_transcribe_stops_before_any_job(tmp_path):
    """The workflow's onstart: the demo with whisperx ASR on cuda, in a clean shell after the
    README's setup (no whisperx, no .venv-asr beside this checkout's test venv, no GPU here):
    the run stops naming `make venv-asr` and the device, and no job ran."""
    study = checkout(tmp_path / "study")
    config = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    config["results"] = "results/asr"
    config["corpus"]["missing_transcript"] = "asr"
    config["asr"] = {"engine": "whisperx", "device": "cuda", "compute_type": "float16"}
    (study / "config" / "asr.yaml").write_text(yaml.safe_dump(config))
    result = run_in_clean_shell("snakemake --cores 1 --configfile config/asr.yaml", study, timeout=300)
    said = result.stdout + result.stderr
    assert result.returncode != 0
    assert "the study's engines are not ready" in said and "no job was started" in said
    if not (REPO / ".venv-asr" / ".installed").is_file():
        assert "run `make venv-asr`" in said
    if nvidia_gpus() == 0:
        assert "asr.device cuda: " in said
    assert not (study / "results").exists() and not (study / "data").exists()


def test_a_local_model_needs_its_family_package_and_its_device():
    from omnisocial.preflight import model_problems

    omni = {
        "name": "qwen-omni",
        "backend": "transformers",
        "options": {"family": "qwen2_5_omni", "device": "cuda"},
    }
    voxtral = {"name": "vox", "backend": "transformers", "options": {"family": "voxtral"}}
    api = {"name": "gpt", "backend": "openai", "options": {"device": "cuda"}}
    models = (("models.qwen-omni", omni), ("social.models.vox", voxtral), ("models.gpt", api))
    problems = model_problems(runtime(models=models))
    assert problems == [
        "models.qwen-omni.options.family qwen2_5_omni: torchvision is not installed in this venv: build "
        "the family's venv (`make venv-omni`) and run the workflow from it, or run with --use-conda "
        "(envs/omni.yaml)",
        "models.qwen-omni.options.device cuda: this machine shows no NVIDIA GPU and the jobs run here: "
        "set options.device: cpu (or auto), run on a GPU machine, or submit the jobs to a cluster "
        "(docs/cluster.md)",
        "social.models.vox.options.family voxtral: mistral_common is not installed in this venv: build the "
        "family's venv (`make venv-voxtral`) and run the workflow from it, or run with --use-conda "
        "(envs/voxtral.yaml)",
    ]
    ready = runtime(models=models, modules={"torchvision", "mistral_common"}, gpus=1)
    assert model_problems(ready) == []
    assert model_problems(runtime(models=models, conda=True, local=False)) == []
