from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from omnisocial.judges.agreement import icc, krippendorff_alpha, spearman_with_humans, to_matrix
from omnisocial.judges.embedding import CUT_POINTS, LABEL, EmbeddingJudge, level_for
from omnisocial.judges.rubric import (
    TASKS,
    RubricJudge,
    build_prompt,
    parse_score,
    parse_temporal,
    snap,
)
from omnisocial.models.base import Reply

HOW = TASKS["how"].levels
NAN = np.nan


# --- parse_score ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("75", 75.0),
        ("Score: 100", 100.0),
        ("I would give 70 because ...", 75.0),
        ("62.4/100", 50.0),
        ("12.5", 0.0),  # tie between 0 and 25 goes to the lower level
        ("37.5", 25.0),
        ("-5", 0.0),
        ("250", 100.0),
        ("50, maybe 75", 50.0),  # the first number counts
        ('{"score": 25}', 25.0),
    ],
)
def test_parse_score_snaps_the_first_number(reply, expected):
    parsed = parse_score(reply, HOW)
    assert parsed.ok and parsed.score == expected


@pytest.mark.parametrize("reply", [None, "", "   ", "I cannot judge this.", "excellent answer"])
def test_unparseable_reply_is_no_score_with_a_reason(reply):
    parsed = parse_score(reply, HOW)
    assert parsed.score is None and not parsed.ok and parsed.reason


def test_snap_on_small_scales():
    assert snap(2.6, TASKS["content"].levels) == 3
    assert snap(1.5, TASKS["content"].levels) == 1
    assert snap(0.7, TASKS["reminder"].levels) == 1
    assert parse_score("Answer: 2", TASKS["temporal"].levels).score == 2


def test_parse_temporal():
    assert parse_temporal('{"score": 2, "is_relevant": 1}').score == 2
    assert parse_temporal('{"is_relevant": 0, "score": 3}').is_relevant == 0
    loose = parse_temporal("score 3; is_relevant: 1")
    assert (loose.score, loose.is_relevant) == (3, 1)
    assert not parse_temporal("score 2").ok  # is_relevant missing: not a fake score
    assert not parse_temporal("").ok


def test_prompts_carry_the_material():
    system, prompt = build_prompt("how", context="A: hi", references=["hello there", "hey"], candidate="hi!")
    assert system and "hello there" in prompt and "hi!" in prompt and "0, 25, 50, 75, 100" in prompt
    _, temporal = build_prompt(
        "temporal", question="describe", window_start=0, window_end=3.5, sentence="a dog"
    )
    assert "0.0 s to 3.5 s" in temporal and "is_relevant" in temporal
    _, content = build_prompt("content", question="q", references=["r1"], response="resp")
    assert "0 to 3" in content
    _, reminder = build_prompt("reminder", instruction="tell me", window_start=5, window_end=15, text="now!")
    assert "0 or 1" in reminder and "5.0 s" in reminder
    with pytest.raises(ValueError):
        build_prompt("why")


class _ScriptedBackend:
    """A Backend whose judge replies are fixed per item (the rubric judge's parsing is under test)."""

    name = "scripted"
    modalities = ("text",)

    def __init__(self, replies):
        self.replies = replies
        self.seen = []

    def fingerprint(self):
        return "scripted"

    def generate(self, requests):
        self.seen.extend(requests)
        return [self.replies[r.item_id] for r in requests]


def test_rubric_judge_scores_parses_and_keeps_failures_apart():
    backend = _ScriptedBackend(
        {
            "good": Reply(text="75"),
            "vague": Reply(text="hard to say"),
            "down": Reply(text=None, error="timeout"),
        }
    )
    judge = RubricJudge(backend, "how")
    items = [
        {"item_id": "good", "context": "", "references": ["sure, let's go"], "candidate": "ok let's go"},
        {"item_id": "empty", "context": "", "references": ["sure"], "candidate": "  "},
        {"item_id": "vague", "context": "", "references": ["sure"], "candidate": "hmm"},
        {"item_id": "down", "context": "", "references": ["sure"], "candidate": "yes"},
    ]
    out = {j.item_id: j for j in judge.judge(items)}
    assert out["good"].score == 75 and out["good"].raw == "75"
    assert out["empty"].score == 0 and out["empty"].reason == "empty candidate"
    assert out["vague"].score is None and "no number" in out["vague"].reason
    assert out["down"].score is None and out["down"].error == "timeout"
    assert [r.item_id for r in backend.seen] == ["good", "vague", "down"]  # no call for the empty one
    assert backend.seen[0].settings["temperature"] == 0.0


