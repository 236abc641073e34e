"""Store errors: one root, with fields a caller can act on."""

from __future__ import annotations


class StoreError(Exception):
    code = "store_error"
    retryable = False


class ThreadExists(StoreError):
    code = "thread_exists"

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id} already exists")
        self.thread_id = thread_id


class ThreadNotFound(StoreError):
    code = "thread_not_found"

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id} not found")
        self.thread_id = thread_id


class CheckpointModeMismatch(StoreError):
    """The thread's checkpoints were written in the other checkpoint mode: this server would
    misread them, so it refuses the thread."""

    code = "checkpoint_mode_mismatch"

    def __init__(self, thread_id: str, thread_mode: str, server_mode: str) -> None:
        super().__init__(
            f"thread {thread_id} was created in checkpoint mode '{thread_mode}' and this "
            f"server runs checkpoints.mode '{server_mode}': it refuses the thread rather "
            f"than misread its checkpoints (serve it from a server in '{thread_mode}' mode)"
        )
        self.thread_id = thread_id
        self.thread_mode = thread_mode
        self.server_mode = server_mode


class RunConflict(StoreError):
    """The thread already has an active run and the request may not wait for it."""

    code = "run_conflict"
    retryable = True


class StoreUnavailable(StoreError):
    """The database could not be reached (or dropped the connection); trying again later
    may work. Nothing of the failed operation was written."""

    code = "store_unavailable"
    retryable = True


class EmailTaken(StoreError):
    code = "email_already_exists"

    def __init__(self, email: str) -> None:
        super().__init__(f"an account with the email {email} already exists")
        self.email = email


class AlreadyInitialized(StoreError):
    """The first admin exists: ``initialize`` is closed for good."""

    code = "system_already_initialized"

    def __init__(self) -> None:
        super().__init__("the system is already initialized: an admin account exists")


class UserNotFound(StoreError):
    code = "user_not_found"

    def __init__(self, who: str) -> None:
        super().__init__(f"no user {who}")
        self.who = who
