"""``auth.mode: none`` serves only the loopback interface: anyone who can reach the port is
the one user, so reaching it must mean being on this machine."""

from __future__ import annotations

import ipaddress

from fawn.config.settings import AppConfig

REFUSAL = (
    "refusing to listen on {host} without authentication (auth.mode is none): anyone who can "
    "reach this address could read every thread and run commands in its sandbox. Enable "
    "accounts with `auth: {{mode: local}}` in the config file (then create the first admin "
    "with `fawn users create --email you@example.com --role admin`, or open the web app's "
    "setup page), or, if something in front of fawn already authenticates every request, "
    "say so explicitly with `auth: {{mode: none, allow_remote_without_auth: true}}`."
)


def is_loopback(host: str) -> bool:
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_problem(config: AppConfig, host: str | None = None) -> str | None:
    """Why this server must not start, or None."""
    bound = config.server.host if host is None else host
    auth = config.auth
    if auth.mode == "none" and not auth.allow_remote_without_auth and not is_loopback(bound):
        return REFUSAL.format(host=bound)
    return None