# --- embedding judge -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedding_judge():
    judge = EmbeddingJudge()
    judge.embed(["the model is loaded once, as the module's fixture build"])  # not in the first test
    return judge


def test_embedding_judge_prefers_a_paraphrase(embedding_judge):
    reference = ["I think we should leave now, it is getting late."]
    paraphrase = embedding_judge.similarity("It's getting late, we'd better go.", reference)
    unrelated = embedding_judge.similarity("Photosynthesis converts light into chemical energy.", reference)
    assert paraphrase > unrelated + 0.3
    assert embedding_judge.label == LABEL

    scores = embedding_judge.score_many(
        [
            ("It's getting late, we'd better go.", reference),
            ("Photosynthesis converts light into chemical energy.", reference),
            ("", reference),
        ],
        "how",
    )
    assert scores[0].score > scores[1].score
    assert scores[2].score == 0 and scores[2].similarity is None
    single = embedding_judge.score("It's getting late, we'd better go.", reference, "how")
    assert single.score == scores[0].score and single.similarity == pytest.approx(paraphrase, abs=1e-5)
    # the best of several references counts
    several = embedding_judge.similarity(
        "It's getting late, we'd better go.", ["Nice weather.", reference[0]]
    )
    assert several == pytest.approx(paraphrase, abs=1e-5)


@pytest.mark.heavy  # 7 CPU-s
def test_embedding_encoder_matches_sentence_transformers_bit_for_bit(embedding_judge):
    # The judge runs MiniLM on transformers alone; sentence-transformers (the released
    # scorers' encoder) is the reference: the same vectors to the last bit, across batches
    # (texts sorted by length), truncation at max_seq_length, blanks and non-ASCII text.
    from sentence_transformers import SentenceTransformer

    rng = np.random.default_rng(3)
    words = ["the", "a", "dog", "people", "red", "car", "sign", "reads", "OPEN", "I", "café", "naïve"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 60)))) for _ in range(70)]
    texts += ["", " ", "Hello!", "word " * 400, "Ünïcödé – “quotes” 東京"]
    ours = embedding_judge.embed(texts)
    reference = SentenceTransformer(str(embedding_judge.model_dir), device="cpu", local_files_only=True)
    theirs = reference.encode(texts, batch_size=embedding_judge.batch_size, normalize_embeddings=True)
    assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.array_equal(ours, theirs)
    # one text a batch: nothing padded, so no attention mask (transformers' faster kernel)
    alone = EmbeddingJudge(embedding_judge.model_dir, batch_size=1).embed(texts[:5] + texts[-3:])
    assert np.array_equal(
        alone, reference.encode(texts[:5] + texts[-3:], batch_size=1, normalize_embeddings=True)
    )


