"""Thread ids, the thread directory layout and the virtual-path policy (no subprocesses)."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fawn.sandbox import (
    VIRTUAL_OUTPUTS,
    VIRTUAL_UPLOADS,
    VIRTUAL_USER_DATA,
    VIRTUAL_WORKSPACE,
    InvalidThreadId,
    PathNotFound,
    PathOutsideSandbox,
    PathPolicy,
    ReadOnlyPath,
    SandboxError,
    ThreadPaths,
    validate_thread_id,
)


@pytest.fixture
def paths(tmp_path: Path) -> ThreadPaths:
    return ThreadPaths.for_thread(tmp_path / "data", "thread-a").ensure()


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    skills = tmp_path / "skills"
    (skills / "pdf").mkdir(parents=True)
    (skills / "pdf" / "SKILL.md").write_text("# pdf\n")
    return skills


@pytest.fixture
def policy(paths: ThreadPaths, skills: Path) -> PathPolicy:
    return PathPolicy(paths, skills)


# -- thread ids -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thread_id",
    [
        "2f1d8a3e-6a4b-4c1e-9f0a-1b2c3d4e5f60",
        "2f1d8a3e6a4b4c1e9f0a1b2c3d4e5f60",
        "2F1D8A3E-6A4B-4C1E-9F0A-1B2C3D4E5F60",
        "a",
        "A_b-9",
        "x" * 64,
    ],
)
def test_valid_thread_ids_are_returned_unchanged(thread_id: str) -> None:
    assert validate_thread_id(thread_id) == thread_id


@pytest.mark.parametrize(
    "thread_id",
    ["", ".", "..", "a/b", "../x", "a b", "a.b", "x" * 65, "a\n", "a\0", "é", "{" + "0" * 32 + "}"],
)
def test_invalid_thread_ids_are_refused(thread_id: str) -> None:
    with pytest.raises(InvalidThreadId) as caught:
        validate_thread_id(thread_id)
    assert (caught.value.code, caught.value.retryable) == ("invalid_thread_id", False)


def test_thread_paths_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    paths = ThreadPaths.for_thread(Path("data/../data"), "t1")
    root = tmp_path / "data" / "threads" / "t1" / "user-data"
    assert paths == ThreadPaths(
        thread_id="t1",
        root=root,
        workspace=root / "workspace",
        uploads=root / "uploads",
        outputs=root / "outputs",
    )
    assert paths.thread_dir == tmp_path / "data" / "threads" / "t1"
    assert paths.as_state() == {  # what clients see: no host path
        "workspace_path": "/mnt/user-data/workspace",
        "uploads_path": "/mnt/user-data/uploads",
        "outputs_path": "/mnt/user-data/outputs",
    }
    assert not root.exists()
    assert paths.ensure() is paths
    assert paths.ensure() is paths
    assert sorted(p.name for p in root.iterdir()) == ["outputs", "uploads", "workspace"]


def test_thread_paths_validates_the_id(tmp_path: Path) -> None:
    with pytest.raises(InvalidThreadId):
        ThreadPaths.for_thread(tmp_path, "../escape")


# -- to_host ----------------------------------------------------------------------------------


def test_virtual_paths_map_onto_the_thread_dirs(
    policy: PathPolicy, paths: ThreadPaths, skills: Path
) -> None:
    assert policy.to_host(VIRTUAL_USER_DATA) == paths.root
    assert policy.to_host(VIRTUAL_WORKSPACE) == paths.workspace
    assert policy.to_host("/mnt/user-data/workspace/a/b.txt") == paths.workspace / "a" / "b.txt"
    assert policy.to_host(VIRTUAL_UPLOADS + "/u.pdf", write=True) == paths.uploads / "u.pdf"
    assert policy.to_host(VIRTUAL_OUTPUTS + "/", write=True) == paths.outputs
    assert policy.to_host("/mnt/skills/pdf/SKILL.md") == skills / "pdf" / "SKILL.md"


@pytest.mark.parametrize(
    ("relative", "expected"),
    [("notes.md", "notes.md"), ("./a/../b", "b"), ("", ""), (".", ""), ("a//b/", "a/b")],
)
def test_relative_paths_start_in_the_workspace(
    policy: PathPolicy, paths: ThreadPaths, relative: str, expected: str
) -> None:
    assert policy.to_host(relative) == paths.workspace / expected


def test_dotdot_between_mounts_is_folded(policy: PathPolicy, paths: ThreadPaths) -> None:
    assert policy.to_host("/mnt/user-data/workspace/../uploads/f") == paths.uploads / "f"
    assert policy.to_host("../outputs/report.md", write=True) == paths.outputs / "report.md"


@pytest.mark.parametrize(
    "virtual",
    [
        "/etc/passwd",
        "/",
        "/mnt",
        "/mnt/user-data/other",
        "/mnt/user-data/workspace/../../../etc/passwd",
        "../../etc/passwd",
        "../../../../../../../../etc/shadow",
        "/mnt/user-data/workspace/../../skills-not",
        "/mnt/user-dataX/workspace",
        "/mnt/skillsX",
        "a\0b",
    ],
)
def test_paths_outside_the_mounts_are_refused(policy: PathPolicy, virtual: str) -> None:
    with pytest.raises(PathOutsideSandbox) as caught:
        policy.to_host(virtual)
    assert (caught.value.code, caught.value.retryable) == ("path_outside_sandbox", False)


def test_refusal_names_the_folded_virtual_path(policy: PathPolicy) -> None:
    with pytest.raises(PathOutsideSandbox) as caught:
        policy.to_host("../../../etc/./passwd")
    assert str(caught.value) == (
        "/etc/passwd is outside the sandbox; use paths under /mnt/user-data/workspace, "
        "/mnt/user-data/uploads, /mnt/user-data/outputs or /mnt/skills"
    )


def test_host_paths_are_refused_and_not_echoed(policy: PathPolicy, paths: ThreadPaths) -> None:
    with pytest.raises(PathOutsideSandbox) as caught:
        policy.to_host(str(paths.workspace / "f.txt"))
    assert str(paths.root) not in str(caught.value)
    assert str(caught.value) == (
        "a host path is outside the sandbox; use paths under /mnt/user-data/workspace, "
        "/mnt/user-data/uploads, /mnt/user-data/outputs or /mnt/skills"
    )


def test_writes_to_read_only_mounts_are_refused(policy: PathPolicy) -> None:
    for virtual in ("/mnt/skills/pdf/SKILL.md", "/mnt/skills", "/mnt/user-data"):
        with pytest.raises(ReadOnlyPath) as caught:
            policy.to_host(virtual, write=True)
        assert str(caught.value) == f"{virtual} is read-only"
        assert caught.value.code == "read_only_path"


def test_skills_without_a_skills_dir(paths: ThreadPaths) -> None:
    policy = PathPolicy(paths, None)
    with pytest.raises(PathNotFound) as caught:
        policy.to_host("/mnt/skills/pdf/SKILL.md")
    assert caught.value.code == "path_not_found"


def test_symlink_to_etc_is_refused(policy: PathPolicy, paths: ThreadPaths) -> None:
    (paths.workspace / "etc").symlink_to("/etc")
    (paths.workspace / "passwd").symlink_to("/etc/passwd")
    for virtual in ("etc/passwd", "etc", "etc/not-there-yet", "passwd"):
        with pytest.raises(PathOutsideSandbox) as caught:
            policy.to_host(virtual)
        assert str(caught.value) == (
            f"/mnt/user-data/workspace/{virtual} resolves to a location outside "
            "/mnt/user-data/workspace"
        )


def test_dangling_symlink_out_of_the_mount_is_refused_for_writes(
    policy: PathPolicy, paths: ThreadPaths, tmp_path: Path
) -> None:
    (paths.workspace / "trap").symlink_to(tmp_path / "outside" / "new-file")
    with pytest.raises(PathOutsideSandbox):
        policy.to_host("trap", write=True)


def test_symlink_to_another_thread_is_refused(
    policy: PathPolicy, paths: ThreadPaths, tmp_path: Path
) -> None:
    other = ThreadPaths.for_thread(tmp_path / "data", "thread-b").ensure()
    (other.workspace / "secret.txt").write_text("b's secret")
    (paths.workspace / "b").symlink_to(other.workspace)
    (paths.workspace / "up").symlink_to("../../../thread-b/user-data/workspace")
    for virtual in ("b/secret.txt", "up/secret.txt", "b"):
        with pytest.raises(PathOutsideSandbox):
            policy.to_host(virtual)


def test_symlink_inside_the_mount_is_followed(policy: PathPolicy, paths: ThreadPaths) -> None:
    (paths.workspace / "real").mkdir()
    (paths.workspace / "alias").symlink_to("real")
    assert policy.to_host("alias/f.txt", write=True) == paths.workspace / "real" / "f.txt"


def test_mount_roots_are_resolved_when_the_data_dir_is_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real-data").mkdir()
    (tmp_path / "link-data").symlink_to(tmp_path / "real-data")
    paths = ThreadPaths.for_thread(tmp_path / "link-data", "t").ensure()
    policy = PathPolicy(paths, None)
    resolved_workspace = tmp_path / "real-data" / "threads" / "t" / "user-data" / "workspace"
    assert policy.to_host("x") == resolved_workspace / "x"
    assert policy.to_virtual(resolved_workspace / "x") == "/mnt/user-data/workspace/x"
    assert policy.to_virtual(paths.workspace / "x") == "/mnt/user-data/workspace/x"


# -- to_virtual and mask --------------------------------------------------------------------


def test_to_virtual_inverts_to_host(policy: PathPolicy, paths: ThreadPaths, skills: Path) -> None:
    assert policy.to_virtual(paths.root) == VIRTUAL_USER_DATA
    assert policy.to_virtual(paths.workspace) == VIRTUAL_WORKSPACE
    assert policy.to_virtual(paths.outputs / "r.md") == "/mnt/user-data/outputs/r.md"
    assert policy.to_virtual(paths.uploads / "a" / ".." / "b") == "/mnt/user-data/uploads/b"
    assert policy.to_virtual(skills / "pdf") == "/mnt/skills/pdf"


@pytest.mark.parametrize("host", ["/etc/passwd", "/", "{root}/other", "{root}-x", "{ws}/../../x"])
def test_to_virtual_refuses_paths_outside_the_mounts(
    policy: PathPolicy, paths: ThreadPaths, host: str
) -> None:
    with pytest.raises(PathOutsideSandbox) as caught:
        policy.to_virtual(Path(host.format(root=paths.root, ws=paths.workspace)))
    assert str(caught.value) == "the path is not under any sandbox mount"


def test_mask_replaces_host_roots(policy: PathPolicy, paths: ThreadPaths, skills: Path) -> None:
    text = (
        f"cwd {paths.workspace}\n"
        f"wrote {paths.outputs}/report.md and {paths.root}\n"
        f"'{skills}/pdf/SKILL.md'\n"
        "/etc/passwd stays\n"
    )
    assert policy.mask(text) == (
        "cwd /mnt/user-data/workspace\n"
        "wrote /mnt/user-data/outputs/report.md and /mnt/user-data\n"
        "'/mnt/skills/pdf/SKILL.md'\n"
        "/etc/passwd stays\n"
    )


def test_mask_with_a_skills_dir_named_like_the_mount(paths: ThreadPaths) -> None:
    policy = PathPolicy(paths, Path("/mnt/skills"))
    assert (
        policy.mask(f"/mnt/skills/a {paths.uploads}/b") == "/mnt/skills/a /mnt/user-data/uploads/b"
    )


# -- properties -------------------------------------------------------------------------------

_SEGMENTS = st.sampled_from(
    ["..", ".", "", "a", "b", "mnt", "user-data", "workspace", "uploads", "outputs", "skills"]
)
_PREFIXES = st.sampled_from(["", "/", "/mnt/", "/mnt/user-data/", "/mnt/skills/", "/etc/"])
_ACCEPTED = re.compile(r"/mnt/user-data(/(workspace|uploads|outputs)(/.*)?)?|/mnt/skills(/.*)?")


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=_PREFIXES, segments=st.lists(_SEGMENTS, max_size=8))
def test_to_host_folds_dotdot_like_posixpath(
    policy: PathPolicy, prefix: str, segments: list[str]
) -> None:
    """posixpath is the oracle for lexical folding; to_virtual(to_host(p)) gives it back."""
    virtual = prefix + "/".join(segments)
    absolute = virtual if virtual.startswith("/") else f"{VIRTUAL_WORKSPACE}/{virtual}"
    expected = "/" + posixpath.normpath(absolute).lstrip("/")
    if _ACCEPTED.fullmatch(expected):
        assert policy.to_virtual(policy.to_host(virtual)) == expected
    else:
        with pytest.raises(PathOutsideSandbox):
            policy.to_host(virtual)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(virtual=st.text(alphabet=st.sampled_from("/.ab\\\0 é"), max_size=40))
def test_to_host_never_leaves_the_mounts(
    policy: PathPolicy, paths: ThreadPaths, skills: Path, virtual: str
) -> None:
    try:
        host = policy.to_host(virtual)
    except SandboxError:
        return
    roots = [paths.workspace, paths.uploads, paths.outputs, skills]
    assert host == paths.root or any(host == r or r in host.parents for r in roots)
    assert os.path.realpath(host) == str(host)
