"""The seccomp filter every sandboxed command runs under, compiled once with libseccomp.

Why libseccomp, called through :mod:`ctypes`: it is the maintained library behind every
container runtime's filter (Docker, podman, systemd, flatpak), it knows each architecture's
syscall numbers, and the filter it writes checks the architecture first, so a 32-bit
syscall made from a 64-bit process (``int 0x80``) cannot slip past a rule written for the
native numbers: it kills the process. The shared library is on every Linux that has
bubblewrap (bubblewrap itself is usually linked against it); the five functions used here
have been stable since libseccomp 2.0, so no Python binding package is needed.
bubblewrap loads the compiled program (classic BPF, exported once at start-up) from a
descriptor (``--seccomp FD``) just before it executes the command.

The filter allows everything except what a sandboxed command has no business doing and
what widens the kernel's attack surface — each refused with ``EPERM`` (``ENOSYS`` for
``clone3``, whose flags a filter cannot read, so that the C library falls back to
``clone``):

* kernel keyrings (``add_key``, ``keyctl``, ``request_key``): keyrings are per host uid,
  not per namespace;
* new namespaces of any kind (``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*``
  flag): in particular no nested user namespace, which would hand out capabilities;
* mounts and the new mount API, ``pivot_root``, ``chroot``;
* ``ptrace`` and the cross-process memory calls, ``kcmp``;
* kernel modules, ``kexec``, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``;
* host-wide settings: clock, swap, accounting, quotas, reboot, the kernel log,
  I/O privilege;
* file handles (``open_by_handle_at``), ``fanotify``, and ``TIOCSTI``/``TIOCLINUX``
  (typing into a terminal).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import tempfile
from functools import cache

from fawn.sandbox.errors import SandboxUnavailable

# From <seccomp.h>.
_ACT_ALLOW = 0x7FFF0000
_ACT_ERRNO = 0x00050000
_CMP_MASKED_EQ = 7

DENIED_SYSCALLS = (
    # keyrings
    "add_key",
    "keyctl",
    "request_key",
    # namespaces
    "unshare",
    "setns",
    # mounts
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    # other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    # the kernel itself
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "kexec_load",
    "kexec_file_load",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "lookup_dcookie",
    "uselib",
    "nfsservctl",
    # host-wide settings
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "stime",
    "iopl",
    "ioperm",
    "vm86",
    "vm86old",
    # file handles, filesystem-wide notification
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
)

# clone(2)'s flags that create namespaces (from <linux/sched.h>).
_CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
# ioctl requests that push input into a terminal (from <asm-generic/ioctls.h>).
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def _errno_action(code: int) -> int:
    return _ACT_ERRNO | (code & 0xFFFF)


def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as error:
        raise SandboxUnavailable(
            "libseccomp is not installed on this server, so commands cannot run under a "
            "seccomp filter (install the libseccomp2 package)"
        ) from error
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_release.restype = None
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_export_bpf.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    return lib


def _add(
    lib: ctypes.CDLL, ctx: int, action: int, name: str, args: tuple[_ArgCmp, ...] = ()
) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number < 0:
        # Not a syscall of this architecture (vm86 on x86-64...): nothing to refuse.
        return
    array = (_ArgCmp * len(args))(*args) if args else None
    result = lib.seccomp_rule_add_array(ctx, action, number, len(args), array)
    if result < 0:
        raise SandboxUnavailable(
            f"the seccomp filter could not be built ({name}: {os.strerror(-result)})"
        )


@cache
def filter_program() -> bytes:
    """The compiled filter (classic BPF for this machine's architecture), built once.

    Raises :class:`SandboxUnavailable` when libseccomp is missing or fails.
    """
    lib = _library()
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise SandboxUnavailable("the seccomp filter could not be built (seccomp_init)")
    try:
        eperm = _errno_action(errno.EPERM)
        for name in DENIED_SYSCALLS:
            _add(lib, ctx, eperm, name)
        for flag in _CLONE_NAMESPACE_FLAGS:
            _add(lib, ctx, eperm, "clone", (_ArgCmp(0, _CMP_MASKED_EQ, flag, flag),))
        _add(lib, ctx, _errno_action(errno.ENOSYS), "clone3")
        for request in (_TIOCSTI, _TIOCLINUX):
            _add(lib, ctx, eperm, "ioctl", (_ArgCmp(1, _CMP_MASKED_EQ, 0xFFFFFFFF, request),))
        with tempfile.TemporaryFile() as out:
            result = lib.seccomp_export_bpf(ctx, out.fileno())
            if result < 0:
                raise SandboxUnavailable(
                    f"the seccomp filter could not be exported ({os.strerror(-result)})"
                )
            out.seek(0)
            program = out.read()
    finally:
        lib.seccomp_release(ctx)
    if not program or len(program) % 8:
        raise SandboxUnavailable("the seccomp filter could not be exported (empty program)")
    return program
