"""Typed settings, read once at the edge and passed down."""

from fawn.config.errors import ConfigError
from fawn.config.loader import find_config_path, load_config, parse_config
from fawn.config.settings import (
    AgentSettings,
    AppConfig,
    AuthSettings,
    DatabaseSettings,
    ModelSettings,
    RunSettings,
    SandboxSettings,
    ServerSettings,
    StreamSettings,
    SummarizationSettings,
    TitleSettings,
    UploadSettings,
)

__all__ = [
    "AgentSettings",
    "AppConfig",
    "AuthSettings",
    "ConfigError",
    "DatabaseSettings",
    "ModelSettings",
    "RunSettings",
    "SandboxSettings",
    "ServerSettings",
    "StreamSettings",
    "SummarizationSettings",
    "TitleSettings",
    "UploadSettings",
    "find_config_path",
    "load_config",
    "parse_config",
]
