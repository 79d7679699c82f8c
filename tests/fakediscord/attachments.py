"""Uploaded files: multipart message bodies, the attachments they become, and the fake's CDN.

Discord (and discord.py's ``handle_message_parameters``) send files as ``multipart/form-data``:
a ``payload_json`` part with the JSON body and one ``files[n]`` part per file. The JSON's
``attachments`` array (top level for a message, ``message.attachments`` for a forum post) names
each upload by its index ``n`` (``{"id": 0, "filename": ..., "description": ...}``) and, on an
edit, lists the existing attachments (by snowflake) to keep: API v10 keeps exactly the
attachments listed there plus the new uploads; without the array an edit keeps every existing
attachment and appends the uploads.

Every attachment is served by the fake at its ``url`` (``GET /attachments/{channel}/{id}/{name}``
with a Discord-CDN-style signed query, or ``/ephemeral-attachments/...`` for an interaction's
attachment option) until :meth:`Attachment.stop_serving` - then the fake answers like an expired
signed CDN URL (404 "This content is no longer available." unless another status is asked for).
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
import re
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .errors import ApiError, form_error

if TYPE_CHECKING:
    from collections.abc import Mapping

MAX_ATTACHMENTS = 10
DEFAULT_UPLOAD_LIMIT = 10 * 1024 * 1024  # bytes per file for a guild without boosts
_FILES_PART = re.compile(r"files\[(\d+)\]")


@dataclass(eq=False)
class Upload:
    """One ``files[n]`` part of a multipart body, before it becomes an attachment."""

    index: int
    filename: str
    data: bytes
    content_type: str | None


@dataclass(eq=False)
class Attachment:
    """A file on a message (or offered by an interaction's attachment option)."""

    id: int
    filename: str
    data: bytes
    url: str
    content_type: str
    description: str | None = None
    ephemeral: bool = False
    serving: bool = True
    refuse_status: int = 404
    fetch_count: int = 0

    @property
    def size(self) -> int:
        return len(self.data)

    def stop_serving(self, status: int = 404) -> None:
        """From now on a GET of ``url`` answers ``status`` (404: an expired signed URL)."""
        self.serving = False
        self.refuse_status = status

    def resume_serving(self) -> None:
        self.serving = True

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "filename": self.filename,
            "size": self.size,
            "url": self.url,
            "proxy_url": self.url.replace("/attachments/", "/proxy-attachments/", 1),
            "content_type": self.content_type,
        }
        if self.description is not None:
            data["description"] = self.description
        if self.ephemeral:
            data["ephemeral"] = True
        return data


def guess_content_type(filename: str, declared: str | None) -> str:
    """Discord decides the content type from the file itself, not the part's header (which
    discord.py always sends as ``application/octet-stream``)."""
    guessed, _ = mimetypes.guess_type(filename)
    if guessed:
        return guessed
    if declared and declared != "application/octet-stream":
        return declared
    return "application/octet-stream"


async def read_multipart(request: web.Request) -> tuple[Any, dict[int, Upload]]:
    """Parse a multipart body into (payload_json, uploads by index)."""
    payload: Any = None
    uploads: dict[int, Upload] = {}
    reader = await request.multipart()
    while True:
        part = await reader.next()
        if part is None:
            break
        name = getattr(part, "name", None) or ""
        if name == "payload_json":
            try:
                payload = json.loads(await part.text())  # type: ignore[union-attr]
            except ValueError as exc:
                raise ApiError(400, 50109, "The request body contains invalid JSON.") from exc
            continue
        raw = await part.read()  # type: ignore[union-attr]
        match = _FILES_PART.fullmatch(name)
        index = int(match.group(1)) if match else len(uploads)
        filename = getattr(part, "filename", None) or f"file{index}"
        ctype = part.headers.get("Content-Type")
        uploads[index] = Upload(index, filename, bytes(raw), ctype)
    return payload, uploads


