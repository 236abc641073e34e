"""Test doubles shipped with fawn: a scripted chat model and its script format.

LangChain ships its fake chat models in the package; fawn does the same with
:class:`ScriptedChatModel` (configure it under ``models:`` with
``use: fawn.testing.fake_model:ScriptedChatModel``). The scripted OpenAI-compatible HTTP
server lives in the test suite (``tests/support/openai_stub.py``), not in the installed
package. The product never imports this package (import-linter contract in pyproject.toml).
Names are imported lazily so that importing the script format does not pay for
langchain_core.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fawn.testing.fake_model import ScriptedChatModel, ScriptedModelError
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
    "ScriptError",
    "ScriptedChatModel",
    "ScriptedError",
    "ScriptedModelError",
    "ScriptedToolCall",
    "ToolCallSpec",
    "Turn",
    "TurnSpec",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
