"""A LangGraph ``Auth`` with resource-specific handlers, as LangGraph's documentation shows
them: deny by default, permissions from ``authenticate``, ``$contains`` filters for sharing,
an owner-only update, an admin-only delete, and ``HTTPException`` with its own status."""

from typing import Any

from langgraph_sdk import Auth

USERS = {
    "alice-key": {"identity": "alice", "permissions": ["threads:write"], "org": "acme"},
    "bob-key": {"identity": "bob", "permissions": ["threads:write"], "org": "acme"},
    "carol-key": {"identity": "carol", "permissions": ["admin"], "org": "acme"},
    "eve-key": {"identity": "eve", "permissions": [], "org": "elsewhere"},
}

auth = Auth()


@auth.authenticate
async def authenticate(headers: dict, path: str, method: str) -> Auth.types.MinimalUserDict:
    api_key = headers.get("x-api-key")
    if api_key == b"teapot":
        raise Auth.exceptions.HTTPException(status_code=418, detail="I'm a teapot")
    user = USERS.get(api_key.decode() if api_key else "")
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid API key")
    return user


@auth.on
async def deny_all(ctx: Auth.types.AuthContext, value: Any) -> bool:
    return False


@auth.on.threads.create
async def on_thread_create(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create.value):
    if "threads:write" not in ctx.permissions:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail="User lacks the required permissions."
        )
    metadata = value.setdefault("metadata", {})
    metadata["owner"] = ctx.user.identity
    metadata["org"] = ctx.user["org"]
    metadata["participants"] = [ctx.user.identity, *metadata.pop("invite", [])]


@auth.on(resources="threads", actions=["read", "search"])
async def on_thread_read(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    return {"participants": {"$contains": ctx.user.identity}, "org": {"$eq": ctx.user.org}}


@auth.on.threads.update
async def on_thread_update(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    return {"owner": ctx.user.identity}


@auth.on.threads.delete
async def on_thread_delete(ctx: Auth.types.AuthContext, value: Any) -> bool:
    return "admin" in ctx.permissions
