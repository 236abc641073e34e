"""JSON responses encoded with orjson (datetimes as ISO-8601 with +00:00)."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from fawn.agent.serialize import dumps


class JSON(JSONResponse):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
