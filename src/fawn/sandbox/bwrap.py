"""The bubblewrap command line for one sandboxed command.

:func:`build_argv` is pure: everything it needs, including what the host's root looks like,
comes in a :class:`BwrapSpec`, so the exact isolation can be read (and tested) as data.
:func:`host_system_layout` is the one function here that looks at the host.

What the command gets:

* ``/usr`` read-only, and ``/bin``, ``/lib``... as the host has them (symlinks into ``/usr``
  on a merged-/usr system, read-only binds otherwise);
* from ``/etc`` only what programs need to start (the dynamic linker cache, alternatives,
  CA certificates...), plus a synthetic ``passwd``/``group``/``hosts``; never the host's
  ``/etc/shadow``, nor ``/root`` or ``/home``;
* a private ``/proc``, a minimal ``/dev``, an empty ``/tmp``;
* the thread's mounts (:class:`Bind`), with every other path read-only (``--remount-ro /``);
* new user, PID, IPC, UTS, cgroup and network namespaces (the network is shared only when
  asked), an unprivileged uid with no capabilities, a new session, death with its parent,
  and an environment reduced to a few fixed variables;
* no further user namespace (``--disable-userns``), the seccomp filter of
  :mod:`fawn.sandbox.seccomp` (``--seccomp FD``), size-capped ``/tmp`` and ``/dev/shm``,
  and resource limits set by ``prlimit`` (from util-linux) before the shell starts: the
  limits are taken inside the sandbox's own user namespace, so the process count is the
  command's own, not the host uid's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

SANDBOX_UID = 1000
SANDBOX_GID = 1000

# Candidates at the root of the host that system programs rely on, besides /usr.
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

# /etc entries bound read-only when present: what programs need, nothing that holds secrets.
# (The sandbox uid maps to the server's uid, so it could read whatever the server can read;
# hence a short allow-list rather than /etc minus a deny-list.)
ETC_ALLOWLIST = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
)
# With the network shared, name resolution needs the host's view of it.
ETC_NETWORK_ALLOWLIST = ("/etc/resolv.conf", "/etc/hosts")

SANDBOX_PASSWD = (
    "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
    f"sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:/mnt/user-data/workspace:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
SANDBOX_GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_GID}:\nnogroup:x:65534:\n"
SANDBOX_HOSTS = "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"


@dataclass(frozen=True)
class Bind:
    """A host path mounted at ``dest``; ``optional`` skips it when the source is missing."""

    source: str
    dest: str
    writable: bool = False
    optional: bool = False

    def args(self) -> list[str]:
        if self.writable:
            option = "--bind-try" if self.optional else "--bind"
        else:
            option = "--ro-bind-try" if self.optional else "--ro-bind"
        return [option, self.source, self.dest]


@dataclass(frozen=True)
class Rlimits:
    """Per-process resource limits, soft and hard alike (the command cannot raise them).

    CPU time gets one second more of hard limit, so that the command first receives
    ``SIGXCPU`` (which says why) rather than a bare ``SIGKILL``.
    """

    address_space: int
    processes: int
    cpu_seconds: int
    file_size: int
    open_files: int

    def args(self, prlimit: str) -> list[str]:
        return [
            prlimit,
            f"--as={self.address_space}",
            f"--nproc={self.processes}",
            f"--cpu={self.cpu_seconds}:{self.cpu_seconds + 1}",
            f"--fsize={self.file_size}",
            f"--nofile={self.open_files}",
            "--core=0",
            "--",
        ]


@dataclass(frozen=True)
class Symlink:
    """A symlink ``path -> target`` created inside the sandbox (``/bin -> usr/bin``)."""

    target: str
    path: str

    def args(self) -> list[str]:
        return ["--symlink", self.target, self.path]


@dataclass(frozen=True)
class BwrapSpec:
    """The inputs of :func:`build_argv`."""

    bwrap: str
    system: tuple[Bind | Symlink, ...]
    mounts: tuple[Bind, ...]
    cwd: str
    env: Mapping[str, str]
    network: bool = False
    # Files whose content bwrap reads from an inherited descriptor: (fd, path in sandbox).
    data_files: tuple[tuple[int, str], ...] = ()
    # The compiled seccomp filter, readable from this inherited descriptor.
    seccomp_fd: int | None = None
    # Limits applied by ``prlimit`` (its path inside the sandbox) before the shell starts.
    rlimits: Rlimits | None = None
    prlimit: str = "/usr/bin/prlimit"
    # Size of the /tmp and /dev/shm tmpfs, in bytes (None: the kernel's default, half the RAM).
    tmp_bytes: int | None = None


def host_system_layout(root: str = "/") -> tuple[Bind | Symlink, ...]:
    """``/usr`` plus ``/bin``, ``/lib``... reproduced the way this host has them."""
    layout: list[Bind | Symlink] = [Bind("/usr", "/usr")]
    for path in _SYSTEM_DIRS:
        host = os.path.join(root, path.lstrip("/"))
        if os.path.islink(host):
            layout.append(Symlink(os.readlink(host), path))
        elif os.path.isdir(host):
            layout.append(Bind(path, path))
    return tuple(layout)


def synthetic_etc(*, network: bool) -> dict[str, str]:
    """Generated /etc files (path in sandbox -> content)."""
    files = {"/etc/passwd": SANDBOX_PASSWD, "/etc/group": SANDBOX_GROUP}
    if not network:
        files["/etc/hosts"] = SANDBOX_HOSTS
    return files


def build_argv(spec: BwrapSpec, command: str) -> list[str]:
    """The argv running ``/bin/sh -c command`` under bubblewrap as ``spec`` describes."""
    argv = [spec.bwrap, "--unshare-all"]
    if spec.network:
        argv.append("--share-net")
    argv += [
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_GID),
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
    ]
    if spec.seccomp_fd is not None:
        argv += ["--seccomp", str(spec.seccomp_fd)]
    for entry in spec.system:
        argv += entry.args()
    etc = ETC_ALLOWLIST + (ETC_NETWORK_ALLOWLIST if spec.network else ())
    for path in etc:
        argv += Bind(path, path, optional=True).args()
    for fd, dest in spec.data_files:
        argv += ["--ro-bind-data", str(fd), dest]
    size = ["--size", str(spec.tmp_bytes)] if spec.tmp_bytes is not None else []
    argv += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm"]
    # /dev itself is a tmpfs the command could fill; only /dev/shm (capped) stays writable.
    argv += ["--remount-ro", "/dev", *size, "--tmpfs", "/tmp"]
    for mount in spec.mounts:
        argv += mount.args()
    argv += ["--remount-ro", "/", "--chdir", spec.cwd, "--clearenv"]
    for name, value in spec.env.items():
        argv += ["--setenv", name, value]
    argv.append("--")
    if spec.rlimits is not None:
        argv += spec.rlimits.args(spec.prlimit)
    argv += ["/bin/sh", "-c", command]
    return argv
