"""Regenerate expected.json: run the released scorers on cases.json, model and judge calls stubbed.

Not part of the test suite (it needs the released code, which the repository does not hold).
    SOCIALOMNI_SRC=/path/to/SocialOmni DUPLEXEVAL_SRC=/path/to/Omni-DuplexEval python generate.py
The two paths are checkouts of MAC-AutoML/SocialOmni@0fab46a and OpenBMB/Omni-DuplexEval@962cec4
(see README.md). The released modules are imported from there and called as they are; only
the model under test and the judge are replaced by look-ups in cases.json. Media work (the
level-2 cut, frame extraction, ffprobe of the clip) runs for real on clip12.mp4.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIP = HERE / "clip12.mp4"


def _write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _import(root: str, names: list[str]) -> list:
    sys.path.insert(0, root)
    return [importlib.import_module(name) for name in names]


class _Model:
    """The model under test: the case's reply to each request (by sample id; how: no options)."""

    def __init__(self, answers, how=None):
        self.answers, self.how = answers, how or {}

    @property
    def model_name(self) -> str:
        return "stub"

    def predict(self, request):
        from models.pipeline.types import InferenceResult

        sample = str(request.metadata.get("sample_id"))
        text = self.answers[sample] if request.options else self.how[sample]
        return InferenceResult(answer=text, raw_response=text)


def run_who(cases: dict, work: Path) -> dict:
    level1, analysis = _import(
        os.environ["SOCIALOMNI_SRC"], ["models.pipeline.level1_pipeline", "scripts.analyze_level1_ablation"]
    )
    dataset = _write(work / "level1" / "dataset.json", cases["dataset"])
    out = work / "level1" / "results" / "results_stub_level1_avt.json"
    config = level1.Level1Config(dataset, work / "level1", out, work / "logs")
    payload = level1.Level1Pipeline(_Model(cases["replies"]), config).run()
    [result] = analysis.infer_result_sets(out.parent)
    by_id = {int(row["id"]): row for row in cases["dataset"]}
    splits = analysis.split_accuracy(result, by_id)
    return {
        "pipeline": {k: payload[k] for k in ("correct", "total", "accuracy")},
        "analysis": {name: {"correct": c, "total": n, "accuracy": a} for name, (c, n, a) in splits.items()},
        "predictions": {str(r["id"]): r["prediction"] for r in payload["results"]},
    }


