"""Password hashing with Argon2id, and the rules a new password must meet.

Why Argon2id: it won the Password Hashing Competition and is OWASP's first recommendation;
it is memory-hard (each guess costs ``argon2_memory_kib`` of RAM, which is what makes GPU and
ASIC guessing expensive, unlike PBKDF2), it has no input length limit (bcrypt silently ignores
everything past 72 bytes), and the encoded hash carries its own parameters, so raising the
cost later re-hashes each password at its owner's next sign-in. Hashing runs in a worker
thread (argon2-cffi releases the GIL), never on the event loop.
"""

from __future__ import annotations

import asyncio
import functools

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from fawn.config.settings import PasswordSettings
from fawn.gateway.auth.errors import WeakPassword

#: Longer inputs are refused before hashing: a megabyte "password" is only a way to make the
#: server work.
MAX_PASSWORD_CHARS = 1024


class Passwords:
    def __init__(self, settings: PasswordSettings) -> None:
        self._settings = settings
        self._hasher = PasswordHasher(
            time_cost=settings.argon2_time_cost,
            memory_cost=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
            hash_len=32,
            salt_len=16,
            type=Type.ID,
        )

    @functools.cached_property
    def _decoy(self) -> str:
        # Verified against when the account does not exist, so an unknown email takes as long
        # to refuse as a wrong password (no account discovery by timing).
        return self._hasher.hash("decoy password, never matches")

    def check_new(self, password: str, email: str | None = None) -> None:
        """Raise :class:`WeakPassword` saying what is wrong with a password being set."""
        minimum = self._settings.min_length
        if len(password) < minimum:
            raise WeakPassword(f"the password must have at least {minimum} characters")
        if len(password) > MAX_PASSWORD_CHARS:
            raise WeakPassword(f"the password must have at most {MAX_PASSWORD_CHARS} characters")
        if len(set(password)) == 1:
            raise WeakPassword("the password must not repeat a single character")
        if email and password.casefold() in {email.casefold(), email.split("@")[0].casefold()}:
            raise WeakPassword("the password must not be the email address")

    async def hash(self, password: str) -> str:
        return await asyncio.to_thread(self._hasher.hash, password)

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """Whether ``password`` matches; a missing hash (an account without a password, or no
        account) costs one verification all the same and never matches."""
        if len(password) > MAX_PASSWORD_CHARS:
            return False
        if password_hash is None:
            await asyncio.to_thread(self._matches, self._decoy, password)
            return False
        return await asyncio.to_thread(self._matches, password_hash, password)

    def _matches(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, password_hash: str) -> bool:
        try:
            return self._hasher.check_needs_rehash(password_hash)
        except InvalidHashError:
            return True
