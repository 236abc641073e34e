"""``view_image``: show the model an image from the thread's files.

The tool only validates the image and records its metadata in ``viewed_images``; the pixels
never enter the graph state (checkpoints stay small). The view-image middleware reads them
with :func:`load_image_b64` for the next model call only.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command

from fawn.agent.state import ViewedImage
from fawn.agent.tools.access import RunToolRuntime, thread_sandbox, tool_call_id
from fawn.agent.tools.errors import FileTooLarge, InvalidToolInput, WrongFileType
from fawn.agent.tools.hostfs import Target, read_bytes, read_head, resolve
from fawn.agent.tools.names import VIEW_IMAGE
from fawn.sandbox import VIRTUAL_USER_DATA, PathPolicy, SandboxProvider

#: Largest image shown to a model (providers refuse larger ones).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
_HEADER_BYTES = 16
_RESIZE_HINT = (
    "; make a smaller copy with bash (e.g. Python's PIL) in /mnt/user-data/workspace and view that"
)


@dataclass(frozen=True)
class ImageInfo:
    virtual_path: str
    mime_type: str
    size: int


def sniff_image_type(header: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, GIF or WebP image from its first bytes, else None."""
    if header.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if header.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if header.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if header[:4] == b"RIFF" and header[8:12] == b"WEBP":
        return "image/webp"
    return None


def _target(policy: PathPolicy, path: str) -> Target:
    target = resolve(policy, path)
    if not target.virtual.startswith(VIRTUAL_USER_DATA + "/"):
        raise InvalidToolInput(
            f"view_image opens images under {VIRTUAL_USER_DATA} (workspace, uploads, outputs) "
            f"only; {target.virtual} is not"
        )
    return target


def _check(target: Target, header: bytes, size: int) -> str:
    if size > MAX_IMAGE_BYTES:
        raise FileTooLarge(
            f"{target.virtual} is {size} bytes, over the {MAX_IMAGE_BYTES}-byte image limit"
            + _RESIZE_HINT
        )
    mime_type = sniff_image_type(header)
    if mime_type is None:
        raise WrongFileType(
            f"{target.virtual} is not a PNG, JPEG, GIF or WebP image (judged by its content, "
            "not its name)"
        )
    return mime_type


def inspect_image(policy: PathPolicy, path: str) -> ImageInfo:
    """Validate the image at ``path`` from its header and size, without loading it."""
    target = _target(policy, path)
    header, size = read_head(target, policy, _HEADER_BYTES)
    return ImageInfo(target.virtual, _check(target, header, size), size)


def load_image(policy: PathPolicy, path: str) -> tuple[bytes, str]:
    """The bytes and MIME type of the image at ``path``, validated again as it is now."""
    target = _target(policy, path)
    data = read_bytes(target, policy, limit=MAX_IMAGE_BYTES, hint=_RESIZE_HINT)
    return data, _check(target, data[:_HEADER_BYTES], len(data))


async def load_image_b64(
    sandbox_provider: SandboxProvider, thread_id: str, virtual_path: str
) -> tuple[str, str]:
    """``(base64, mime_type)`` of an image in ``thread_id``'s files, for one model call.

    Raises like the tool does (:class:`fawn.sandbox.SandboxError`,
    :class:`fawn.agent.tools.errors.ToolError`) if the image is gone or no longer valid.
    """
    sandbox = await sandbox_provider.acquire(thread_id)
    data, mime_type = await asyncio.to_thread(load_image, sandbox.policy, virtual_path)
    return base64.b64encode(data).decode("ascii"), mime_type


def view_image_tool(provider: SandboxProvider) -> BaseTool:
    @tool(VIEW_IMAGE, parse_docstring=True)
    async def view_image(image_path: str, runtime: RunToolRuntime) -> Command[Any]:
        """Look at an image file. The image is shown to you with your next message.

        Use it to understand an image the user uploaded or one you created. Supported formats: PNG, JPEG, GIF, WebP. For other files use read_file; to give files to the user use present_files.

        Args:
            image_path: Absolute path of the image, under /mnt/user-data (workspace, uploads or outputs).
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        info = await asyncio.to_thread(inspect_image, policy, image_path)
        metadata: ViewedImage = {"mime_type": info.mime_type, "size": info.size}
        message = ToolMessage(
            f"Loaded image {info.virtual_path} ({info.mime_type}, {info.size} bytes); "
            "it is shown to you with your next message.",
            tool_call_id=tool_call_id(runtime),
            name=VIEW_IMAGE,
        )
        return Command(
            update={"viewed_images": {info.virtual_path: metadata}, "messages": [message]}
        )

    return view_image
