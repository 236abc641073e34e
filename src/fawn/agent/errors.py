"""Agent errors."""

from __future__ import annotations


class AgentError(Exception):
    code = "agent_error"
    retryable = False


class UnknownModel(AgentError):
    code = "unknown_model"

    def __init__(self, name: str, available: list[str]) -> None:
        listed = ", ".join(available) if available else "none are configured"
        super().__init__(f"unknown model_name {name!r}; configured models: {listed}")
        self.name = name
        self.available = available


class NoModelConfigured(AgentError):
    code = "no_model_configured"

    def __init__(self) -> None:
        super().__init__(
            "no chat model is configured: add an entry under 'models:' in config.yaml "
            "(see config.example.yaml)"
        )


class ModelLoadError(AgentError):
    code = "model_load_error"
