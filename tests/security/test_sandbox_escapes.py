"""Sandbox escapes (issue 7, items 1 and 2, and those blocked before), tried by the model's
bash calls on a live server in the real bubblewrap sandbox.

Before: the command inherited the server's listening socket (uvloop leaves inheritable
descriptors open), so it could accept other clients' requests; it ran as the server's host
uid (root) with no seccomp filter, so it could add keys to the keyring it shared with every
other thread and create nested user namespaces.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest
from langgraph_sdk.client import LangGraphClient

from tests.security.sandbox_helpers import (
    WS,
    call,
    host_uid,
    requires_bwrap,
    tool_calls,
    tool_calls_in,
)
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread

pytestmark = [pytest.mark.bwrap, requires_bwrap]

# Syscall numbers (x86-64, aarch64) of what the seccomp filter refuses.
SYSCALLS = {
    "x86_64": {
        "add_key": 248,
        "keyctl": 250,
        "request_key": 249,
        "unshare": 272,
        "setns": 308,
        "mount": 165,
        "ptrace": 101,
        "bpf": 321,
        "perf_event_open": 298,
        "init_module": 175,
        "finit_module": 313,
        "kexec_load": 246,
        "userfaultfd": 323,
        "open_by_handle_at": 304,
        "io_uring_setup": 425,
        "clone3": 435,
    },
    "aarch64": {
        "add_key": 217,
        "keyctl": 219,
        "request_key": 218,
        "unshare": 97,
        "setns": 268,
        "mount": 40,
        "ptrace": 117,
        "bpf": 280,
        "perf_event_open": 241,
        "init_module": 105,
        "finit_module": 273,
        "kexec_load": 104,
        "userfaultfd": 282,
        "open_by_handle_at": 265,
        "io_uring_setup": 425,
        "clone3": 435,
    },
}

# Each syscall made with arguments that would succeed (or fail otherwise than EPERM)
# without the filter: add_key of a real key into the user keyring, unshare(CLONE_NEWUSER)...
PROBE = r"""
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
numbers = json.loads(sys.argv[1])
args = {
    "add_key": (b"user", b"fawn-probe", b"secret", 6, -4),
    "keyctl": (0, -4, 0),
    "request_key": (b"user", b"fawn-probe", None, -4),
    "unshare": (0x10000000,),
    "setns": (0, 0),
    "mount": (b"none", b"/tmp", b"tmpfs", 0, None),
    "ptrace": (16, 1, 0, 0),
    "bpf": (0, None, 0),
    "perf_event_open": (None, 0, -1, -1, 0),
    "init_module": (None, 0, b""),
    "finit_module": (0, b"", 0),
    "kexec_load": (0, 0, None, 0),
    "userfaultfd": (0,),
    "open_by_handle_at": (0, None, 0),
    "io_uring_setup": (1, None),
    "clone3": (None, 0),
}
for name, number in numbers.items():
    ctypes.set_errno(0)
    result = libc.syscall(number, *args[name])
    code = ctypes.get_errno()
    print(name, "allowed" if result >= 0 else errno.errorcode.get(code, code))
"""


def _probe_command() -> str:
    import json

    numbers = SYSCALLS[platform.machine()]
    script = PROBE.replace("'", "'\"'\"'")
    return f"python3 -c '{script}' '{json.dumps(numbers)}'"


@pytest.mark.skipif(platform.machine() not in SYSCALLS, reason="syscall numbers unknown")
async def test_refused_syscalls(lg: LangGraphClient, stub: StubServerThread, key: str) -> None:
    [(_, status, output)] = await tool_calls(lg, stub, key, call("bash", command=_probe_command()))
    expected = dict.fromkeys(SYSCALLS[platform.machine()], "EPERM")
    expected["clone3"] = "ENOSYS"  # so that the C library falls back to clone
    assert status == "success"
    assert dict(line.split(" ", 1) for line in output.splitlines()) == expected


async def test_only_stdin_stdout_stderr_are_open(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    """The server's listening socket (and anything else it holds) is not inherited."""
    open_fds = (
        "python3 -I -c 'import os\n"
        "found = []\n"
        "for fd in range(3, 4096):\n"
        "    try:\n"
        "        os.fstat(fd)\n"
        "    except OSError:\n"
        "        continue\n"
        "    found.append(fd)\n"
        'print("open:", found)\''
    )
    accept = (
        "python3 -I -c 'import socket\n"
        "try:\n"
        "    socket.socket(fileno=3).accept()\n"
        "except OSError as e:\n"
        '    print("refused:", e.strerror)\''
    )
    assert await tool_calls(
        lg,
        stub,
        key,
        call("bash", command="ls /proc/$$/fd"),
        call("bash", command=open_fds),
        call("bash", command=accept),
    ) == [
        ("bash", "success", "0\n1\n2\n"),
        ("bash", "success", "open: []\n"),
        ("bash", "success", "refused: Bad file descriptor\n"),
    ]


