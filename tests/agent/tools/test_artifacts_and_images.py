"""present_files and view_image, called directly: the Command each returns."""

from __future__ import annotations

import base64
import secrets

import pytest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from fawn.agent.tools import (
    MAX_IMAGE_BYTES,
    FileTooLarge,
    InvalidToolInput,
    NotPresentable,
    WrongFileType,
    load_image_b64,
)
from fawn.agent.tools.view_image import sniff_image_type
from tests.agent.tools.helpers import ToolBench

OUT = "/mnt/user-data/outputs"
PNG = b"\x89PNG\r\n\x1a\n"


async def test_present_files_adds_normalised_paths(bench: ToolBench) -> None:
    (bench.outputs() / "charts").mkdir()
    (bench.outputs() / "report.md").write_text("# Report\n")
    (bench.outputs() / "charts" / "a.png").write_bytes(PNG)
    result = await bench.call(
        "present_files",
        filepaths=[
            f"{OUT}/report.md",
            "/mnt/user-data/outputs/charts/../charts/a.png",
            f"{OUT}/report.md",
        ],
    )
    assert isinstance(result, Command)
    assert isinstance(result.update, dict)
    message = result.update["messages"][0]
    assert result.update == {
        "artifacts": [f"{OUT}/report.md", f"{OUT}/charts/a.png"],
        "messages": [message],
    }
    assert isinstance(message, ToolMessage)
    assert message.content == (
        f"Presented 2 files to the user: {OUT}/report.md, {OUT}/charts/a.png"
    )
    assert message.tool_call_id.startswith("call-")


async def test_present_files_is_all_or_nothing(bench: ToolBench) -> None:
    (bench.outputs() / "good.md").write_text("ok\n")
    (bench.workspace() / "draft.md").write_text("draft\n")
    (bench.outputs() / "folder").mkdir()
    error = await bench.error(
        "present_files",
        filepaths=[
            f"{OUT}/good.md",
            "/mnt/user-data/workspace/draft.md",
            f"{OUT}/missing.md",
            f"{OUT}/folder",
            "/etc/passwd",
        ],
    )
    assert isinstance(error, NotPresentable)
    assert str(error) == (
        f"nothing was presented. Only existing files in {OUT} can be presented; fix or drop "
        "these paths and call present_files again:\n"
        f"- /mnt/user-data/workspace/draft.md: /mnt/user-data/workspace/draft.md is not in {OUT}; "
        "write or copy it there first\n"
        f"- {OUT}/missing.md: {OUT}/missing.md does not exist\n"
        f"- {OUT}/folder: {OUT}/folder is a directory, not a file\n"
        "- /etc/passwd: /etc/passwd is outside the sandbox; use paths under "
        "/mnt/user-data/workspace, /mnt/user-data/uploads, /mnt/user-data/outputs or /mnt/skills"
    )
    empty = await bench.error("present_files", filepaths=[])
    assert isinstance(empty, InvalidToolInput)


async def test_present_files_refuses_a_link_out_of_outputs(bench: ToolBench) -> None:
    (bench.workspace() / "draft.md").write_text("draft\n")
    (bench.outputs() / "alias.md").symlink_to(bench.workspace() / "draft.md")
    error = await bench.error("present_files", filepaths=[f"{OUT}/alias.md"])
    assert isinstance(error, NotPresentable)
    assert str(error).endswith(
        f"- {OUT}/alias.md: {OUT}/alias.md resolves to a location outside {OUT}"
    )


@pytest.mark.parametrize(
    ("header", "mime_type"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"GIF89a", "image/gif"),
        (b"GIF87a", "image/gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"%PDF-1.7", None),
        (b"RIFF\x10\x00\x00\x00WAVEfmt ", None),
    ],
)
def test_image_types_by_magic_bytes(header: bytes, mime_type: str | None) -> None:
    assert sniff_image_type(header) == mime_type


async def test_view_image_records_metadata_only(bench: ToolBench) -> None:
    content = PNG + secrets.token_bytes(300)
    (bench.workspace() / "pic.dat").write_bytes(content)  # the name does not matter
    result = await bench.call("view_image", image_path="/mnt/user-data/workspace/pic.dat")
    assert isinstance(result, Command)
    assert isinstance(result.update, dict)
    message = result.update["messages"][0]
    assert result.update == {
        "viewed_images": {
            "/mnt/user-data/workspace/pic.dat": {"mime_type": "image/png", "size": 308}
        },
        "messages": [message],
    }
    assert message.content == (
        "Loaded image /mnt/user-data/workspace/pic.dat (image/png, 308 bytes); "
        "it is shown to you with your next message."
    )
    assert await load_image_b64(bench.provider, "thread-a", "/mnt/user-data/workspace/pic.dat") == (
        base64.b64encode(content).decode(),
        "image/png",
    )


async def test_view_image_refusals(bench: ToolBench) -> None:
    (bench.workspace() / "notes.png").write_text("not an image\n")
    not_image = await bench.error("view_image", image_path="/mnt/user-data/workspace/notes.png")
    assert isinstance(not_image, WrongFileType)
    assert str(not_image) == (
        "/mnt/user-data/workspace/notes.png is not a PNG, JPEG, GIF or WebP image "
        "(judged by its content, not its name)"
    )
    with (bench.workspace() / "huge.png").open("wb") as handle:
        handle.write(PNG)
        handle.truncate(MAX_IMAGE_BYTES + 1)
    too_large = await bench.error("view_image", image_path="/mnt/user-data/workspace/huge.png")
    assert isinstance(too_large, FileTooLarge)
    skills = await bench.error("view_image", image_path="/mnt/skills/public/demo/SKILL.md")
    assert isinstance(skills, InvalidToolInput)
    missing = await bench.error("view_image", image_path="/mnt/user-data/uploads/none.png")
    assert str(missing) == "/mnt/user-data/uploads/none.png does not exist"
    with pytest.raises(WrongFileType):
        await load_image_b64(bench.provider, "thread-a", "/mnt/user-data/workspace/notes.png")
