"""Errors of the evidence store."""

from __future__ import annotations


class EvidenceError(Exception):
    """Root of the evidence store's errors."""

    code = "evidence_error"
    retryable = False


class SnapshotMissing(EvidenceError):
    """No snapshot was recorded for the run (it never started, or it was pruned)."""

    code = "snapshot_missing"


class ObjectMissing(EvidenceError):
    """A snapshot refers to content that is no longer stored."""

    code = "object_missing"
