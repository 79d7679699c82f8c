"""Interactions: building INTERACTION_CREATE payloads and recording how the bot responds.

A test injects an interaction (``fake.invoke_command``, ``fake.invoke_autocomplete``,
``fake.click_button`` / ``fake.invoke_component``, ``fake.submit_modal``) and gets an
:class:`InteractionHandle` back. The handle records the callback(s) the bot POSTs to
``/interactions/{id}/{token}/callback``, the followups it sends through
``/webhooks/{application_id}/{token}``, and edits/deletes of ``@original``.

Faithful details:

* The callback must come within ``fake.interaction_ack_timeout`` (3 s on Discord) or it gets
  404 code 10062 "Unknown interaction". A second callback gets 400 code 40060.
* The callback type must suit the interaction type (e.g. 8 only for autocomplete, 7 only for
  component / modal submit).
* The first followup after a deferred response (type 5) edits the "thinking" message instead
  of creating a new one, and keeps the deferral's ephemeral flag.
* Followups / ``@original`` edits are accepted for ``fake.interaction_token_ttl`` (15 min).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .attachments import Attachment
from .state import (
    DM,
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    ApplicationCommand,
    Channel,
    Guild,
    Member,
    Message,
    Role,
    User,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from .server import FakeDiscord

# interaction types
PING = 1
APPLICATION_COMMAND = 2
MESSAGE_COMPONENT = 3
APPLICATION_COMMAND_AUTOCOMPLETE = 4
MODAL_SUBMIT = 5

# callback types
CB_PONG = 1
CB_CHANNEL_MESSAGE = 4
CB_DEFERRED_CHANNEL_MESSAGE = 5
CB_DEFERRED_UPDATE_MESSAGE = 6
CB_UPDATE_MESSAGE = 7
CB_AUTOCOMPLETE_RESULT = 8
CB_MODAL = 9
CB_LAUNCH_ACTIVITY = 12

ALLOWED_CALLBACKS: dict[int, set[int]] = {
    APPLICATION_COMMAND: {CB_CHANNEL_MESSAGE, CB_DEFERRED_CHANNEL_MESSAGE, CB_MODAL},
    MESSAGE_COMPONENT: {
        CB_CHANNEL_MESSAGE,
        CB_DEFERRED_CHANNEL_MESSAGE,
        CB_DEFERRED_UPDATE_MESSAGE,
        CB_UPDATE_MESSAGE,
        CB_MODAL,
    },
    APPLICATION_COMMAND_AUTOCOMPLETE: {CB_AUTOCOMPLETE_RESULT},
    MODAL_SUBMIT: {
        CB_CHANNEL_MESSAGE,
        CB_DEFERRED_CHANNEL_MESSAGE,
        CB_DEFERRED_UPDATE_MESSAGE,
        CB_UPDATE_MESSAGE,
    },
}

# application command types
CHAT_INPUT = 1
USER_COMMAND = 2
MESSAGE_COMMAND = 3

# option types
OPT_SUB_COMMAND = 1
OPT_SUB_COMMAND_GROUP = 2
OPT_STRING = 3
OPT_INTEGER = 4
OPT_BOOLEAN = 5
OPT_USER = 6
OPT_CHANNEL = 7
OPT_ROLE = 8
OPT_MENTIONABLE = 9
OPT_NUMBER = 10
OPT_ATTACHMENT = 11

ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024


class CommandNotAvailable(Exception):
    """Discord would not let this member run this command here (so no interaction is sent)."""


@dataclass
class InteractionCallback:
    """One POST to the interaction callback endpoint (accepted or rejected)."""

    type: int
    data: dict[str, Any]
    status: int
    error_code: int | None = None
    at: float = field(default_factory=time.monotonic)

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300

    @property
    def flags(self) -> int:
        return int(self.data.get("flags") or 0)

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & FLAG_EPHEMERAL)

    @property
    def content(self) -> str | None:
        return self.data.get("content")

    @property
    def embeds(self) -> list[dict[str, Any]]:
        return list(self.data.get("embeds") or [])

    @property
    def components(self) -> list[dict[str, Any]]:
        return list(self.data.get("components") or [])

    @property
    def choices(self) -> list[dict[str, Any]]:
        """Autocomplete choices (type 8)."""
        return list(self.data.get("choices") or [])

    @property
    def custom_id(self) -> str | None:
        """Modal custom_id (type 9)."""
        return self.data.get("custom_id")

    @property
    def title(self) -> str | None:
        return self.data.get("title")


class InteractionHandle:
    """What a test holds for an injected interaction. See the module docstring."""

    def __init__(
        self,
        fake: FakeDiscord,
        *,
        type: int,
        guild: Guild | None,
        channel: Channel,
        user: User,
        member: Member | None,
        data: dict[str, Any],
        message: Message | None = None,
        command: ApplicationCommand | None = None,
    ) -> None:
        self.fake = fake
        self.id = fake.snowflakes.next()
        self.token = "aW50ZXJhY3Rpb246" + secrets.token_urlsafe(48)
        self.type = type
        self.guild = guild
        self.channel = channel
        self.user = user
        self.member = member
        self.data = data
        self.message = message  # the message a component/modal came from
        self.command = command
        self.created_at = time.monotonic()
        self.payload: dict[str, Any] = {}
        self.callbacks: list[InteractionCallback] = []
        self.followups: list[Message] = []
        self.original: Message | None = None
        self.modal: dict[str, Any] | None = None
        self.deleted_original = False
        self.delivered_to: list[str] = []
        """The ids of the gateway sessions INTERACTION_CREATE went to (those of its shard)."""

    def __repr__(self) -> str:
        return f"<InteractionHandle id={self.id} type={self.type} callbacks={len(self.callbacks)}>"

    # --- state ----------------------------------------------------------------------------------

    @property
    def acknowledged(self) -> bool:
        return any(cb.accepted for cb in self.callbacks)

    @property
    def callback(self) -> InteractionCallback | None:
        """The accepted callback, if any."""
        for cb in self.callbacks:
            if cb.accepted:
                return cb
        return None

    @property
    def deferred(self) -> bool:
        cb = self.callback
        return cb is not None and cb.type in (
            CB_DEFERRED_CHANNEL_MESSAGE,
            CB_DEFERRED_UPDATE_MESSAGE,
        )

    @property
    def ephemeral(self) -> bool:
        return self.original is not None and self.original.ephemeral

    @property
    def visible_messages(self) -> list[Message]:
        """The original response (if any and not deleted) followed by the followups."""
        out = []
        if self.original is not None and not self.original.deleted:
            out.append(self.original)
        out.extend(m for m in self.followups if not m.deleted)
        return out

    # --- waiting --------------------------------------------------------------------------------

    async def wait_for(
        self,
        predicate: Callable[[InteractionHandle], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
        what: str = "",
    ) -> None:
        await self.fake.wait_until(
            lambda: predicate(self), timeout=timeout, what=what or repr(self)
        )

    async def response(self, timeout: float = 5.0) -> InteractionCallback:  # noqa: ASYNC109
        """Wait for the bot's accepted callback and return it."""
        try:
            await self.wait_for(lambda h: h.acknowledged, timeout, "interaction callback")
        except TimeoutError as exc:
            rejected = [(cb.type, cb.status, cb.error_code) for cb in self.callbacks]
            raise TimeoutError(
                f"no accepted callback for interaction {self.id} within {timeout}s "
                f"(rejected attempts: {rejected})"
            ) from exc
        cb = self.callback
        assert cb is not None
        return cb

    async def followup(self, index: int = 0, timeout: float = 5.0) -> Message:  # noqa: ASYNC109
        """Wait until followup number ``index`` exists and return it."""
        await self.wait_for(lambda h: len(h.followups) > index, timeout, f"followup #{index}")
        return self.followups[index]

    async def final_message(self, timeout: float = 5.0) -> Message:  # noqa: ASYNC109
        """The message the user finally sees for this interaction: the original response, once
        it is no longer a "thinking..." placeholder (after a defer it waits for the edit or the
        first followup). For an UPDATE_MESSAGE it is the updated component message."""
        await self.response(timeout)

        def done(h: InteractionHandle) -> bool:
            return h.original is not None and not h.original.loading

        await self.wait_for(done, timeout, "final interaction message")
        assert self.original is not None
        return self.original

    async def final_content(self, timeout: float = 5.0) -> str:  # noqa: ASYNC109
        return (await self.final_message(timeout)).content

    # --- follow-on interactions -----------------------------------------------------------------

    async def submit_modal(
        self,
        values: Mapping[str, Any],
        *,
        member: Member | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> InteractionHandle:
        """Submit the modal the bot answered with (callback type 9)."""
        cb = await self.response(timeout)
        if cb.type != CB_MODAL or self.modal is None:
            raise AssertionError(f"the bot did not answer with a modal (callback type {cb.type})")
        return await self.fake.submit_modal(
            self.guild,
            self.channel,
            member or self.member or self.user,
            self.modal["custom_id"],
            values,
            modal=self.modal,
            message=self.message,
        )

    async def click(
        self,
        custom_id: str,
        *,
        member: Member | None = None,
        values: list[str] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> InteractionHandle:
        """Click a component on this interaction's visible message."""
        msg = await self.final_message(timeout)
        return await self.fake.invoke_component(
            msg, custom_id, member or self.member or self.user, values=values
        )


# --- payload building ---


def _user_of(who: Member | User) -> User:
    return who.user if isinstance(who, Member) else who


def build_base_payload(
    fake: FakeDiscord,
    handle: InteractionHandle,
    *,
    locale: str,
) -> dict[str, Any]:
    guild = handle.guild
    channel = handle.channel
    payload: dict[str, Any] = {
        "id": str(handle.id),
        "application_id": str(fake.application_id),
        "type": handle.type,
        "data": handle.data,
        "channel_id": str(channel.id),
        "token": handle.token,
        "version": 1,
        "locale": locale,
        "entitlements": [],
        "entitlement_sku_ids": [],
        "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
    }
    if guild is not None:
        member = handle.member
        assert member is not None
        member_perms = guild.permissions_for(member, channel)
        channel_data = channel.to_dict()
        channel_data["permissions"] = str(member_perms)
        payload.update(
            {
                "guild_id": str(guild.id),
                "guild": {"id": str(guild.id), "locale": guild.preferred_locale, "features": []},
                "guild_locale": guild.preferred_locale,
                "channel": channel_data,
                "member": member.to_dict(permissions=member_perms),
                "app_permissions": str(guild.bot_permissions_in(channel)),
                "authorizing_integration_owners": {"0": str(guild.id)},
                "context": 0,
            }
        )
    else:
        payload.update(
            {
                "channel": channel.to_dict(),
                "user": handle.user.to_dict(),
                "app_permissions": str(fake.dm_app_permissions),
                "authorizing_integration_owners": {"0": "0"},
                "context": 1,
            }
        )
    if handle.message is not None:
        payload["message"] = fake._message_payload(handle.message)
    return payload


def _coerce_option(
    fake: FakeDiscord,
    *,
    guild: Guild | None,
    channel: Channel,
    member: Member | None,
    opt_def: dict[str, Any] | None,
    name: str,
    value: Any,
    focused: bool,
    resolved: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """Turn a python value into an interaction option (and fill ``resolved``)."""
    opt_type = opt_def["type"] if opt_def is not None else _infer_type(value)
    out: dict[str, Any] = {"name": name, "type": opt_type}

    if focused:
        out["value"] = "" if value is None else str(value)
        out["focused"] = True
        return out

    if opt_type in (OPT_USER, OPT_CHANNEL, OPT_ROLE, OPT_MENTIONABLE):
        value = _resolve_entity(
            fake, guild=guild, channel=channel, member=member, opt_type=opt_type,
            opt_def=opt_def, name=name, value=value, resolved=resolved,
        )  # fmt: skip
    elif opt_type == OPT_ATTACHMENT:
        value = _resolve_attachment(fake, channel, name, value, resolved)
    else:
        value = _check_scalar(opt_type, opt_def, name, value)
    if opt_def is not None:
        _check_bounds(opt_type, opt_def, name, value)
    out["value"] = value
    return out


def _check_scalar(opt_type: int, opt_def: dict[str, Any] | None, name: str, value: Any) -> Any:
    """A string, integer, number or boolean option's value as Discord's client sends it
    (a string within its lengths, a number as a float), refused when it isn't one."""
    if opt_type == OPT_STRING:
        value = str(value)
        if opt_def is not None:
            lo, hi = opt_def.get("min_length"), opt_def.get("max_length")
            if lo is not None and len(value) < lo:
                raise ValueError(f"option {name!r}: shorter than min_length={lo}")
            if hi is not None and len(value) > hi:
                raise ValueError(f"option {name!r}: longer than max_length={hi}")
    elif opt_type == OPT_INTEGER:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"option {name!r} is an integer option, got {value!r}")
    elif opt_type == OPT_NUMBER:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"option {name!r} is a number option, got {value!r}")
        value = float(value)
    elif opt_type == OPT_BOOLEAN and not isinstance(value, bool):
        raise ValueError(f"option {name!r} is a boolean option, got {value!r}")
    return value


def _check_bounds(opt_type: int, opt_def: dict[str, Any], name: str, value: Any) -> None:
    """A number within the option's min_value and max_value; a value among its choices."""
    if opt_type in (OPT_INTEGER, OPT_NUMBER):
        lo, hi = opt_def.get("min_value"), opt_def.get("max_value")
        if lo is not None and value < lo:
            raise ValueError(f"option {name!r}: {value} < min_value={lo}")
        if hi is not None and value > hi:
            raise ValueError(f"option {name!r}: {value} > max_value={hi}")
    if opt_def.get("choices"):
        allowed = [c["value"] for c in opt_def["choices"]]
        if value not in allowed:
            raise ValueError(f"option {name!r}: {value!r} is not one of the choices {allowed}")


def _resolve_attachment(
    fake: FakeDiscord,
    channel: Channel,
    name: str,
    value: Any,
    resolved: dict[str, dict[str, Any]],
) -> str:
    """An ATTACHMENT option: ``value`` is an :class:`Attachment` (``fake.make_attachment``),
    or ``(filename, bytes)``; it goes into ``resolved.attachments`` with a URL the fake
    serves (until ``attachment.stop_serving()``)."""
    if isinstance(value, tuple) and len(value) == 2:
        value = fake.make_attachment(value[0], value[1])
    if not isinstance(value, Attachment):
        raise ValueError(f"option {name!r}: pass an Attachment or (filename, bytes), got {value!r}")
    if value.size > ATTACHMENT_SIZE_LIMIT:
        raise ValueError(f"option {name!r}: {value.size} bytes is over Discord's upload limit")
    resolved.setdefault("attachments", {})[str(value.id)] = value.to_dict()
    return str(value.id)


def _infer_type(value: Any) -> int:
    if isinstance(value, bool):
        return OPT_BOOLEAN
    if isinstance(value, int):
        return OPT_INTEGER
    if isinstance(value, float):
        return OPT_NUMBER
    if isinstance(value, Channel):
        return OPT_CHANNEL
    if isinstance(value, Role):
        return OPT_ROLE
    if isinstance(value, (Member, User)):
        return OPT_USER
    if isinstance(value, Attachment):
        return OPT_ATTACHMENT
    return OPT_STRING


def _resolve_entity(
    fake: FakeDiscord,
    *,
    guild: Guild | None,
    channel: Channel,
    member: Member | None,
    opt_type: int,
    opt_def: dict[str, Any] | None,
    name: str,
    value: Any,
    resolved: dict[str, dict[str, Any]],
) -> str:
    if opt_type == OPT_MENTIONABLE:
        if isinstance(value, Role) or (isinstance(value, int) and guild and value in guild.roles):
            opt_type = OPT_ROLE
        else:
            opt_type = OPT_USER
        resolved_id = _resolve_entity(
            fake, guild=guild, channel=channel, member=member, opt_type=opt_type,
            opt_def=None, name=name, value=value, resolved=resolved,
        )  # fmt: skip
        return resolved_id

    if opt_type == OPT_CHANNEL:
        ch = value if isinstance(value, Channel) else fake.channels.get(int(value))
        if ch is None or ch.deleted:
            raise ValueError(f"option {name!r}: unknown channel {value!r}")
        allowed_types = (opt_def or {}).get("channel_types")
        if allowed_types and ch.type not in allowed_types:
            raise ValueError(f"option {name!r}: channel type {ch.type} not in {allowed_types}")
        data = ch.to_dict()
        data.pop("permission_overwrites", None)
        if guild is not None and member is not None:
            data["permissions"] = str(guild.permissions_for(member, ch))
        else:
            data["permissions"] = "0"
        resolved.setdefault("channels", {})[str(ch.id)] = data
        return str(ch.id)

    if opt_type == OPT_ROLE:
        if guild is None:
            raise ValueError(f"option {name!r}: roles need a guild")
        role = value if isinstance(value, Role) else guild.roles.get(int(value))
        if role is None:
            raise ValueError(f"option {name!r}: unknown role {value!r}")
        resolved.setdefault("roles", {})[str(role.id)] = role.to_dict()
        return str(role.id)

    # user
    if isinstance(value, Member):
        target_user = value.user
        target_member: Member | None = value
    elif isinstance(value, User):
        target_user = value
        target_member = guild.get_member(value) if guild else None
    else:
        uid = int(value)
        found = fake.users.get(uid)
        if found is None:
            raise ValueError(f"option {name!r}: unknown user {value!r}")
        target_user = found
        target_member = guild.get_member(uid) if guild else None
    resolved.setdefault("users", {})[str(target_user.id)] = target_user.to_dict()
    if target_member is not None and guild is not None:
        mdata = target_member.to_dict(with_user=False, permissions=None)
        mdata["permissions"] = str(guild.permissions_for(target_member, channel))
        resolved.setdefault("members", {})[str(target_user.id)] = mdata
    return str(target_user.id)


def build_command_options(
    fake: FakeDiscord,
    *,
    command: ApplicationCommand | None,
    path: list[str],
    options: Mapping[str, Any],
    guild: Guild | None,
    channel: Channel,
    member: Member | None,
    focused: str | None,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Build the (possibly nested) option list for ``/root sub ... {options}``."""
    resolved: dict[str, dict[str, Any]] = {}
    defs: list[dict[str, Any]] | None = command.options if command is not None else None
    nesting: list[dict[str, Any]] = []
    for part in path:
        if defs is None:
            sub_type = OPT_SUB_COMMAND
            sub_defs = None
        else:
            match = next(
                (
                    d
                    for d in defs
                    if d["name"] == part and d["type"] in (OPT_SUB_COMMAND, OPT_SUB_COMMAND_GROUP)
                ),
                None,
            )
            if match is None:
                raise ValueError(f"no subcommand {part!r} registered")
            sub_type = match["type"]
            sub_defs = match.get("options") or []
        nesting.append({"name": part, "type": sub_type, "options": []})
        defs = sub_defs

    if defs is not None:
        leaf_kinds = {d["type"] for d in defs}
        if leaf_kinds & {OPT_SUB_COMMAND, OPT_SUB_COMMAND_GROUP}:
            raise ValueError("this command needs a subcommand: pass 'command sub' as the name")

    leaf: list[dict[str, Any]] = []
    by_name = {d["name"]: d for d in defs} if defs is not None else {}
    for name, value in options.items():
        if defs is not None and name not in by_name:
            raise ValueError(f"unknown option {name!r}; registered: {sorted(by_name)}")
        leaf.append(
            _coerce_option(
                fake,
                guild=guild,
                channel=channel,
                member=member,
                opt_def=by_name.get(name),
                name=name,
                value=value,
                focused=(name == focused),
                resolved=resolved,
            )
        )
    if focused is not None and focused not in options:
        opt_def = by_name.get(focused)
        leaf.append(
            {
                "name": focused,
                "type": opt_def["type"] if opt_def else OPT_STRING,
                "value": "",
                "focused": True,
            }
        )
    if focused is None and defs is not None:
        missing = [d["name"] for d in defs if d.get("required") and d["name"] not in options]
        if missing:
            raise ValueError(f"missing required option(s): {missing}")

    result = leaf
    for level in reversed(nesting):
        level["options"] = result
        result = [level]
    return result, resolved


def iter_components(components: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """Walk nested components (action rows, containers, sections, labels)."""
    for comp in components:
        yield comp
        if comp.get("components"):
            yield from iter_components(comp["components"])
        if comp.get("accessory"):
            yield from iter_components([comp["accessory"]])
        if comp.get("component"):
            yield from iter_components([comp["component"]])


def build_modal_components(
    modal: Mapping[str, Any] | None, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Mirror the modal's layout with the submitted values; check what Discord's client would."""
    if modal is None:
        return [
            {"type": 1, "components": [{"type": 4, "custom_id": cid, "value": str(v)}]}
            for cid, v in values.items()
        ]
    known = set()
    out: list[dict[str, Any]] = []

    def submit_for(comp: dict[str, Any]) -> dict[str, Any] | None:
        cid = comp.get("custom_id")
        if cid is None:
            return None
        known.add(cid)
        if comp["type"] == 4:  # text input
            value = values.get(cid, comp.get("value") or "")
            value = "" if value is None else str(value)
            if comp.get("required", True) and not value:
                raise ValueError(f"modal text input {cid!r} is required")
            if value:
                lo, hi = comp.get("min_length"), comp.get("max_length")
                if lo is not None and len(value) < lo:
                    raise ValueError(f"modal text input {cid!r}: shorter than {lo}")
                if hi is not None and len(value) > hi:
                    raise ValueError(f"modal text input {cid!r}: longer than {hi}")
            return {"type": 4, "custom_id": cid, "value": value, "id": comp.get("id", 0)}
        return submitted_select(comp, values.get(cid))

    for top in modal.get("components", []):
        if top["type"] == 1:
            row = [s for s in (submit_for(c) for c in top.get("components", [])) if s]
            out.append({"type": 1, "components": row})
        elif top["type"] == 18:
            inner = submit_for(top["component"])
            if inner is not None:
                out.append({"type": 18, "id": top.get("id", 0), "component": inner})
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"modal has no inputs {sorted(unknown)}; it has {sorted(known)}")
    return out


SELECT_OPTION_TYPES = {5: OPT_USER, 6: OPT_ROLE, 7: OPT_MENTIONABLE, 8: OPT_CHANNEL}
"""The auto-populated select menus (user, role, mentionable, channel) and the option type
whose ``resolved`` entries their values get."""


def resolve_selects(
    fake: FakeDiscord,
    modal: Mapping[str, Any] | None,
    components: list[dict[str, Any]],
    *,
    guild: Guild | None,
    channel: Channel,
    member: Member | None,
) -> dict[str, dict[str, Any]]:
    """The ``resolved`` data of a modal submit: each user, role or channel picked in its
    selects (a channel of a type the select offers, else ``ValueError``)."""
    defs = {c.get("custom_id"): c for c in iter_components((modal or {}).get("components", []))}
    resolved: dict[str, dict[str, Any]] = {}
    for comp in iter_components(components):
        kind = SELECT_OPTION_TYPES.get(comp["type"])
        if kind is None:
            continue
        offered = {"channel_types": defs.get(comp["custom_id"], {}).get("channel_types")}
        for value in comp["values"]:
            _resolve_entity(
                fake, guild=guild, channel=channel, member=member, opt_type=kind,
                opt_def=offered, name=comp["custom_id"], value=value, resolved=resolved,
            )  # fmt: skip
    return resolved


def submitted_select(comp: Mapping[str, Any], given: Iterable[Any] | None) -> dict[str, Any]:
    """A select of a modal as submitted with ``given`` (ids, or fake objects; None: what the
    client shows picked when the modal opens, its ``default_values``), checked as Discord's
    client does (required, ``min_values``/``max_values``)."""
    cid = comp["custom_id"]
    if given is None:
        given = [d["id"] for d in comp.get("default_values") or []]
    vals = [str(getattr(v, "id", v)) for v in given]
    if comp.get("required", True) and not vals:
        raise ValueError(f"modal select {cid!r} is required")
    lo, hi = comp.get("min_values", 1), comp.get("max_values", 1)
    if vals and not lo <= len(vals) <= hi:
        raise ValueError(f"modal select {cid!r}: {len(vals)} values, not {lo}-{hi}")
    return {"type": comp["type"], "custom_id": cid, "values": vals}


def find_component(message: Message, custom_id: str) -> dict[str, Any]:
    for comp in iter_components(message.components):
        if comp.get("custom_id") == custom_id:
            return comp
    ids = [c.get("custom_id") for c in iter_components(message.components) if c.get("custom_id")]
    raise ValueError(f"message {message.id} has no component {custom_id!r} (it has {ids})")


def is_dm(channel: Channel) -> bool:
    return channel.type == DM


LOADING_FLAGS = FLAG_LOADING
