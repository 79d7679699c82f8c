"""Discord's own OpenAPI spec as a check on every REST request the fake receives.

The spec (``spec/openapi.json``, vendored from ``discord/discord-api-spec``; ``spec/README.md``
names the commit) is loaded once per process. For each request :meth:`ApiSpec.check` finds the
operation (method + path template; a literal segment such as ``@original`` beats a parameter),
then checks the path parameters, the query parameters (unknown ones too) and the JSON body (or a
multipart body's ``payload_json``) against the operation's schemas with ``jsonschema``
(Draft 2020-12, as OpenAPI 3.1 says), its ``$ref`` resolved inside the spec document. Validators
are made once per schema and process; a body seen before (the same command list synced by
every test) is answered from a cache.

What the check finds is a :class:`SpecViolation`. Each :class:`FakeDiscord` has a
:class:`SpecCheck` (``fake.spec``) that records them; while a test runs, ``tests/conftest.py``
collects every fake's violations (:func:`collecting_violations`) and fails the test that sent
them. A test that sends a refused request on purpose wraps it in
``with fake.spec.allow_violations() as seen:`` and asserts on ``seen``.

Where the spec is knowingly stricter than Discord, :data:`SPEC_EXCEPTIONS` lists the cases, each
with its reason; nothing else is exempt.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import referencing
from jsonschema.exceptions import ValidationError, best_match
from referencing.jsonschema import DRAFT202012

SPEC_FILE = Path(__file__).with_name("spec") / "openapi.json"
_SPEC_URI = "urn:discord-api-spec:openapi.json"
_BODY_CACHE_SIZE = 4096
# "Boolean Query Strings" in Discord's API reference: True/true/1 and False/false/0.
_QUERY_BOOLEANS = {
    **dict.fromkeys(("True", "true", "1"), True),
    **dict.fromkeys(("False", "false", "0"), False),
}


@dataclass(frozen=True, slots=True)
class SpecException:
    """A place where the spec is knowingly stricter than Discord.

    ``operation`` and ``where`` are ``fnmatch`` patterns (``*`` also spans ``/``) over a
    violation's :attr:`SpecViolation.operation` (``"METHOD /template"`` as the spec spells it,
    or the request's own method and path for a route the spec lacks) and
    :attr:`SpecViolation.where`; ``message``, if given, one over its message."""

    operation: str
    where: str
    reason: str
    message: str = "*"

    def covers(self, violation: SpecViolation) -> bool:
        return (
            fnmatch.fnmatchcase(violation.operation, self.operation)
            and fnmatch.fnmatchcase(violation.where, self.where)
            and fnmatch.fnmatchcase(violation.message, self.message)
        )


_AN_INTEGER_REFUSED = "[0-9]* is not valid under any of the given schemas"

SPEC_EXCEPTIONS: tuple[SpecException, ...] = (
    SpecException(
        "POST /oauth2/token",
        "route",
        "the OAuth2 token endpoint (a form body, documented in Discord's OAuth2 topic) is not "
        "part of the spec",
    ),
    SpecException(
        "*",
        "body*/attachments/*/id",
        "a new upload's attachment id is its files[n] index, an integer (discord.py's "
        "File.to_dict sends it so; Discord's upload docs say so), where the spec has a "
        "snowflake string",
    ),
    SpecException(
        "* /applications/{application_id}/*commands*",
        "body*/channel_types/*",
        "GUILD_MEDIA (16) is a channel type in Discord's docs (media channels) that the spec's "
        "ChannelTypes lacks",
        message="16 is not valid under any of the given schemas",
    ),
    *(
        SpecException(
            operation,
            where,
            "discord.py sends these ids as JSON integers (AllowedMentions.to_dict, "
            "start_private_message); Discord takes integer snowflakes, the spec types them as "
            "strings",
            message=_AN_INTEGER_REFUSED,
        )
        for operation, where in (
            ("*", "body*/allowed_mentions/users/*"),
            ("*", "body*/allowed_mentions/roles/*"),
            ("POST /users/@me/channels", "body/recipient_id"),
        )
    ),
    SpecException(
        "POST /channels/{channel_id}/threads",
        "query/use_nested_fields",
        "discord.py always adds use_nested_fields=1 to a forum post (start_thread_in_forum); "
        "Discord accepts it, the spec does not list it",
    ),
)
"""The one list of exceptions to the spec check."""


@dataclass(frozen=True, slots=True)
class SpecViolation:
    """One thing a request did that the spec refuses.

    ``where``: ``"route"`` (no such operation), ``"path/<name>"``, ``"query/<name>"``, or
    ``"body"`` followed by the JSON location (``"body/embeds/0/title"``)."""

    method: str
    path: str
    operation: str
    where: str
    message: str
    schema_path: str = ""

    def __str__(self) -> str:
        schema = f" [schema: {self.schema_path}]" if self.schema_path else ""
        return f"{self.method} {self.path} ({self.operation}): {self.where}: {self.message}{schema}"


@dataclass(frozen=True, slots=True)
class _Param:
    pointer: str
    required: bool


@dataclass(frozen=True, slots=True)
class _Operation:
    key: str  # "POST /channels/{channel_id}/messages"
    pattern: re.Pattern[str]
    literals: int  # literal segments: the more, the better a match
    path_params: Mapping[str, _Param]
    query_params: Mapping[str, _Param]
    body: _Param | None  # the application/json schema, if the operation takes a body


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _params(raw: list[dict[str, Any]], base: str) -> Iterator[tuple[str, str, _Param]]:
    """(in, name, schema pointer) of each parameter object (the spec writes them inline)."""
    for index, param in enumerate(raw):
        pointer = f"{base}/{index}/schema"
        yield param["in"], param["name"], _Param(pointer, bool(param.get("required")))


def _operations(document: Mapping[str, Any]) -> dict[str, list[_Operation]]:
    by_method: dict[str, list[_Operation]] = {}
    for template, item in document["paths"].items():
        item_base = f"/paths/{_escape(template)}"
        shared = list(_params(item.get("parameters", []), f"{item_base}/parameters"))
        segments = template.strip("/").split("/")
        regex = "/".join(
            f"(?P<{s[1:-1]}>[^/]+)" if s.startswith("{") else re.escape(s) for s in segments
        )
        pattern = re.compile(f"/{regex}")
        literals = sum(not s.startswith("{") for s in segments)
        for method, op in item.items():
            if method == "parameters":
                continue
            base = f"{item_base}/{method}"
            own = list(_params(op.get("parameters", []), f"{base}/parameters"))
            path_params = {n: p for where, n, p in shared + own if where == "path"}
            query_params = {n: p for where, n, p in shared + own if where == "query"}
            body = None
            content = op.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                body = _Param(
                    f"{base}/requestBody/content/application~1json/schema",
                    bool(op["requestBody"].get("required")),
                )
            key = f"{method.upper()} {template}"
            by_method.setdefault(method.upper(), []).append(
                _Operation(key, pattern, literals, path_params, query_params, body)
            )
    for ops in by_method.values():
        ops.sort(key=lambda o: -o.literals)
    return by_method


def _short(message: str, limit: int = 300) -> str:
    return (
        message if len(message) <= limit else f"{message[: limit - 20]}... ({len(message)} chars)"
    )


def _where(prefix: str, error: ValidationError) -> str:
    return "/".join([prefix, *(str(p) for p in error.absolute_path)])


class ApiSpec:
    """The loaded spec: operations by method, and a validator per schema (made on first use)."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        resource = referencing.Resource.from_contents(document, default_specification=DRAFT202012)
        self._registry: referencing.Registry[Any] = referencing.Registry().with_resource(
            _SPEC_URI, resource
        )
        self._operations = _operations(document)
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}
        self._body_cache: dict[tuple[str, str], tuple[tuple[str, str, str], ...]] = {}

    def operation(self, method: str, path: str) -> _Operation | None:
        """The operation ``method path`` (path after ``/api/v10``) is, or None."""
        for op in self._operations.get(method.upper(), ()):
            if op.pattern.fullmatch(path):
                return op
        return None

    def _validator(self, pointer: str) -> jsonschema.Draft202012Validator:
        validator = self._validators.get(pointer)
        if validator is None:
            validator = jsonschema.Draft202012Validator(
                {"$ref": f"{_SPEC_URI}#{pointer}"}, registry=self._registry
            )
            self._validators[pointer] = validator
        return validator

    def _first_error(self, pointer: str, instance: Any) -> ValidationError | None:
        return best_match(self._validator(pointer).iter_errors(instance))

    def _check_string(self, pointer: str, raw: str) -> ValidationError | None:
        """A path or query value is text; the spec types some of them as integers or booleans
        (Discord parses them), so the value passes if its text or its parsed form is valid."""
        candidates: list[Any] = []
        if re.fullmatch(r"-?\d+", raw):
            candidates.append(int(raw))
        if raw in _QUERY_BOOLEANS:  # Discord's documented spellings of a boolean
            candidates.append(_QUERY_BOOLEANS[raw])
        with contextlib.suppress(ValueError):
            candidates.append(float(raw))
        candidates.append(raw)
        errors = [self._first_error(pointer, value) for value in candidates]
        return None if None in errors else errors[0]

    def check(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        body: Any,
        *,
        body_read: bool,
    ) -> list[SpecViolation]:
        """Every way the request breaks the spec, less :data:`SPEC_EXCEPTIONS`. ``body`` is the
        parsed JSON (or ``payload_json``), None for none; ``body_read`` is false when the fake
        refused the request before reading its body (then the body is not judged)."""
        op = self.operation(method, path)
        found: list[SpecViolation] = []

        def add(where: str, message: str, schema_path: str = "") -> None:
            key = op.key if op is not None else f"{method} {path}"
            found.append(SpecViolation(method, path, key, where, message, schema_path))

        if op is None:
            add("route", "no operation in the spec has this method and path")
        else:
            match = op.pattern.fullmatch(path)
            assert match is not None
            for name, param in op.path_params.items():
                error = self._check_string(param.pointer, match.group(name))
                if error is not None:
                    add(f"path/{name}", _short(error.message))
            for name, value in query.items():
                qparam = op.query_params.get(name)
                if qparam is None:
                    add(f"query/{name}", "the operation has no such query parameter")
                    continue
                error = self._check_string(qparam.pointer, value)
                if error is not None:
                    add(f"query/{name}", _short(error.message))
            for name, qparam in op.query_params.items():
                if qparam.required and name not in query:
                    add(f"query/{name}", "a required query parameter is missing")
            if body_read:
                for where, message, schema_path in self._body_errors(op, body):
                    add(where, message, schema_path)
        return [v for v in found if not any(e.covers(v) for e in SPEC_EXCEPTIONS)]

    def _body_errors(self, op: _Operation, body: Any) -> tuple[tuple[str, str, str], ...]:
        """(where, message, schema path) of the body's first error, if any; a body seen before
        for this operation is answered from the cache."""
        if op.body is None:
            return () if body is None else (("body", "the operation takes no body", ""),)
        if body is None:
            return (("body", "the operation requires a body", ""),) if op.body.required else ()
        key = (op.body.pointer, json.dumps(body, sort_keys=True))
        cached = self._body_cache.get(key)
        if cached is not None:
            return cached
        error = self._first_error(op.body.pointer, body)
        result: tuple[tuple[str, str, str], ...] = ()
        if error is not None:
            schema_path = "/".join(str(p) for p in error.absolute_schema_path)
            result = ((_where("body", error), _short(error.message), schema_path),)
            result = self._excepted_branch(op, error) or result
        if len(self._body_cache) >= _BODY_CACHE_SIZE:
            self._body_cache.clear()
        self._body_cache[key] = result
        return result

    @staticmethod
    def _excepted_branch(
        op: _Operation, error: ValidationError
    ) -> tuple[tuple[str, str, str], ...] | None:
        """A body that fails every branch of a top-level ``anyOf``/``oneOf`` (a webhook's
        JSON or multipart body) only because of what :data:`SPEC_EXCEPTIONS` allows in one
        branch: that branch's errors (the caller drops them as excepted), so the exceptions
        hold inside such bodies as they do in plain ones; None otherwise."""
        if error.validator not in ("anyOf", "oneOf") or not error.context:
            return None
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        for errors in branches.values():
            found = tuple(
                (_where("body", e), _short(e.message), "/".join(map(str, e.absolute_schema_path)))
                for e in errors
            )
            violations = [SpecViolation("", "", op.key, w, m, p) for w, m, p in found]
            if all(any(x.covers(v) for x in SPEC_EXCEPTIONS) for v in violations):
                return found
        return None