def test_embedding_encoder_refuses_another_pooling(tmp_path):
    import shutil

    from omnisocial.judges.embedding import MeanPoolingEncoder, bundled_model_dir

    folder = tmp_path / "model"
    shutil.copytree(bundled_model_dir(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    config = folder / "1_Pooling" / "config.json"
    pooling = json.loads(config.read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    config.write_text(json.dumps(pooling))
    with pytest.raises(ValueError, match=r"1_Pooling/config.json.*mean pooling.*cls_token"):
        MeanPoolingEncoder(folder)
    (folder / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer"}]))
    with pytest.raises(ValueError, match=r"modules.json"):
        MeanPoolingEncoder(folder)


def test_embedding_encoder_refuses_a_model_that_is_not_plain_bert(tmp_path):
    import shutil

    from omnisocial.judges.embedding import MeanPoolingEncoder, bundled_model_dir

    folder = tmp_path / "model"
    shutil.copytree(bundled_model_dir(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "mpnet"}))
    with pytest.raises(ValueError, match=r"config.json: the encoder runs plain BERT.*'model_type': 'mpnet'"):
        MeanPoolingEncoder(folder)
    (folder / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(ValueError, match=r"config.json.*'hidden_act': 'relu'"):
        MeanPoolingEncoder(folder)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"cannot read the model file .*model.safetensors"):
        MeanPoolingEncoder(folder)


def test_level_for_cut_points():
    assert [level_for(s, HOW, CUT_POINTS["how"]) for s in (-0.1, 0.2, 0.39, 0.6, 0.95)] == [
        0,
        25,
        25,
        75,
        100,
    ]
    assert [level_for(s, TASKS["content"].levels, CUT_POINTS["content"]) for s in (0.1, 0.5, 0.8)] == [
        0,
        2,
        3,
    ]
    with pytest.raises(ValueError):
        level_for(0.5, HOW, (0.5,))


# --- agreement -----------------------------------------------------------------------------


def test_alpha_hand_computed():
    # two raters, three units: 1/1, 2/2, 3/4. Coincidences: o11 = o22 = 2, o34 = o43 = 1; n = 6,
    # n_1 = n_2 = 2, n_3 = n_4 = 1.
    # interval: D_o = (1 + 1) / 6; D_e = 2 * (4 + 8 + 18 + 2 + 8 + 1) / 30 = 82 / 30; alpha = 1 - 10/82.
    data = [[1, 2, 3], [1, 2, 4]]
    assert krippendorff_alpha(data, "interval") == pytest.approx(72 / 82)
    # ordinal: d2(3,4) = (1 + 1 - 1)^2 = 1 so D_o = 2 / 6; pairs (1,2) 16, (1,3) 24.5, (1,4) 40.5,
    # (2,3) 4.5, (2,4) 12.5, (3,4) 1 -> D_e = 2 * 99 / 30 = 6.6; alpha = 1 - (1/3) / 6.6.
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(1 - (1 / 3) / 6.6)
    # nominal: D_o = 2 / 6; D_e = (36 - (4 + 4 + 1 + 1)) / 30 = 26 / 30; alpha = 1 - 10/26.
    assert krippendorff_alpha(data, "nominal") == pytest.approx(1 - 10 / 26)


def test_alpha_krippendorff_reference_example():
    # Krippendorff (2011), 4 coders x 12 units with missing values; published alphas.
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(data, "interval") == pytest.approx(0.849, abs=5e-4)


def test_alpha_edge_cases():
    assert np.isnan(krippendorff_alpha([[2, 2, 2], [2, 2, 2]]))  # no variation: D_e = 0
    assert np.isnan(krippendorff_alpha([[1, NAN], [NAN, 2]]))  # no unit with two values
    assert krippendorff_alpha([[0, 25, 50, 100], [0, 25, 50, 100]]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        krippendorff_alpha([[1, 2], [2, 1]], "ratio")


def test_icc_hand_computed_and_shrout_fleiss():
    # units x raters [[1,2],[2,3],[3,4]]: MSR = 2, MSC = 1.5, MSE = 0 (a constant offset);
    # ICC(2,1) = 2 / (2 + 0 + 2 * 1.5 / 3) = 2/3; ICC(2,k) = 2 / (2 + 1.5 / 3) = 0.8.
    result = icc([[1, 2, 3], [2, 3, 4]])
    assert (result.ms_rows, result.ms_cols, result.ms_error) == pytest.approx((2.0, 1.5, 0.0))
    assert result.icc_2_1 == pytest.approx(2 / 3)
    assert result.icc_2_k == pytest.approx(0.8)
    # Shrout & Fleiss (1979) Table 2: 6 targets x 4 judges, ICC(2,1) = .29, ICC(2,4) = .62
    targets = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    published = icc(targets.T)
    assert published.icc_2_1 == pytest.approx(0.29, abs=0.005)
    assert published.icc_2_k == pytest.approx(0.62, abs=0.005)
    with_missing = icc(np.column_stack([targets.T, [1, NAN, 3, 4]]))
    assert with_missing.n_units == 6


def test_spearman_and_long_format():
    long = pd.DataFrame(
        {
            "judge": ["gpt", "gpt", "gpt", "gpt", "human", "human", "human", "human"],
            "item_id": ["a", "b", "c", "d"] * 2,
            "score": [0, 25, 75, 100, 1, 2, 2.5, 3],
        }
    )
    matrix = to_matrix(long)
    assert matrix.shape == (2, 4)
    result = spearman_with_humans(matrix.loc["gpt"], matrix.loc["human"])
    assert result.rho == pytest.approx(1.0) and result.n == 4
    partial = spearman_with_humans([1, 2, 3, NAN, 5], [5, 4, 3, 2, NAN])
    assert partial.rho == pytest.approx(-1.0) and partial.n == 3
    with pytest.raises(ValueError):
        to_matrix(pd.concat([long, long.iloc[:1]]))
