"""Which paths need no credential, and which sign a user in (no CSRF token yet)."""

from __future__ import annotations

AUTH_PREFIX = "/api/v1/auth"

#: Reachable without a credential (a credential, when valid, is still recognised).
PUBLIC_PATHS = frozenset(
    {
        "/",
        "/ok",
        "/info",
        "/openapi.json",
        "/docs",
        "/docs/oauth2-redirect",
        "/redoc",
        "/favicon.ico",
        f"{AUTH_PREFIX}/setup-status",
        f"{AUTH_PREFIX}/providers",
        f"{AUTH_PREFIX}/login/local",
        f"{AUTH_PREFIX}/register",
        f"{AUTH_PREFIX}/initialize",
        f"{AUTH_PREFIX}/logout",
    }
)
PUBLIC_PREFIXES = (f"{AUTH_PREFIX}/oauth/", f"{AUTH_PREFIX}/callback/", "/_ui/")

#: Sign-in routes: no CSRF token yet (the page has none before signing in), so a foreign
#: Origin is refused instead. Sign-out is here too: DeerFlow's web app sends no token with it.
SIGN_IN_PATHS = frozenset(
    {
        f"{AUTH_PREFIX}/login/local",
        f"{AUTH_PREFIX}/register",
        f"{AUTH_PREFIX}/initialize",
        f"{AUTH_PREFIX}/logout",
    }
)


def is_public(path: str) -> bool:
    stripped = path.rstrip("/") or "/"
    return stripped in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
