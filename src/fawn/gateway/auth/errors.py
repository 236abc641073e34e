"""Authentication and authorization errors: one root, each with a code and an HTTP status in
:data:`fawn.gateway.errors.STATUS_BY_CODE`. Codes match DeerFlow's where the two overlap, so
its web app shows the right message."""

from __future__ import annotations

from collections.abc import Mapping

#: ``WWW-Authenticate`` for 401s: a program learns which scheme to send.
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="fawn"'}


class AuthError(Exception):
    code = "auth_error"
    retryable = False

    def __init__(self, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.headers = dict(headers or {})


class NotAuthenticated(AuthError):
    code = "not_authenticated"

    def __init__(self, message: str = "authentication required") -> None:
        super().__init__(
            f"{message}: sign in (POST /api/v1/auth/login/local), or send an API key as "
            "'Authorization: Bearer <key>' or 'x-api-key: <key>'",
            headers=_CHALLENGE,
        )


class InvalidToken(AuthError):
    code = "token_invalid"

    def __init__(self, message: str) -> None:
        super().__init__(message, headers=_CHALLENGE)


class TokenExpired(AuthError):
    code = "token_expired"

    def __init__(self) -> None:
        super().__init__("the session expired: sign in again", headers=_CHALLENGE)


class InvalidCredentials(AuthError):
    code = "invalid_credentials"


class CsrfFailed(AuthError):
    code = "csrf_failed"


class Forbidden(AuthError):
    code = "forbidden"


class ServerOwnedField(AuthError):
    """A client tried to write a field only the server sets (the owner of a thread)."""

    code = "server_owned_field"


class RegistrationDisabled(AuthError):
    code = "registration_disabled"


class WeakPassword(AuthError):
    code = "weak_password"


class InvalidEmail(AuthError):
    code = "invalid_email"


class AuthUnavailable(AuthError):
    """The route belongs to a mode this server does not run in."""

    code = "auth_mode_mismatch"


class TooManyAttempts(AuthError):
    code = "too_many_attempts"
    retryable = True

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"too many sign-in attempts from this address: try again in {retry_after} s",
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after


class SignInFailed(AuthError):
    """The identity provider could not be reached or its answer did not verify."""

    code = "sso_failed"


class AuthHandlerError(AuthError):
    """The configured LangGraph ``Auth`` handler failed or returned something unusable."""

    code = "auth_handler_error"


class HandlerRejected(AuthError):
    """A LangGraph ``Auth`` handler raised ``Auth.exceptions.HTTPException``: its status and
    detail are answered as they are."""

    code = "auth_handler_rejected"

    def __init__(
        self, status_code: int, detail: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(detail, headers=headers)
        self.status_code = status_code
