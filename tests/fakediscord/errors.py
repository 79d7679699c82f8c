"""Discord's JSON error answers: ``{"message", "code"}`` plus, for 50035, the ``errors`` tree."""

from __future__ import annotations

from typing import Any

ERROR_MESSAGES = {
    0: "Unknown error",
    10003: "Unknown Channel",
    10004: "Unknown Guild",
    10007: "Unknown Member",
    10008: "Unknown Message",
    10011: "Unknown Role",
    10013: "Unknown User",
    10015: "Unknown Webhook",
    10062: "Unknown interaction",
    10070: "Unknown Guild Scheduled Event",
    10063: "Unknown application command",
    30007: "Maximum number of webhooks reached (15)",
    30038: "Maximum number of uncompleted guild scheduled events reached (100)",
    40005: "Request entity too large",
    40033: "This message has already been crossposted",
    40058: "Cannot send a message in a forum channel",
    40060: "Interaction has already been acknowledged.",
    40067: "A tag is required to create a forum post in this channel",
    50001: "Missing Access",
    50005: "Cannot edit a message authored by another user",
    50006: "Cannot send an empty message",
    50007: "Cannot send messages to this user",
    50008: "Cannot send messages in a non-text channel",
    50013: "Missing Permissions",
    50024: "Cannot execute action on this channel type",
    50027: "Invalid Webhook Token",
    50035: "Invalid Form Body",
    50083: "Thread is archived",
    160005: "Thread is locked",
    220001: "Webhooks posted to forum channels must have a thread_name or thread_id",
    220003: "Webhooks can only create threads in forum channels",
}


class ApiError(Exception):
    """Raised inside route handlers; becomes a Discord-style JSON error response."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str | None = None,
        errors: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message or ERROR_MESSAGES.get(code, "Unknown error")
        self.errors = errors
        super().__init__(f"{status} {code} {self.message}")

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors:
            data["errors"] = self.errors
        return data


def form_error(path: str, code: str, message: str) -> ApiError:
    """A 50035 Invalid Form Body error for one field (``path`` like ``content`` or ``embeds.0``)."""
    errors: dict[str, Any] = {"_errors": [{"code": code, "message": message}]}
    for part in reversed(path.split(".")):
        errors = {part: errors}
    return ApiError(400, 50035, errors=errors)
