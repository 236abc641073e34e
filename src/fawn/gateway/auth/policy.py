"""Which models and tools a role may use (``auth.policy``): the model is checked when a run is
admitted, the tools travel with the run to the agent's tool policy middleware."""

from __future__ import annotations

from fawn.config.settings import AppConfig
from fawn.gateway.auth.errors import AuthError
from fawn.gateway.auth.principal import Principal


class ModelNotAllowed(AuthError):
    code = "model_not_allowed"


def check_model(config: AppConfig, principal: Principal, model_name: str | None) -> None:
    """403 naming the model when the caller's role may not use it (``None``: the default)."""
    chosen = model_name or (config.default_model.name if config.default_model else None)
    if chosen is None or config.model_by_name(chosen) is None:
        return  # unknown or no model: admission refuses it with its own message
    policy = config.auth.policy.for_role(principal.role)
    if not policy.allows_model(chosen):
        allowed = [m.name for m in config.models if policy.allows_model(m.name)]
        raise ModelNotAllowed(
            f"model {chosen!r} is not allowed for the role {principal.role!r} "
            f"(auth.policy.{principal.role}.models); allowed: {', '.join(allowed) or 'none'}"
        )


def visible_models(config: AppConfig, principal: Principal) -> list[str]:
    policy = config.auth.policy.for_role(principal.role)
    return [m.name for m in config.models if policy.allows_model(m.name)]


def allowed_tools(config: AppConfig, principal: Principal) -> tuple[str, ...] | None:
    tools = config.auth.policy.for_role(principal.role).allowed_tools()
    return None if tools is None else tuple(sorted(tools))
