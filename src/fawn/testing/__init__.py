"""Test doubles for fawn: a scripted OpenAI-compatible server and a scripted chat model.

Only tests and benchmarks import this package; the product never does (import-linter
contract in pyproject.toml). Names are imported lazily so that
``python -m fawn.testing.openai_stub`` does not import its own module twice, and a benchmark
using only the stub does not pay for langchain_core.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fawn.testing.fake_model import ScriptedChatModel, ScriptedModelError
    from fawn.testing.openai_stub import OpenAIStub, StubServerThread, run_in_thread
    from fawn.testing.registry import Script, ScriptRegistry
    from fawn.testing.script import (
        ErrorSpec,
        ScriptedError,
        ScriptedToolCall,
        ScriptError,
        ToolCallSpec,
        Turn,
        TurnSpec,
    )

_HOMES = {
    "ScriptedChatModel": "fake_model",
    "ScriptedModelError": "fake_model",
    "OpenAIStub": "openai_stub",
    "StubServerThread": "openai_stub",
    "run_in_thread": "openai_stub",
    "Script": "registry",
    "ScriptRegistry": "registry",
    "ErrorSpec": "script",
    "ScriptedError": "script",
    "ScriptedToolCall": "script",
    "ScriptError": "script",
    "ToolCallSpec": "script",
    "Turn": "script",
    "TurnSpec": "script",
}

__all__ = [
    "ErrorSpec",
    "OpenAIStub",
    "Script",
    "ScriptError",
    "ScriptRegistry",
    "ScriptedChatModel",
    "ScriptedError",
    "ScriptedModelError",
    "ScriptedToolCall",
    "StubServerThread",
    "ToolCallSpec",
    "Turn",
    "TurnSpec",
    "run_in_thread",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
