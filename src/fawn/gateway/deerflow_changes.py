"""A run's workspace changes in the shape DeerFlow's web app reads
(``GET /api/threads/{id}/runs/{run_id}/workspace-changes``): one entry per file with a
status, line counts and the diff, and a summary. fawn's own route (``…/changes``) is the
source; this only renames and counts."""

from __future__ import annotations

from typing import Any

from fawn.runs.changes import RunChanges

#: fawn's reason for a missing diff → DeerFlow's (``mode``: only the permission bits changed,
#: which has no diff in either)
_UNAVAILABLE = {
    "binary": "binary",
    "too_large": "large",
    "budget": "truncated",
    "symlink": "symlink",
}
_ROOTS = ("workspace", "outputs", "uploads")


def empty() -> dict[str, Any]:
    """Nothing recorded (yet): the run is still going, never executed, or evidence is off."""
    return {"available": False, "version": 1, "summary": _summary([]), "files": [], "limits": {}}


def workspace_changes(
    changes: RunChanges, *, include_files: bool, include_diff: bool
) -> dict[str, Any]:
    if not changes.recorded:
        return empty()
    files = [
        *(
            _file(c, "symlink_created" if c.get("type") == "symlink" else "created")
            for c in changes.added
        ),
        *(_file(c, "modified") for c in changes.modified),
        *(_file(c, "deleted") for c in changes.deleted),
    ]
    summary = _summary(files)
    if not include_files:
        files = []
    elif not include_diff:
        files = [{**f, "diff": ""} for f in files]
    return {"available": True, "version": 1, "summary": summary, "files": files, "limits": {}}


def _file(change: dict[str, Any], status: str) -> dict[str, Any]:
    path = str(change.get("path") or "")
    diff = change.get("diff") or ""
    additions, deletions = _lines(diff)
    symlink = change.get("type") == "symlink"
    target = change.get("target")
    omitted = change.get("diff_omitted")
    return {
        "path": path,
        "root": next((r for r in _ROOTS if f"/{r}/" in f"{path}/"), ""),
        "status": status,
        "binary": omitted == "binary",
        "sensitive": False,
        "size_before": change.get("size_before"),
        "size_after": change.get("size_after"),
        "sha256_before": None,
        "sha256_after": None,
        "diff": diff,
        "diff_truncated": bool(change.get("diff_truncated")),
        "diff_unavailable_reason": _UNAVAILABLE.get(str(omitted)) if omitted else None,
        "additions": additions,
        "deletions": deletions,
        "symlink": symlink,
        "symlink_target_before": (
            (change.get("target_before") or (target if status == "deleted" else None))
            if symlink
            else None
        ),
        "symlink_target_after": target if symlink and status != "deleted" else None,
    }


def _lines(diff: str) -> tuple[int, int]:
    """Added and removed lines of a unified diff (its ``---``/``+++`` headers excluded)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _summary(files: list[dict[str, Any]]) -> dict[str, Any]:
    def count(status: str) -> int:
        return sum(1 for f in files if f["status"] == status)

    return {
        "created": count("created"),
        "modified": count("modified"),
        "deleted": count("deleted"),
        "symlink_created": count("symlink_created"),
        "additions": sum(f["additions"] for f in files),
        "deletions": sum(f["deletions"] for f in files),
        "truncated": any(
            f["diff_truncated"] or f["diff_unavailable_reason"] == "truncated" for f in files
        ),
    }
