"""One settings object per config block: fields equal to the schema's keys, defaults only from the schema."""

from __future__ import annotations

import dataclasses

import pytest

from omnisocial.config import load_config
from omnisocial.settings import BLOCKS, Filters, Glmm, Signals, Vad, block_schema, schema_defaults


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.name())
def test_the_fields_are_the_schemas_keys(block):
    fields = [field.name for field in dataclasses.fields(block)]
    assert fields == list(block_schema(block.PATH)["properties"])


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.name())
def test_an_empty_block_takes_the_schemas_defaults(block):
    settings = block.of()
    for key, default in schema_defaults(block.PATH).items():
        value = getattr(settings, key)
        assert value == (tuple(default) if isinstance(default, list) else default), key


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.name())
def test_the_demo_config_builds_every_block(block):
    config = load_config("config/demo.yaml")
    part = config
    for key in block.PATH:
        part = part[key]
    settings = block.of(part)
    assert {key: getattr(settings, key) for key in part} == {
        key: tuple(value) if isinstance(value, list) else value for key, value in part.items()
    }


def test_an_unknown_key_is_named():
    with pytest.raises(ValueError, match=r"signals\.crosstalk_margin "):
        Signals.of({"crosstalk_margin": 6.0})
    with pytest.raises(ValueError, match=r"analysis\.glmm\.draw "):
        Glmm.of({"draw": 10})


def test_settings_are_frozen_and_typed():
    signals = Signals.of({"crosstalk_margin_db": 6, "bleed_path_s": None})
    assert signals.crosstalk_margin_db == 6.0 and isinstance(signals.crosstalk_margin_db, float)
    assert signals.bleed_path_s is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        signals.hop_s = 0.01
    assert Filters.of().placeholder_prompts[0] == ""
    assert Vad.of(restart_s=None).restart_s is None


def test_a_null_margin_turns_attribution_and_bleed_cancelling_off():
    assert Signals.of().attributes and Signals.of().cancels_bleed
    off = Signals.of(crosstalk_margin_db=None)
    assert not off.attributes and not off.cancels_bleed
    assert not Signals.of(cancel_bleed=False).cancels_bleed and Signals.of(cancel_bleed=False).attributes