async def test_no_nested_user_namespace(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    assert await tool_calls(
        lg,
        stub,
        key,
        call("bash", command="unshare -Ur id"),
        call("bash", command="unshare -m true"),
    ) == [
        ("bash", "success", "unshare: unshare failed: Operation not permitted\n[exit code 1]"),
        ("bash", "success", "unshare: unshare failed: Operation not permitted\n[exit code 1]"),
    ]


async def test_commands_run_as_an_unprivileged_host_uid(
    lg: LangGraphClient, stub: StubServerThread, key: str, limited_server: LiveServer
) -> None:
    """A file the command creates belongs, on the host, to the sandbox's uid — never root
    (for uid 0 the kernel neither counts processes against a limit nor keeps keyrings
    apart)."""
    stub.add_script(
        key,
        [
            {"tool_calls": [call("bash", command="id -u; echo x > mine.txt")]},
            {"tool_calls": [call("write_file", path=f"{WS}/theirs.txt", content="y\n")]},
            {"tool_calls": [call("bash", command="echo more >> theirs.txt && cat theirs.txt")]},
            {"content": "done"},
        ],
    )
    tid = (await lg.threads.create())["thread_id"]

    results = await tool_calls_in(lg, tid, key)

    # Inside, the uid is the sandbox's own; a file the server wrote is handed over to it.
    assert results == [
        ("bash", "success", "1000\n"),
        ("write_file", "success", f"Wrote 2 characters to {WS}/theirs.txt"),
        ("bash", "success", "y\nmore\n"),
    ]
    workspace = Path(limited_server.data_dir) / "threads" / tid / "user-data" / "workspace"
    for name in ("mine.txt", "theirs.txt"):
        info = os.stat(workspace / name)
        assert (info.st_uid, info.st_gid) == (host_uid(), host_uid())
    assert host_uid() != 0


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat /etc/shadow", "cat: /etc/shadow: No such file or directory\n[exit code 1]"),
        ("ls /root", "ls: cannot access '/root': No such file or directory\n[exit code 2]"),
        ("touch /usr/x", "touch: cannot touch '/usr/x': Read-only file system\n[exit code 1]"),
        ("touch /dev/x", "touch: cannot touch '/dev/x': Read-only file system\n[exit code 1]"),
        ("touch /x", "touch: cannot touch '/x': Read-only file system\n[exit code 1]"),
        (
            "mount -t tmpfs none /tmp",
            "mount: /tmp: must be superuser to use mount.\n"
            "       dmesg(1) may have more information after failed mount system call.\n"
            "[exit code 32]",
        ),
        ("ls /mnt/user-data/..", "user-data\n"),
        ("ls /mnt/user-data", "outputs\nuploads\nworkspace\n"),
        # The only processes in sight are the sandbox's own (bwrap as init, the shell, ps).
        ("ps -e -o pid= | wc -l", "4\n"),
        ("hostname", "sandbox\n"),
    ],
)
async def test_escapes_blocked(
    lg: LangGraphClient, stub: StubServerThread, key: str, command: str, expected: str
) -> None:
    assert await tool_calls(lg, stub, key, call("bash", command=command)) == [
        ("bash", "success", expected)
    ]


async def test_handing_files_over_never_follows_a_link(
    lg: LangGraphClient, stub: StubServerThread, key: str, limited_server: LiveServer
) -> None:
    """Before each command the server (root) gives the thread's files to the sandbox's uid:
    links planted by a command must not turn that into a chown of a host file."""
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call(
                        "bash",
                        command="ln -s /etc/hostname file-link; ln -s /etc dir-link; "
                        "ln /usr/bin/env hard-link",
                    )
                ]
            },
            {"tool_calls": [call("write_file", path=f"{WS}/new.txt", content="x\n")]},
            {"tool_calls": [call("bash", command="ls")]},
            {"content": "done"},
        ],
    )
    tid = (await lg.threads.create())["thread_id"]

    results = await tool_calls_in(lg, tid, key)

    assert results == [
        (
            "bash",
            "success",
            "ln: failed to create hard link 'hard-link' => '/usr/bin/env': "
            "Invalid cross-device link\n[exit code 1]",
        ),
        ("write_file", "success", f"Wrote 2 characters to {WS}/new.txt"),
        ("bash", "success", "dir-link\nfile-link\nnew.txt\n"),
    ]
    for host in ("/etc/hostname", "/etc", "/etc/passwd", "/usr/bin/env"):
        info = os.stat(host)
        assert (info.st_uid, info.st_gid) == (0, 0), host
    workspace = Path(limited_server.data_dir) / "threads" / tid / "user-data" / "workspace"
    assert os.stat(workspace / "new.txt").st_uid == host_uid()
    assert os.lstat(workspace / "file-link").st_uid == host_uid()
