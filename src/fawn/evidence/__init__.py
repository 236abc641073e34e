"""Evidence of what a run did to its thread's files: content-addressed snapshots of
``workspace/`` and ``outputs/``, the changes between two of them, and restoring one.

The design is git's object store and index, reduced to what a run needs:

- :mod:`fawn.evidence.objects`: blobs and trees named by their SHA-256, written once;
- :mod:`fawn.evidence.snapshot`: a walk that stats every entry and hashes only what the
  per-thread stat cache cannot vouch for, so an unchanged workspace costs one ``lstat`` per
  file and storage grows only with changed content;
- :mod:`fawn.evidence.changes`: added / modified / deleted between two snapshots, with
  size-limited text diffs;
- :mod:`fawn.evidence.restore`: make a directory equal to a snapshot again;
- :mod:`fawn.evidence.store`: one thread's evidence (snapshots per run, retention).

Every file operation goes through directory descriptors opened with ``O_NOFOLLOW``: a
symlink planted in a workspace is recorded as a link and never followed, when reading or
when restoring.
"""

from fawn.evidence.changes import Change, ChangeLimits, Changes
from fawn.evidence.errors import EvidenceError, SnapshotMissing
from fawn.evidence.store import EvidenceStore, RunSnapshot, ThreadEvidence

__all__ = [
    "Change",
    "ChangeLimits",
    "Changes",
    "EvidenceError",
    "EvidenceStore",
    "RunSnapshot",
    "SnapshotMissing",
    "ThreadEvidence",
]