class AttachmentStore:
    """Every attachment the fake knows, by id; serves their bytes over HTTP."""

    def __init__(self, base_url: Any, new_id: Any, *, upload_limit: int) -> None:
        self.downloads_held: asyncio.Event | None = None
        """Set to an unset Event (:meth:`hold_downloads`): every download waits until it is
        set (a slow CDN, controlled by the test); :attr:`downloads_waiting` counts them."""
        self.downloads_waiting = 0
        self._base_url = base_url  # () -> "http://127.0.0.1:port"
        self._new_id = new_id  # () -> snowflake
        self.upload_limit = upload_limit
        self.by_id: dict[int, Attachment] = {}

    def create(
        self,
        channel_id: int,
        filename: str,
        data: bytes,
        *,
        content_type: str | None = None,
        description: str | None = None,
        ephemeral: bool = False,
        application_id: int | None = None,
    ) -> Attachment:
        aid = self._new_id()
        now = int(time.time())
        sig = f"ex={now + 86400:x}&is={now:x}&hm={secrets.token_hex(32)}"
        if ephemeral:
            path = f"/ephemeral-attachments/{application_id or 0}/{aid}/{filename}"
        else:
            path = f"/attachments/{channel_id}/{aid}/{filename}"
        att = Attachment(
            id=aid,
            filename=filename,
            data=data,
            url=f"{self._base_url()}{path}?{sig}",
            content_type=guess_content_type(filename, content_type),
            description=description,
            ephemeral=ephemeral,
        )
        self.by_id[aid] = att
        return att

    def resolve(
        self,
        spec: Any,
        uploads: Mapping[int, Upload],
        *,
        channel_id: int,
        existing: list[Attachment] | None = None,
        field_path: str = "attachments",
    ) -> list[Attachment]:
        """The attachments a message has after this request (see the module docstring)."""
        for upload in uploads.values():
            if len(upload.data) > self.upload_limit:
                raise ApiError(413, 40005)
        if spec is not None and not isinstance(spec, list):
            raise form_error(field_path, "BASE_TYPE_LIST", "Must be a list.")
        entries: list[dict[str, Any]] = list(spec or [])
        result: list[Attachment] = []
        used: set[int] = set()
        kept_by_id = {a.id: a for a in existing or []}
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or "id" not in entry:
                raise form_error(
                    f"{field_path}.{i}.id", "BASE_TYPE_REQUIRED", "This field is required"
                )
            ref = int(entry["id"])
            if ref in uploads and ref not in used:
                used.add(ref)
                up = uploads[ref]
                result.append(
                    self.create(
                        channel_id,
                        entry.get("filename") or up.filename,
                        up.data,
                        content_type=up.content_type,
                        description=entry.get("description"),
                    )
                )
            elif ref in kept_by_id:
                result.append(kept_by_id[ref])
            else:
                raise form_error(
                    f"{field_path}.{i}.id", "ATTACHMENT_NOT_FOUND", "Unknown attachment."
                )
        if spec is None and existing:
            result = list(existing)
        for index in sorted(uploads):
            if index not in used:
                up = uploads[index]
                result.append(
                    self.create(channel_id, up.filename, up.data, content_type=up.content_type)
                )
        if len(result) > MAX_ATTACHMENTS:
            raise form_error(
                field_path, "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_ATTACHMENTS} or fewer in length."
            )
        return result

    def hold_downloads(self) -> asyncio.Event:
        """Hold every download from now on until the returned Event is set."""
        self.downloads_held = asyncio.Event()
        return self.downloads_held

    async def serve(self, request: web.Request) -> web.StreamResponse:
        try:
            att = self.by_id.get(int(request.match_info["attachment_id"]))
        except ValueError:
            att = None
        if att is None or att.filename != request.match_info["filename"]:
            return web.Response(status=404, text="Not Found")
        if not att.serving:
            return web.Response(
                status=att.refuse_status, text="This content is no longer available."
            )
        if self.downloads_held is not None:
            self.downloads_waiting += 1
            await self.downloads_held.wait()
        att.fetch_count += 1
        return web.Response(body=att.data, headers={"Content-Type": att.content_type})


def resolve_embed_urls(embeds: list[dict[str, Any]], attachments: list[Attachment]) -> None:
    """``attachment://name`` in an embed's image/thumbnail/author/footer becomes that upload's
    URL, as Discord does (in place)."""
    by_name = {a.filename: a for a in attachments}

    def fix(obj: Any, key: str) -> None:
        if isinstance(obj, dict):
            url = obj.get(key)
            if isinstance(url, str) and url.startswith("attachment://"):
                att = by_name.get(url.removeprefix("attachment://"))
                if att is not None:
                    obj[key] = att.url
                    obj.setdefault("proxy_url", att.url)

    for embed in embeds:
        fix(embed.get("image"), "url")
        fix(embed.get("thumbnail"), "url")
        fix(embed.get("author"), "icon_url")
        fix(embed.get("footer"), "icon_url")
