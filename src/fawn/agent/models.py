"""Model factory: chat models built from the ``models:`` config, cached per variant."""

from __future__ import annotations

import importlib
import logging
from typing import Any

from langchain_core.language_models import BaseChatModel

from fawn.agent.errors import ModelLoadError, NoModelConfigured, UnknownModel
from fawn.config.settings import AppConfig, ModelSettings

log = logging.getLogger(__name__)

_DECLARED = {
    "name",
    "display_name",
    "use",
    "supports_thinking",
    "supports_vision",
    "supports_reasoning_effort",
    "when_thinking_enabled",
    "description",
    "api_base",
}


def import_class(path: str) -> type[BaseChatModel]:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise ModelLoadError(f"cannot import model class {path!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, BaseChatModel)):
        raise ModelLoadError(f"{path!r} is not a LangChain chat model class")
    return cls


class ModelFactory:
    """Builds and caches chat models by (name, thinking, reasoning effort)."""

    def __init__(self, config: AppConfig) -> None:
        self._config = config
        self._cache: dict[tuple[str, bool, str | None], BaseChatModel] = {}

    @property
    def names(self) -> list[str]:
        return [m.name for m in self._config.models]

    def settings(self, name: str | None) -> ModelSettings:
        """The settings of ``name`` (None: the default model). Raises on unknown/none."""
        if name is None:
            default = self._config.default_model
            if default is None:
                raise NoModelConfigured()
            return default
        found = self._config.model_by_name(name)
        if found is None:
            raise UnknownModel(name, self.names)
        return found

    def get(
        self,
        name: str | None = None,
        *,
        thinking_enabled: bool = False,
        reasoning_effort: str | None = None,
        warnings: list[str] | None = None,
    ) -> BaseChatModel:
        settings = self.settings(name)
        thinking = thinking_enabled and settings.supports_thinking
        effort = reasoning_effort if settings.supports_reasoning_effort else None
        if warnings is not None:
            if thinking_enabled and not settings.supports_thinking:
                warnings.append(f"model {settings.name!r} does not support thinking; ignored")
            if reasoning_effort and not settings.supports_reasoning_effort:
                warnings.append(
                    f"model {settings.name!r} does not support reasoning_effort; ignored"
                )
        key = (settings.name, thinking, effort)
        model = self._cache.get(key)
        if model is None:
            model = self._build(settings, thinking=thinking, effort=effort)
            self._cache[key] = model
        return model

    def _build(
        self, settings: ModelSettings, *, thinking: bool, effort: str | None
    ) -> BaseChatModel:
        cls = import_class(settings.use)
        kwargs: dict[str, Any] = {
            k: v for k, v in settings.model_dump(exclude_none=True).items() if k not in _DECLARED
        }
        if settings.api_base and "base_url" not in kwargs:
            kwargs["base_url"] = settings.api_base
        if thinking and settings.when_thinking_enabled:
            kwargs.update(settings.when_thinking_enabled)
        if effort is not None:
            kwargs["reasoning_effort"] = effort
        # Token usage is part of the run record: ask streaming providers to report it.
        if "stream_usage" in getattr(cls, "model_fields", {}) and "stream_usage" not in kwargs:
            kwargs["stream_usage"] = True
        try:
            return cls(**kwargs)
        except Exception as exc:  # a provider's constructor validation
            raise ModelLoadError(f"cannot build model {settings.name!r}: {exc}") from exc
