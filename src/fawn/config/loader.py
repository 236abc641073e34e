"""Find, read and validate ``config.yaml``.

Resolution order for the file: an explicit path (``--config``), then ``$FAWN_CONFIG``, then
``./config.yaml``; when none exists the built-in defaults apply. String values of the form
``$NAME`` (the whole value) are replaced by the environment variable ``NAME``; a missing
variable is an error that names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from fawn.config.errors import ConfigError
from fawn.config.settings import AppConfig

_ENV_REF = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


def find_config_path(explicit: Path | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The config file to read, or None for built-in defaults."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        return explicit
    from_env = environ.get("FAWN_CONFIG")
    if from_env:
        path = Path(from_env)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path} (from FAWN_CONFIG)")
        return path
    local = cwd / "config.yaml"
    return local if local.is_file() else None


def expand_env(value: Any, environ: Mapping[str, str], where: str = "") -> Any:
    """Replace ``$NAME`` string values, recursively. Raises ConfigError naming what is missing."""
    if isinstance(value, str):
        match = _ENV_REF.match(value.strip())
        if match is None:
            return value
        name = match.group(1)
        if name not in environ:
            raise ConfigError(
                f"environment variable ${name} is not set (needed by {where or 'config'})"
            )
        return environ[name]
    if isinstance(value, dict):
        return {
            k: expand_env(v, environ, f"{where}.{k}" if where else str(k)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [expand_env(v, environ, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def parse_config(raw: Mapping[str, Any], environ: Mapping[str, str]) -> AppConfig:
    """Validate an already-parsed mapping into :class:`AppConfig`."""
    unknown = sorted(set(raw) - set(AppConfig.model_fields))
    if unknown:
        known = ", ".join(sorted(AppConfig.model_fields))
        raise ConfigError(f"unknown config section(s): {', '.join(unknown)} (known: {known})")
    expanded = expand_env(dict(raw), environ)
    try:
        return AppConfig.model_validate(expanded)
    except ValidationError as exc:
        raise ConfigError(f"invalid config: {_problems(exc)}") from exc


def _problems(exc: ValidationError) -> str:
    """``models[0].use: 'use' must look like ...``: the same paths as the $VAR errors."""
    problems = []
    for err in exc.errors():
        where = ""
        for part in err["loc"]:
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else part)
        message = err["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def load_config(
    path: Path | None,
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
) -> AppConfig:
    """Read ``path`` (or use defaults when None), apply top-level ``overrides``, validate."""
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        raw = loaded
    if overrides:
        raw = {**raw, **overrides}
    config = parse_config(raw, environ)
    return _relative_to(config, path.parent) if path is not None else config


def _relative_to(config: AppConfig, base: Path) -> AppConfig:
    """A custom ``Auth`` file (``./auth.py:auth``) is found next to the config file, as
    ``langgraph.json`` finds its ``auth.path``."""
    custom = config.auth.custom
    if custom is None:
        return config
    target, _, name = custom.path.rpartition(":")
    if not (target.endswith(".py") or "/" in target) or Path(target).is_absolute():
        return config
    resolved = custom.model_copy(update={"path": f"{(base / target).resolve()}:{name}"})
    auth = config.auth.model_copy(update={"custom": resolved})
    return config.model_copy(update={"auth": auth})
