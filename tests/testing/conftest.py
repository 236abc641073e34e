"""Fixtures for the fawn.testing suite: one stub server shared by the session."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from langchain_openai import ChatOpenAI

from tests.support.openai_stub import OpenAIStub


@pytest.fixture(scope="session")
async def stub() -> AsyncIterator[OpenAIStub]:
    async with OpenAIStub() as server:
        yield server


@pytest.fixture
def key() -> str:
    """A script key no other test uses, so tests can share the stub."""
    return f"key-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def chat(stub: OpenAIStub) -> Callable[..., ChatOpenAI]:
    """Build the real provider client pointed at the stub."""

    def build(**overrides: Any) -> ChatOpenAI:
        options: dict[str, Any] = {
            "model": "stub",
            "api_key": "x",
            "base_url": stub.base_url,
            "max_retries": 0,
            "stream_usage": True,
        }
        return ChatOpenAI(**(options | overrides))

    return build


@pytest.fixture
async def http(stub: OpenAIStub) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{stub.port}") as client:
        yield client
