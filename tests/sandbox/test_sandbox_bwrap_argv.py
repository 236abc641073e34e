"""The bubblewrap command line, as data (no bubblewrap needed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fawn.sandbox.bwrap import (
    SANDBOX_GROUP,
    SANDBOX_HOSTS,
    SANDBOX_PASSWD,
    Bind,
    BwrapSpec,
    Rlimits,
    Symlink,
    build_argv,
    host_system_layout,
    synthetic_etc,
)

ETC_BINDS = [
    *("--ro-bind-try", "/etc/alternatives", "/etc/alternatives"),
    *("--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"),
    *("--ro-bind-try", "/etc/ld.so.conf", "/etc/ld.so.conf"),
    *("--ro-bind-try", "/etc/ld.so.conf.d", "/etc/ld.so.conf.d"),
    *("--ro-bind-try", "/etc/localtime", "/etc/localtime"),
    *("--ro-bind-try", "/etc/nsswitch.conf", "/etc/nsswitch.conf"),
    *("--ro-bind-try", "/etc/host.conf", "/etc/host.conf"),
    *("--ro-bind-try", "/etc/gai.conf", "/etc/gai.conf"),
    *("--ro-bind-try", "/etc/ssl/certs", "/etc/ssl/certs"),
    *("--ro-bind-try", "/etc/ssl/openssl.cnf", "/etc/ssl/openssl.cnf"),
]


def spec(*, network: bool) -> BwrapSpec:
    return BwrapSpec(
        bwrap="/usr/bin/bwrap",
        system=(Bind("/usr", "/usr"), Symlink("usr/bin", "/bin"), Bind("/lib", "/lib")),
        mounts=(
            Bind("/data/t/workspace", "/mnt/user-data/workspace", writable=True),
            Bind("/skills", "/mnt/skills", optional=True),
        ),
        cwd="/mnt/user-data/workspace",
        env={"PATH": "/usr/bin:/bin", "HOME": "/mnt/user-data/workspace"},
        network=network,
        data_files=((5, "/etc/passwd"), (6, "/etc/group")),
    )


def test_argv_without_network() -> None:
    assert build_argv(spec(network=False), "echo 'hi'; ls") == [
        "/usr/bin/bwrap",
        "--unshare-all",
        *("--unshare-user", "--uid", "1000", "--gid", "1000", "--hostname", "sandbox"),
        *("--cap-drop", "ALL", "--disable-userns", "--die-with-parent", "--new-session"),
        *("--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--ro-bind", "/lib", "/lib"),
        *ETC_BINDS,
        *("--ro-bind-data", "5", "/etc/passwd", "--ro-bind-data", "6", "/etc/group"),
        *("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--remount-ro", "/dev"),
        *("--tmpfs", "/tmp"),
        *("--bind", "/data/t/workspace", "/mnt/user-data/workspace"),
        *("--ro-bind-try", "/skills", "/mnt/skills"),
        *("--remount-ro", "/", "--chdir", "/mnt/user-data/workspace", "--clearenv"),
        *("--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/mnt/user-data/workspace"),
        *("--", "/bin/sh", "-c", "echo 'hi'; ls"),
    ]


def test_network_is_shared_only_when_asked() -> None:
    without = build_argv(spec(network=False), "true")
    after_etc = without.index("--ro-bind-data")
    resolver = [
        *("--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"),
        *("--ro-bind-try", "/etc/hosts", "/etc/hosts"),
    ]
    assert build_argv(spec(network=True), "true") == [
        *without[:2],
        "--share-net",
        *without[2:after_etc],
        *resolver,
        *without[after_etc:],
    ]


def test_mount_options() -> None:
    assert Bind("/a", "/b").args() == ["--ro-bind", "/a", "/b"]
    assert Bind("/a", "/b", optional=True).args() == ["--ro-bind-try", "/a", "/b"]
    assert Bind("/a", "/b", writable=True).args() == ["--bind", "/a", "/b"]
    assert Bind("/a", "/b", writable=True, optional=True).args() == ["--bind-try", "/a", "/b"]


def test_synthetic_etc() -> None:
    assert synthetic_etc(network=False) == {
        "/etc/passwd": SANDBOX_PASSWD,
        "/etc/group": SANDBOX_GROUP,
        "/etc/hosts": SANDBOX_HOSTS,
    }
    assert synthetic_etc(network=True) == {
        "/etc/passwd": SANDBOX_PASSWD,
        "/etc/group": SANDBOX_GROUP,
    }
    assert "sandbox:x:1000:1000:sandbox:/mnt/user-data/workspace:/bin/sh\n" in SANDBOX_PASSWD


def test_merged_usr_layout(tmp_path: Path) -> None:
    for name in ("bin", "sbin", "lib", "lib64"):
        (tmp_path / name).symlink_to(f"usr/{name}")
    assert host_system_layout(str(tmp_path)) == (
        Bind("/usr", "/usr"),
        Symlink("usr/bin", "/bin"),
        Symlink("usr/sbin", "/sbin"),
        Symlink("usr/lib", "/lib"),
        Symlink("usr/lib64", "/lib64"),
    )


def test_split_usr_layout(tmp_path: Path) -> None:
    for name in ("bin", "sbin", "lib"):
        (tmp_path / name).mkdir()
    (tmp_path / "lib64").symlink_to("/lib")
    assert host_system_layout(str(tmp_path)) == (
        Bind("/usr", "/usr"),
        Bind("/bin", "/bin"),
        Bind("/sbin", "/sbin"),
        Bind("/lib", "/lib"),
        Symlink("/lib", "/lib64"),
    )


def test_argv_hardened() -> None:
    """The seccomp descriptor, the tmpfs sizes and prlimit's limits, in their places."""
    hardened = dataclasses.replace(
        spec(network=False),
        seccomp_fd=9,
        rlimits=Rlimits(
            address_space=1 << 30,
            processes=64,
            cpu_seconds=10,
            file_size=1 << 20,
            open_files=256,
        ),
        prlimit="/usr/bin/prlimit",
        tmp_bytes=1 << 24,
    )
    argv = build_argv(hardened, "true")
    assert argv[:16] == [
        "/usr/bin/bwrap",
        "--unshare-all",
        *("--unshare-user", "--uid", "1000", "--gid", "1000", "--hostname", "sandbox"),
        *("--cap-drop", "ALL", "--disable-userns", "--die-with-parent", "--new-session"),
        *("--seccomp", "9"),
    ]
    devices = argv.index("--dev")
    assert argv[devices : devices + 12] == [
        *("--dev", "/dev", "--size", "16777216", "--tmpfs", "/dev/shm", "--remount-ro", "/dev"),
        *("--size", "16777216", "--tmpfs", "/tmp"),
    ]
    assert argv[argv.index("--") :] == [
        "--",
        "/usr/bin/prlimit",
        *("--as=1073741824", "--nproc=64", "--cpu=10:11", "--fsize=1048576"),
        *("--nofile=256", "--core=0", "--"),
        *("/bin/sh", "-c", "true"),
    ]
