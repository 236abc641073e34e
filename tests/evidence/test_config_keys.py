"""The ``evidence`` and ``checkpoints`` config sections: documented defaults, clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fawn.config.loader import ConfigError, load_config, parse_config
from fawn.config.settings import CheckpointSettings, EvidenceSettings

REPO = Path(__file__).resolve().parents[2]


def test_the_example_config_states_the_defaults() -> None:
    config = load_config(REPO / "config.example.yaml", {"OPENAI_API_KEY": "sk-test"})
    assert config.evidence == EvidenceSettings()
    assert config.checkpoints == CheckpointSettings()
    assert (config.evidence.keep_runs, config.checkpoints.durability) == (20, "async")
    assert (config.checkpoints.mode, config.checkpoints.keyframe_every) == ("full", 100)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"evidence": {"exclude": ["ok", "a/b"]}},
            "invalid config: evidence.exclude: 'a/b' is not a directory name",
        ),
        (
            {"evidence": {"keep_runs": 0}},
            "invalid config: evidence.keep_runs: Input should be greater than or equal to 1",
        ),
        (
            {"checkpoints": {"durability": "later"}},
            "invalid config: checkpoints.durability: Input should be 'sync', 'async' or 'exit'",
        ),
        (
            {"checkpoints": {"mode": "diff"}},
            "invalid config: checkpoints.mode: Input should be 'full' or 'delta'",
        ),
        (
            {"checkpoints": {"keyframe_every": 0}},
            "invalid config: checkpoints.keyframe_every: Input should be greater than or equal "
            "to 1",
        ),
    ],
)
def test_invalid_values_name_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(raw, {})
    assert str(raised.value) == message
