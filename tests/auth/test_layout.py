"""Per-user file layout: a thread's files live under its owner's directory,
``<data_dir>/users/<user>/threads/<thread>/user-data``; copies go under the copier's."""

from __future__ import annotations

from tests.auth.parties import Party
from tests.support.live import LiveServer


async def test_thread_files_live_under_the_owner(
    accounts_server: LiveServer, people: tuple[Party, Party, Party]
) -> None:
    alice, _, admin = people
    tid = (await alice.sdk.threads.create())["thread_id"]
    response = await alice.api.post(
        f"/api/threads/{tid}/uploads", files={"files": ("plan.md", b"# plan")}
    )
    assert response.status_code == 200
    thread_dir = accounts_server.data_dir / "users" / alice.user_id / "threads" / tid
    assert (thread_dir / "user-data" / "uploads" / "plan.md").read_bytes() == b"# plan"
    assert not (accounts_server.data_dir / "threads" / tid).exists()

    copy = (await admin.sdk.threads.copy(tid))["thread_id"]
    copied = accounts_server.data_dir / "users" / admin.user_id / "threads" / copy
    assert (copied / "user-data" / "uploads" / "plan.md").read_bytes() == b"# plan"

    await alice.sdk.threads.delete(tid)
    assert not thread_dir.exists()
    assert copied.exists()