def run_when_how(cases: dict, work: Path) -> dict:
    level2, rescore, language = _import(
        os.environ["SOCIALOMNI_SRC"],
        [
            "models.pipeline.level2_pipeline",
            "scripts.score_level2_q2_with_omni",
            "scripts.report_level2_extended_by_language",
        ],
    )
    annotations = _write(work / "level2" / "annotations.json", cases["annotations"])
    shutil.copy(CLIP, work / "level2" / "clip.mp4")
    replies = {k: v["reply"] for k, v in cases["replies"].items()}
    how = {k: v["candidate"] for k, v in cases["replies"].items()}
    judge_by_candidate = {how[k]: text for k, text in cases["judge"].items()}

    class Judge:
        def call(self, video_path, question, user_prompt, model_params, include_images):
            return judge_by_candidate[user_prompt.split("[Candidate]\n", 1)[1].strip()]

    out = work / "level2" / "results_stub_level2.json"
    config = level2.Level2Config(annotations, work / "level2", out, work / "logs", max_retries=1)
    pipeline = level2.Level2Pipeline(_Model(replies, how), config)
    pipeline._get_judge = lambda: (Judge(), {}, "stub-judge")
    payload = pipeline.run()

    class Client:
        def __init__(self, url):
            pass

        def call_api(self, video, prompt, **kwargs):
            return judge_by_candidate[prompt.split("[Candidate]\n", 1)[1].strip()]

    rescore.OmniHttpClient = Client
    rescored = work / "level2" / "rescored.json"
    rescore.score_file(out, rescored, "http://stub", work / "level2" / "clip.mp4")
    report = language.build_report(annotations, rescored)
    # the summary row of the only language group: | lang | total | q1 correct | acc | need q2 | scored | avg |
    row = next(line for line in report.splitlines() if line.startswith("| 未知 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    again = json.loads(rescored.read_text(encoding="utf-8"))
    return {
        "pipeline": {
            k: payload[k] for k in ("q1_correct", "q1_total", "q1_accuracy", "q2_avg_score", "q2_count")
        },
        "rows": {
            r["video_id"]: {
                k: r[k] for k in ("q1_correct", "q1_prediction", "q1_answer", "q2_score", "timestamp")
            }
            for r in payload["results"]
        },
        "rescoring": {"q2_avg_score": again["q2_avg_score"], "q2_count": again["q2_count"]},
        "language_report": {"need_q2": int(cells[4]), "q2_scored": int(cells[5]), "q2_avg": float(cells[6])},
    }


def _chat(text: str) -> dict:
    return {"choices": [{"message": {"content": text}}]}


def _run_batch(batch, script, rows_by_split: dict, make_argv, work: Path) -> None:
    """The released batch loop, in process: one output per split and id (a repeated id is
    skipped once its output exists, as `process_row` does)."""
    for split, rows in rows_by_split.items():
        for row in rows:
            out = Path(batch.output_path(str(work / "out"), split, str(row["id"])))
            if out.exists():
                continue
            sys.argv = ["script", *make_argv(row, split)[2:]]
            script.main()


def run_rtd(cases: dict, work: Path) -> dict:
    rtd, batch = _import(
        os.environ["DUPLEXEVAL_SRC"], ["real_time_description", "batch_real_time_description"]
    )
    by_text = {j["text"]: j["reply"] for j in cases["judge"] if "text" in j}
    content = {j["item_id"]: j["reply"] for j in cases["judge"] if j.get("kind") == "content"}
    current = {}

    class Client:
        def chat_completion(self, messages, **kwargs):
            prompt = messages[-1]["content"][0]["text"]
            found = re.search(r'Model response sentence: "(.*)"', prompt)
            return _chat(by_text[found.group(1)] if found else content[current["id"]])

    rtd.OpenAILLMClient = Client
    responses = work / "responses"
    for key, data in cases["responses"].items():
        _write(responses / f"{key}.json", data)
    shutil.copy(CLIP, work / "clip12.mp4")
    items = {s: [{**r, "video": str(work / r["video"])} for r in rows] for s, rows in cases["items"].items()}
    args = type("Args", (), {"response_root": str(responses), "response_template": None})()
    args.output_root, args.model, args.fps, args.eval_workers = str(work / "out"), "stub-judge", 2, 1
    args.metrics = ["all"]

    def argv(row, split):
        current["id"] = row["id"]
        return batch.build_command(args, row, split, str(work / "media"))

    _run_batch(batch, rtd, items, argv, work)
    out = {}
    for split, rows in items.items():
        for row in rows:
            result = json.loads((work / "out" / split / f"{row['id']}.json").read_text(encoding="utf-8"))
            summary = result["temporal_sensitivity"]["summary"]
            out[row["id"]] = {
                "video_duration": result["metadata"]["video_duration"],
                "avg_temporal_score": summary["avg_temporal_score"],
                "evaluated_sentences": summary["evaluated_sentences"],
                "relevant_sentences_count": summary["relevant_sentences_count"],
                "irrelevant_sentences_count": summary["irrelevant_sentences_count"],
                "first_relevant_time": summary["relevance_stats"]["first_relevant_time"],
                "irrelevant_duration_ratio": summary["relevance_stats"]["irrelevant_duration_ratio"],
                "content_score": result["content_accuracy"]["score"],
            }
    return out


def run_pr(cases: dict, work: Path) -> dict:
    pr, batch = _import(os.environ["DUPLEXEVAL_SRC"], ["proactive_reminder", "batch_proactive_reminder"])
    by_text = {j["text"]: j["reply"] for j in cases["judge"]}

    class Client:
        def chat_completion(self, messages, **kwargs):
            prompt = messages[-1]["content"][0]["text"]
            found = re.search(r'Model response(?: segment)?: "(.*)"', prompt)
            return _chat(by_text[found.group(1)])

    pr.OpenAILLMClient = Client
    responses = work / "responses"
    for key, data in cases["responses"].items():
        _write(responses / f"{key}.json", data)
    args = type("Args", (), {"response_root": str(responses), "response_template": None})()
    args.output_root, args.model_id, args.window_size = str(work / "out"), "stub-judge", 10.0
    _run_batch(batch, pr, cases["items"], lambda row, split: batch.build_command(args, row, split), work)
    out = {}
    for split, rows in cases["items"].items():
        for row in rows:
            result = json.loads((work / "out" / split / f"{row['id']}.json").read_text(encoding="utf-8"))
            out.setdefault(
                row["id"], result["summary"] | {"event_scores": result["evaluation_result"]["event_scores"]}
            )
    return out


def main() -> None:
    cases = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
    expected = {}
    runs = (
        ("who", run_who),
        ("who_duplicate", run_who),
        ("when_how", run_when_how),
        ("rtd", run_rtd),
        ("pr", run_pr),
    )
    for name, run in runs:
        with tempfile.TemporaryDirectory() as work:
            expected[name] = run(cases[name], Path(work))
    expected["made_by"] = {
        "SocialOmni": "MAC-AutoML/SocialOmni@0fab46a",
        "Omni-DuplexEval": "OpenBMB/Omni-DuplexEval@962cec4",
        "how": "tests/data/released_scorers/generate.py (README.md)",
    }
    (HERE / "expected.json").write_text(
        json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
