"""Content-addressed objects: blobs (file contents) and trees (directory listings).

An object's name is the SHA-256 of its bytes; it is written once (to a temporary name,
then renamed) and never changed, so readers never see a partial object and two writers of
the same content agree. Objects live under ``<root>/<first two hex digits>/<the rest>``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from collections import OrderedDict
from collections.abc import Iterator
from io import BufferedReader
from pathlib import Path
from typing import Literal

from fawn.evidence.errors import ObjectMissing

#: ``f``: a regular file (ref: blob, size in bytes), ``l``: a symlink (ref: its target),
#: ``d``: a directory (ref: tree)
Kind = Literal["f", "l", "d"]
#: one entry of a tree: name, kind, permission bits, ref, size
TreeEntry = tuple[str, Kind, int, str, int]
Tree = tuple[TreeEntry, ...]

_CHUNK = 1 << 20
#: files up to this size are read into memory and hashed before anything is written
_IN_MEMORY = 4 << 20
_TREE_CACHE = 4096


class ObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._trees: OrderedDict[str, Tree] = OrderedDict()

    def path(self, name: str) -> Path:
        return self.root / name[:2] / name[2:]

    def has(self, name: str) -> bool:
        return os.path.exists(self.path(name))

    def put_bytes(self, data: bytes) -> str:
        name = hashlib.sha256(data).hexdigest()
        if not self.has(name):
            self._install(name, iter((data,)))
        return name

    def put_file(self, dir_fd: int, filename: str) -> tuple[str, int] | None:
        """Store the regular file ``filename`` of ``dir_fd`` (never through a symlink);
        its name and size, or None when it is gone or no longer a regular file."""
        try:
            fd = os.open(
                filename, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
            )
        except OSError:  # gone, or replaced by a symlink (ELOOP)
            return None
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size <= _IN_MEMORY:
                data = handle.read()
                return self.put_bytes(data), len(data)
            return self._put_stream(handle)

    def _put_stream(self, handle: BufferedReader) -> tuple[str, int]:
        """A large file: copied to a temporary object while it is hashed."""
        digest = hashlib.sha256()
        size = 0
        temp = self._temp()
        with open(temp, "wb") as out:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
        name = digest.hexdigest()
        self._settle(temp, name)
        return name, size

    def read(self, name: str) -> bytes:
        try:
            return self.path(name).read_bytes()
        except FileNotFoundError as exc:
            raise ObjectMissing(f"object {name} is not stored") from exc

    def chunks(self, name: str) -> Iterator[bytes]:
        try:
            handle = open(self.path(name), "rb")  # noqa: SIM115 - closed by the generator
        except FileNotFoundError as exc:
            raise ObjectMissing(f"object {name} is not stored") from exc
        with handle:
            while chunk := handle.read(_CHUNK):
                yield chunk

    # -- trees ---------------------------------------------------------------------------

    def put_tree(self, tree: Tree) -> str:
        data = json.dumps(tree, separators=(",", ":")).encode()  # names may hold surrogates
        name = self.put_bytes(data)
        self._remember(name, tree)
        return name

    def tree(self, name: str) -> Tree:
        cached = self._trees.get(name)
        if cached is not None:
            self._trees.move_to_end(name)
            return cached
        raw = json.loads(self.read(name))
        tree: Tree = tuple((str(n), k, int(m), str(r), int(s)) for n, k, m, r, s in raw)
        self._remember(name, tree)
        return tree

    def _remember(self, name: str, tree: Tree) -> None:
        self._trees[name] = tree
        self._trees.move_to_end(name)
        while len(self._trees) > _TREE_CACHE:
            self._trees.popitem(last=False)

    # -- housekeeping --------------------------------------------------------------------

    def names(self) -> Iterator[str]:
        """Every stored object's name."""
        try:
            fans = os.scandir(self.root)
        except FileNotFoundError:
            return
        with fans:
            for fan in fans:
                if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(fan.path) as items:
                    for item in items:
                        yield fan.name + item.name

    def remove(self, name: str) -> None:
        self._trees.pop(name, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(name))

    # -- writing -------------------------------------------------------------------------

    def _temp(self) -> Path:
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return tmp / secrets.token_hex(8)

    def _install(self, name: str, chunks: Iterator[bytes]) -> None:
        temp = self._temp()
        with open(temp, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        self._settle(temp, name)

    def _settle(self, temp: Path, name: str) -> None:
        target = self.path(name)
        if target.exists():
            temp.unlink(missing_ok=True)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(temp, 0o444)
        os.replace(temp, target)