@functools.cache
def api_spec() -> ApiSpec:
    """The vendored spec, loaded once per process."""
    return ApiSpec(json.loads(SPEC_FILE.read_text(encoding="utf-8")))


# --- per-fake recording, per-test collection ---------------------------------------------------

_collectors: list[list[SpecViolation]] = []


@contextlib.contextmanager
def collecting_violations() -> Iterator[list[SpecViolation]]:
    """While the block runs, every fake's unexpected violations are appended to the yielded
    list too (the innermost such block only)."""
    found: list[SpecViolation] = []
    _collectors.append(found)
    try:
        yield found
    finally:
        _collectors.remove(found)


@contextlib.contextmanager
def failing_on_violations() -> Iterator[None]:
    """Fail (``pytest.fail``) after the block if any fake saw a request the spec refuses and
    the block did not allow it; ``tests/conftest.py`` wraps every test in this."""
    import pytest

    with collecting_violations() as found:
        yield
    if found:
        pytest.fail(violation_report(found), pytrace=False)


def violation_report(violations: list[SpecViolation]) -> str:
    """The failure message naming each refused request and what the spec says about it."""
    lines = [f"{len(violations)} request(s) the Discord API spec refuses:"]
    lines += [f"  {v}" for v in violations[:20]]
    if len(violations) > 20:
        lines.append(f"  ... and {len(violations) - 20} more")
    lines.append(
        "Fix the sender, or, where the spec is knowingly stricter than Discord, add a reasoned "
        "entry to SPEC_EXCEPTIONS in tests/fakediscord/apispec.py."
    )
    return "\n".join(lines)


class SpecCheck:
    """A fake's spec check (``fake.spec``): ``enabled``, ``violations`` (all, in order),
    :meth:`allow_violations` for requests a test sends invalid on purpose."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.violations: list[SpecViolation] = []
        self.checked = 0
        self._allowed: list[list[SpecViolation]] = []

    def check(
        self, method: str, path: str, query: Mapping[str, str], body: Any, *, body_read: bool
    ) -> list[SpecViolation]:
        """Check one request; record and report what it breaks (returned too)."""
        if not self.enabled:
            return []
        self.checked += 1
        found = api_spec().check(method, path, query, body, body_read=body_read)
        self.violations.extend(found)
        if found:
            sinks = self._allowed or _collectors
            if sinks:
                sinks[-1].extend(found)
        return found

    @contextlib.contextmanager
    def allow_violations(self) -> Iterator[list[SpecViolation]]:
        """Violations inside the block are expected: they go to the yielded list (for the test
        to assert on) and do not fail the test."""
        seen: list[SpecViolation] = []
        self._allowed.append(seen)
        try:
            yield seen
        finally:
            self._allowed.remove(seen)
