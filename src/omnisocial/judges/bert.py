"""A BERT encoder (such as MiniLM) from its model folder on torch, tokenizers and safetensors.

`encoder = BertEncoder(folder, max_length)`; `encoder.hidden_states(*encoder.tokens(texts))` is
what transformers gives as `last_hidden_state` for `AutoModel.from_pretrained(folder)` on
`AutoTokenizer.from_pretrained(folder)(texts, padding=True, truncation="longest_first",
max_length=max_length)`: it runs the same operations in the same order as transformers'
BertModel with its default attention (torch's scaled_dot_product_attention, no mask when nothing
is padded, else a boolean key mask), so on the same torch the floats are the same bit for bit.
`tests/test_judges.py` checks the pooled vectors against `SentenceTransformer.encode` (which
runs transformers) to the last bit, with and without padding.

- tokens: the folder's tokenizer.json as it stands (its normalizer, pre-tokenizer and special
  tokens), padded to the batch's longest and truncated at `max_length`;
- embeddings: word + token type, then + position, then LayerNorm;
- each layer: self-attention, dense, LayerNorm of it plus its input; the feed-forward (GELU)
  likewise.

Why not transformers itself: importing its model classes loads torch's compiler and distributed
packages and the generation utilities, about 3 CPU-s in each judging job against 0.1 s for the
model's own work (docs/performance.md#code). A folder whose config.json is not a plain BERT
encoder (model_type bert, absolute positions, GELU, not a decoder) is refused with ValueError
naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


def read_model_json(path: Path) -> dict | list:
    """A JSON file of a model folder; ValueError naming it when it is missing or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read the model file {path}: {error}") from None


@dataclass(frozen=True)
class BertShape:
    """What the forward pass needs from config.json."""

    layers: int
    hidden: int
    heads: int
    layer_norm_eps: float

    @classmethod
    def of(cls, path: Path) -> BertShape:
        config = read_model_json(path)
        plain = {
            "model_type": "bert",
            "hidden_act": "gelu",
            "position_embedding_type": "absolute",
            "is_decoder": False,
        }
        found = {key: config.get(key, wanted) for key, wanted in plain.items()}
        if found != plain:
            raise ValueError(f"{path}: the encoder runs plain BERT models ({plain}), not {found}")
        shape = cls(
            int(config["num_hidden_layers"]),
            int(config["hidden_size"]),
            int(config["num_attention_heads"]),
            float(config["layer_norm_eps"]),
        )
        if shape.hidden % shape.heads:
            raise ValueError(
                f"{path}: hidden_size {shape.hidden} is not a multiple of the heads {shape.heads}"
            )
        return shape


def bert_tokenizer(folder: Path, max_length: int):
    """The folder's tokenizer.json, padding to the longest text and truncating at `max_length`."""
    from tokenizers import Tokenizer

    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ValueError(f"{path}: the encoder needs the model's fast tokenizer file")
    tokenizer = Tokenizer.from_file(str(path))
    pad = str(read_model_json(folder / "special_tokens_map.json").get("pad_token", "[PAD]"))
    pad_id = tokenizer.token_to_id(pad)
    if pad_id is None:
        raise ValueError(f"{path}: no id for the padding token {pad!r}")
    tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad)  # to the batch's longest
    return tokenizer


class BertEncoder:
    """The token vectors of a BERT model folder (module doc)."""

    def __init__(self, folder: Path, max_length: int, device: str = "cpu"):
        from safetensors.torch import load_file

        self.shape = BertShape.of(folder / "config.json")
        self.tokenizer = bert_tokenizer(folder, max_length)
        self.device = device
        self.weights_path = folder / "model.safetensors"
        try:
            self.weights = load_file(str(self.weights_path), device=device)
        except (OSError, RuntimeError) as error:  # missing file, or not safetensors
            raise ValueError(f"cannot read the model file {self.weights_path}: {error}") from None
        self.weight("embeddings.word_embeddings.weight")  # a folder of another layout fails here

    def weight(self, name: str):
        try:
            return self.weights[name]
        except KeyError:
            raise ValueError(f"{self.weights_path}: no tensor {name}") from None

    def tokens(self, texts: Sequence[str]):
        """input ids, token type ids and attention mask: (batch, longest) long tensors."""
        import torch

        encoded = self.tokenizer.encode_batch(list(texts))
        return tuple(
            torch.tensor([getattr(e, field) for e in encoded], dtype=torch.long, device=self.device)
            for field in ("ids", "type_ids", "attention_mask")
        )

    def hidden_states(self, ids, type_ids, mask):
        """The last layer's token vectors, (batch, length, hidden), under torch.inference_mode."""
        import torch
        import torch.nn.functional as F

        batch, length = ids.shape
        shape, w = self.shape, self.weight
        with torch.inference_mode():
            x = F.embedding(ids, w("embeddings.word_embeddings.weight")) + F.embedding(
                type_ids, w("embeddings.token_type_embeddings.weight")
            )
            positions = torch.arange(length, device=ids.device)[None, :]
            x = x + F.embedding(positions, w("embeddings.position_embeddings.weight"))
            x = self._norm(x, "embeddings.LayerNorm")
            # transformers passes no mask when nothing is padded (the faster kernel), else this one
            keys = (
                None if bool(mask.all()) else mask.bool()[:, None, None, :].expand(batch, 1, length, length)
            )
            for layer in range(shape.layers):
                x = self._layer(x, f"encoder.layer.{layer}.", keys)
        return x

    def _norm(self, x, name: str):
        import torch.nn.functional as F

        w = self.weight
        return F.layer_norm(
            x, (self.shape.hidden,), w(f"{name}.weight"), w(f"{name}.bias"), self.shape.layer_norm_eps
        )

    def _linear(self, x, name: str):
        import torch.nn.functional as F

        return F.linear(x, self.weight(f"{name}.weight"), self.weight(f"{name}.bias"))

    def _layer(self, x, prefix: str, keys):
        import torch.nn.functional as F

        batch, length, _ = x.shape
        head = self.shape.hidden // self.shape.heads
        q, k, v = (
            self._linear(x, f"{prefix}attention.self.{name}").view(batch, length, -1, head).transpose(1, 2)
            for name in ("query", "key", "value")
        )
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=keys, dropout_p=0.0, scale=head**-0.5)
        attended = attended.transpose(1, 2).contiguous().reshape(batch, length, -1)
        x = self._norm(
            self._linear(attended, f"{prefix}attention.output.dense") + x,
            f"{prefix}attention.output.LayerNorm",
        )
        inner = F.gelu(self._linear(x, f"{prefix}intermediate.dense"))
        return self._norm(self._linear(inner, f"{prefix}output.dense") + x, f"{prefix}output.LayerNorm")
