"""Images and files attached at scheduling: downloaded once, right away, with a size limit.

Discord's attachment URLs are signed and expire, so the bytes are kept in the database
(``bot_attachments``) and uploaded with every post. A file over the per-file limit
(``FILE_MAX_MB``) is refused before it is downloaded (by its announced size) and while it is
(by what arrives); one that can't be downloaded is refused with why. The per-server limit
(``GUILD_FILES_MAX_MB``) is checked where the bytes are written, in the same transaction
(:meth:`bot.announcements.Announcements.create`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp

from ..i18n import t
from ..models import Image
from ..parsing.spoken import decimal
from .checks import Refusal

if TYPE_CHECKING:
    import discord

DOWNLOAD_TIMEOUT = 30.0
CHUNK = 64 * 1024


def megabytes(size: float) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def too_large(size: float, limit: float) -> Refusal:
    return Refusal(
        t("That file is {size} MiB; an announcement's file may be at most {limit} MiB. Attach "
          "a smaller one.", size=decimal(size / (1024 * 1024)),
          limit=decimal(limit / (1024 * 1024)))
    )  # fmt: skip


async def download(attachment: discord.Attachment, limit: float) -> Image:
    """The attachment's bytes (at most ``limit``), refused with a clear answer otherwise."""
    if attachment.size > limit:
        raise too_large(attachment.size, limit)
    data = bytearray()
    try:
        timeout = aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(attachment.url) as response,
        ):
            if response.status != 200:
                raise Refusal(
                    t("I couldn't download `{file}` (HTTP {status}). Attach it again.",
                      file=attachment.filename, status=response.status)
                )  # fmt: skip
            async for chunk in response.content.iter_chunked(CHUNK):
                data += chunk
                if len(data) > limit:
                    raise too_large(len(data), limit)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise Refusal(
            t("I couldn't download `{file}` ({error}). Attach it again.",
              file=attachment.filename, error=type(exc).__name__)
        ) from exc  # fmt: skip
    return Image(attachment.filename, attachment.content_type, bytes(data))
