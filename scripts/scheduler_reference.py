"""Write the reference of the scheduler's public names into its README, from the docstrings.

    .venv/bin/python scripts/scheduler_reference.py           # rewrite the reference section
    .venv/bin/python scripts/scheduler_reference.py --check   # exit 1 if it is out of date

The section between ``<!-- reference:start -->`` and ``<!-- reference:end -->`` of
``packaging/scheduler/README.md`` is every public name with its signature and the first
paragraph of its docstring: each name of ``scheduler.__all__`` (and ``PostgresStore``,
imported lazily), of ``scheduler.testing.__all__`` and of ``scheduler.metrics.__all__``;
for a class, its public methods, properties and attributes, and the classes reached through
its properties and attributes (``sched.schedules``, ``ctx.scheduler``), which are public by
use even where no import names them; a ``**options: Unpack[SomeOptions]`` parameter is
expanded into its keys. Then the command line, from its parser. So a name added to
``__all__`` (or a method added to a public class) appears here with its docstring the next
time this runs, and ``tests/test_scheduler_distribution.py`` fails until it has run.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import importlib
import inspect
import itertools
import os
import pkgutil
import re
import sys
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "packaging" / "scheduler" / "README.md"
START = "<!-- reference:start -->"
END = "<!-- reference:end -->"

PUBLIC_MODULES = ("scheduler", "scheduler.testing", "scheduler.metrics")
LAZY = {"scheduler": ("PostgresStore",)}
"""Public names outside ``__all__``: imported on first use (PostgresStore needs asyncpg, the
``postgres`` extra, so a star import must not)."""

CHAPTERS = (
    "scheduler._scheduler",
    "scheduler.context",
    "scheduler.registry",
    "scheduler.models",
    "scheduler.schedules",
    "scheduler.crons",
    "scheduler.triggers",
    "scheduler.leases",
    "scheduler._once",
    "scheduler._lanes",
    "scheduler.abc",
    "scheduler.stores.sqlite",
    "scheduler.stores.postgres",
    "scheduler.migrations",
    "scheduler.clock",
    "scheduler.settings",
    "scheduler.stats",
    "scheduler.errors",
)
"""The order of the package's chapters, by the module that defines each name (a submodule of
``triggers`` counts as ``triggers``). A name defined anywhere else gets a chapter of its own
after these, titled by its module's docstring: nothing public is left out."""

CHAPTER_OF = {"scheduler._engine": "scheduler._scheduler"}
"""Modules whose names stand in another's chapter (``JobRequest`` beside ``enqueue_many``)."""

NO_DOC = "(no docstring)"


# --- text ------------------------------------------------------------------------------------


def markdown(text: str) -> str:
    """reStructuredText roles and literals as Markdown: ``x`` and :class:`~a.B` as `x`, `B`."""

    def role(match: re.Match[str]) -> str:
        target = match[2]
        if target.startswith("~"):
            target = target[1:].rsplit(".", 1)[-1]
        return f"`{target}`"

    text = re.sub(r":(\w+):`([^`]+)`", role, text)
    return text.replace("``", "`")


def first_paragraph(obj: Any) -> str:
    """What ``obj`` does: the first paragraph of its docstring, on one line."""
    doc = inspect.getdoc(obj)
    if not doc:
        return ""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return markdown(" ".join(line.strip() for line in paragraph.splitlines()))


def first_sentence(obj: Any) -> str:
    """The docstring's words up to its first full stop, colon or semicolon (outside
    parentheses)."""
    text = first_paragraph(obj)
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ".:;" and (i + 1 == len(text) or text[i + 1] == " "):
            return text[:i]
    return text


def annotation(value: Any) -> str:
    """An annotation as the source wrote it (the package postpones them: they are strings)."""
    if value is inspect.Parameter.empty:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, typing.ForwardRef):
        return value.__forward_arg__
    return inspect.formatannotation(value)


def default(value: Any, names: dict[str, Any] | None = None) -> str:
    """A default value as code: its repr, or the module-level name of an object without one."""
    text = repr(value)
    if re.fullmatch(r"<.* at 0x[0-9a-f]+>", text):
        for name, known in (names or {}).items():
            if known is value and not name.startswith("_"):
                return name
        return re.sub(r" at 0x[0-9a-f]+", "", text)
    return text


# --- what is public ----------------------------------------------------------------------------


def package_classes() -> dict[str, list[type]]:
    """Every class defined in the scheduler package, by name (to resolve an annotation that
    names a class imported only for type checking)."""
    import scheduler

    found: dict[str, list[type]] = {}
    for info in pkgutil.walk_packages(scheduler.__path__, "scheduler."):
        if info.name in ("scheduler.__main__", "scheduler.metrics"):
            continue  # the first runs the command line; the second is imported below
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == info.name:
                found.setdefault(value.__name__, []).append(value)
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module_name:
                found.setdefault(value.__name__, [])
                if value not in found[value.__name__]:
                    found[value.__name__].append(value)
    return found


def resolve(name: str, classes: dict[str, list[type]]) -> type | None:
    candidates = classes.get(name, [])
    return candidates[0] if len(candidates) == 1 else None


def identifiers(text: str) -> list[str]:
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)


# --- signatures --------------------------------------------------------------------------------


@dataclasses.dataclass
class Rendered:
    signature: str
    options: list[tuple[str, str]]  # (**name, "key: type, ...") for each Unpack[...] expanded


def render_signature(
    fn: Any, classes: dict[str, list[type]], *, skip_first: bool, name: str
) -> Rendered:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return Rendered(f"{name}(...)", [])
    params = list(sig.parameters.values())
    if skip_first and params and params[0].name in ("self", "cls"):
        params = params[1:]
    parts: list[str] = []
    options: list[tuple[str, str]] = []
    star_done = False
    for p in params:
        text = p.name
        ann = annotation(p.annotation)
        if p.kind is p.VAR_KEYWORD:
            unpacked = re.fullmatch(r"Unpack\[(\w+)\]", ann)
            typed = resolve(unpacked[1], classes) if unpacked else None
            if typed is not None:
                keys = typing_keys(typed)
                options.append((p.name, ", ".join(f"`{k}: {t}`" for k, t in keys)))
                parts.append(f"**{p.name}")
                continue
            parts.append(f"**{p.name}" + (f": {ann}" if ann else ""))
            continue
        if p.kind is p.VAR_POSITIONAL:
            star_done = True
            parts.append(f"*{p.name}" + (f": {ann}" if ann else ""))
            continue
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if ann:
            text += f": {ann}"
        if p.default is not p.empty:
            value = default(p.default, vars(sys.modules[unwrap(fn).__module__]))
            text += f" = {value}" if ann else f"={value}"
        parts.append(text)
        if p.kind is p.POSITIONAL_ONLY and (
            p is params[-1] or params[params.index(p) + 1].kind is not p.POSITIONAL_ONLY
        ):
            parts.append("/")
    result = f"{name}({', '.join(parts)})"
    returned = annotation(sig.return_annotation)
    if returned and returned != "None":
        result += f" -> {returned}"
    return Rendered(result, options)


def typing_keys(typed: type) -> list[tuple[str, str]]:
    """A TypedDict's keys and their types, its bases' first."""
    return [(key, annotation(value)) for key, value in typed.__annotations__.items()]


# --- one class ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Member:
    kind: str  # "method", "async", "async with", "property", "attribute", "classmethod", ...
    name: str
    obj: Any
    rendered: Rendered | None
    doc: str
    type_text: str = ""


def unwrap(fn: Any) -> Any:
    return getattr(fn, "__wrapped__", fn)


def members(
    klass: type, documented: set[type], classes: dict[str, list[type]]
) -> tuple[list[Member], list[str]]:
    """``klass``'s public members, in source order, and the documented bases it inherits more
    from. A member a documented base already has (inherited or overridden) is the base's."""
    inherited = [
        b for b in klass.__mro__[1:] if b in documented and b.__module__.startswith("scheduler")
    ]
    inherited += [p for p in sorted(documented, key=lambda c: c.__name__) if implements(klass, p)]
    covered = {name for base in inherited for name in dir(base)}
    seen: set[str] = set()
    out: list[Member] = []
    for owner in klass.__mro__:
        if not owner.__module__.startswith("scheduler") or (
            owner is not klass and owner in documented
        ):
            continue
        # a dataclass's fields are in its signature
        fields = (
            {f.name for f in dataclasses.fields(owner)}
            if dataclasses.is_dataclass(owner)
            else set()
        )
        for name, value in ordered(owner):
            if name.startswith("_") or name in seen or name in covered or name in fields:
                continue
            member = describe(klass, owner, name, value, classes)
            if member is not None:
                seen.add(name)
                out.append(member)
    return out, [b.__name__ for b in inherited if b.__name__ != klass.__name__]


def implements(klass: type, protocol: type) -> bool:
    """Whether ``klass`` has every public member of the documented ``protocol``."""
    if not is_protocol(protocol) or klass is protocol or protocol in klass.__mro__:
        return False
    wanted = [n for n in vars(protocol) if not n.startswith("_")]
    return bool(wanted) and all(hasattr(klass, n) for n in wanted)


def ordered(owner: type) -> list[tuple[str, Any]]:
    """``owner``'s own attributes in source order (slots first, as ``__init__`` sets them)."""
    items = list(vars(owner).items())
    try:
        source = inspect.getsource(owner)
    except (OSError, TypeError):
        return items
    positions = {m[1]: m.start() for m in re.finditer(r"(?:def|class)\s+(\w+)", source)}
    return sorted(items, key=lambda item: positions.get(item[0], -1))


def describe(
    klass: type, owner: type, name: str, value: Any, classes: dict[str, list[type]]
) -> Member | None:
    if isinstance(value, property):
        ann = annotation(inspect.signature(value.fget).return_annotation) if value.fget else ""
        return Member("property", name, value, None, first_paragraph(value), ann)
    if isinstance(value, classmethod | staticmethod):
        fn = value.__func__
        kind = type(value).__name__
        rendered = render_signature(fn, classes, skip_first=kind == "classmethod", name=name)
        return Member(kind, name, fn, rendered, first_paragraph(getattr(klass, name)))
    if inspect.isfunction(value):
        inner = unwrap(value)
        if inspect.isasyncgenfunction(inner) and value is not inner:
            kind = "async with"
        elif inspect.iscoroutinefunction(value):
            kind = "async"
        else:
            kind = "method"
        rendered = render_signature(value, classes, skip_first=True, name=name)
        if kind == "async with":
            rendered.signature = re.sub(r" -> \S.*$", "", rendered.signature)
        return Member(kind, name, value, rendered, first_paragraph(getattr(klass, name)))
    if type(value).__name__ == "member_descriptor":
        return Member(
            "attribute", name, value, None, first_paragraph(value), slot_type(owner, name)
        )
    return None


def slot_type(owner: type, name: str) -> str:
    """A slot's type: its annotation in the class body, else where ``__init__`` sets it."""
    annotations = inspect.get_annotations(owner)
    if name in annotations:
        return annotation(annotations[name])
    try:
        tree = ast.parse(inspect.getsource(owner).lstrip())
    except (OSError, TypeError, SyntaxError):
        return ""
    params: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for arg in node.args.args + node.args.kwonlyargs:
                if arg.annotation is not None:
                    params[arg.arg] = ast.unparse(arg.annotation)
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == f"self.{name}":
            return ast.unparse(node.annotation)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [
            f"self.{name}"
        ]:
            if isinstance(node.value, ast.Name):
                return params.get(node.value.id, "")
            if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                return node.value.func.id  # self.x = SomeClass(...)
    return ""


# --- the document ------------------------------------------------------------------------------


@dataclasses.dataclass
class Entry:
    name: str  # as the heading shows it
    obj: Any
    module: str  # the public module it is imported from
    reached_through: str = ""  # "Scheduler.schedules" for a class reached by an attribute


class Writer:
    def __init__(self) -> None:
        self.classes = package_classes()
        self.lines: list[str] = []
        self.missing: list[str] = []
        self.documented: set[type] = set()
        self.public: set[type] = set()

    def doc(self, label: str, text: str) -> str:
        if not text:
            self.missing.append(label)
            return NO_DOC
        return text

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def entry(self, entry: Entry, queue: list[Entry]) -> None:
        obj = entry.obj
        if inspect.isclass(obj):
            self.klass(entry, queue)
        elif callable(obj):
            self.function(entry)
        else:
            self.constant(entry)

    def function(self, entry: Entry) -> None:
        obj = entry.obj
        rendered = render_signature(obj, self.classes, skip_first=False, name=entry.name)
        prefix = ""
        if inspect.iscoroutinefunction(obj):
            prefix = "async "
        elif unwrap(obj) is not obj and inspect.isgeneratorfunction(unwrap(obj)):
            prefix = "with "  # a @contextmanager
            rendered.signature = re.sub(r" -> \S.*$", "", rendered.signature)
        self.add(f"#### `{prefix}{rendered.signature}`", "")
        self.add(self.doc(entry.name, first_paragraph(obj)))
        self.options(rendered, indent="")
        self.add("")

    def constant(self, entry: Entry) -> None:
        self.add(f"#### `{entry.name} = {default(entry.obj)}`", "")
        self.add(self.doc(entry.name, constant_doc(entry.module, entry.name)), "")

    def klass(self, entry: Entry, queue: list[Entry]) -> None:
        klass: type = entry.obj
        label = entry.name
        if issubclass(klass, BaseException):
            bases = ", ".join(b.__name__ for b in klass.__bases__)
            self.add(f"#### `{label}({bases})`", "", self.doc(label, first_paragraph(klass)), "")
            return
        if issubclass(klass, enum.Enum):
            self.add(f"#### `{label}`", "", self.doc(label, first_paragraph(klass)))
            values = ", ".join(f"`{m.name}` ({m.value!r})" for m in klass)
            self.add(f"Members: {values}.", "")
            return
        rendered = None
        heading = label
        if not (
            is_protocol(klass) or inspect.isabstract(klass) or self.made_by_the_scheduler(klass)
        ):
            rendered = render_signature(klass, self.classes, skip_first=False, name=label)
            heading = rendered.signature
        heading = f"`{heading}`"
        if entry.reached_through:
            heading += f" (`{entry.reached_through}`)"
        self.add(f"#### {heading}", "", self.doc(label, first_paragraph(klass)))
        if rendered is not None:
            self.options(rendered, indent="")
        found, bases = members(klass, self.documented, self.classes)
        if bases:
            self.add(f"Also everything of {', '.join(f'`{b}`' for b in bases)}.")
        self.add("")
        for member in found:
            self.member(label, member)
            self.follow(klass, member, queue)
        if found:
            self.add("")

    def made_by_the_scheduler(self, klass: type) -> bool:
        """Whether ``klass`` is made by the scheduler, not by its users: its constructor
        needs one of the package's internal types (an engine, a transaction)."""
        try:
            params = inspect.signature(klass).parameters.values()
        except (TypeError, ValueError):
            return True
        for p in params:
            if p.kind is p.VAR_KEYWORD or p.default is not p.empty:
                continue  # optional, or keywords unpacked from a TypedDict of options
            for name in identifiers(annotation(p.annotation)):
                target = resolve(name, self.classes)
                if target is not None and target not in self.public:
                    return True
        return False

    def member(self, owner: str, member: Member) -> None:
        text = self.doc(f"{owner}.{member.name}", member.doc)
        if member.kind in ("property", "attribute"):
            typed = f": {member.type_text}" if member.type_text else ""
            self.add(f"- `{member.kind} {member.name}{typed}`: {text}")
            return
        if member.rendered is None:
            raise TypeError(f"{owner}.{member.name}: a {member.kind} without a signature")
        kind = "" if member.kind == "method" else f"{member.kind} "
        self.add(f"- `{kind}{member.rendered.signature}`: {text}")
        self.options(member.rendered, indent="  ")

    def options(self, rendered: Rendered, indent: str) -> None:
        for param, keys in rendered.options:
            self.add(f"{indent}`**{param}`: {keys}.")

    def follow(self, klass: type, member: Member, queue: list[Entry]) -> None:
        """A class reached through a property or attribute, documented right after this one."""
        if member.kind not in ("property", "attribute"):
            return
        for name in identifiers(member.type_text):
            target = resolve(name, self.classes)
            if (
                target is None
                or target in self.documented
                or not target.__module__.startswith("scheduler")
            ):
                continue
            self.documented.add(target)
            where = f"{klass.__name__}.{member.name}"
            queue.insert(0, Entry(target.__name__, target, "", reached_through=where))


def constant_doc(module_name: str, name: str) -> str:
    """The docstring of a module-level constant: the string right after its assignment."""
    module = importlib.import_module(module_name)
    tree = ast.parse(inspect.getsource(module))
    body = tree.body
    for node, after in itertools.pairwise(body):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and (
            isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        ):
            return markdown(" ".join(str(after.value.value).split("\n\n")[0].split()))
    return ""


def is_protocol(klass: type) -> bool:
    return bool(getattr(klass, "_is_protocol", False))


def chapter_of(obj: Any) -> str:
    module = getattr(obj, "__module__", "") or ""
    if module.startswith("scheduler.triggers"):
        return "scheduler.triggers"
    return CHAPTER_OF.get(module, module)


def source_line(obj: Any) -> int:
    try:
        return inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return 0


def public_names(module_name: str) -> dict[str, Any]:
    module = importlib.import_module(module_name)
    names = list(getattr(module, "__all__", ())) + list(LAZY.get(module_name, ()))
    return {name: getattr(module, name) for name in names}


def reference() -> tuple[str, list[str]]:
    """The reference section's Markdown, and the public names that have no docstring."""
    writer = Writer()
    modules = {m: public_names(m) for m in PUBLIC_MODULES}
    for objects in modules.values():
        writer.public.update(o for o in objects.values() if inspect.isclass(o))
    writer.documented |= writer.public
    writer.add(
        "<!-- Written by scripts/scheduler_reference.py from the docstrings: edit those, "
        "then run it. -->",
        "",
    )
    for module_name, objects in modules.items():
        groups: dict[str, list[Entry]] = {}
        for name, obj in objects.items():
            where = chapter_of(obj) if module_name == "scheduler" else module_name
            groups.setdefault(where, []).append(Entry(name, obj, module_name))
        order = [c for c in CHAPTERS if c in groups] + sorted(set(groups) - set(CHAPTERS))
        for chapter in order:
            title = first_sentence(importlib.import_module(chapter))
            title = re.sub(r"\s*\((?:[^()]|\([^()]*\))*\)$", "", title)  # an aside at its end
            if module_name == "scheduler":
                writer.add(f"### {title}", "")
            else:
                writer.add(f"### `{module_name}`: {title[0].lower()}{title[1:]}", "")
                writer.add(f"`from {module_name} import {', '.join(objects)}`", "")
            queue = sorted(
                groups[chapter],
                # the chapter's own module first (a constant has none), each in source order
                key=lambda e: (
                    getattr(e.obj, "__module__", chapter) != chapter,
                    source_line(e.obj),
                ),
            )
            while queue:
                writer.entry(queue.pop(0), queue)
    cli(writer)
    out = writer.lines
    while out and out[-1] == "":
        out.pop()
    text = "\n".join(out).replace("builtins.", "") + "\n"
    return text, writer.missing


def cli(writer: Writer) -> None:
    from scheduler.cli import build_parser

    os.environ["COLUMNS"] = "200"  # argparse's usage lines, on one line each
    parser = build_parser()
    top = re.sub(r"\s+", " ", parser.format_usage()).strip().removeprefix("usage: ")
    writer.add(f"### The command line: `{parser.prog}`", "")
    writer.add(f"{markdown(parser.description or '').rstrip('.')}: `{top.replace('[-h] ', '')}`")
    writer.add("", "```")
    for usage, text in commands(parser):
        writer.add(usage, f"    {text}")
    writer.add("```", "")


def commands(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """``(usage, help)`` of every leaf command under ``parser``."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        usage = re.sub(r"\s+", " ", parser.format_usage()).strip().removeprefix("usage: ")
        return [(usage.replace(" [-h]", ""), parser.description or "")]
    found: list[tuple[str, str]] = []
    helps = {c.dest: c.help or "" for c in subs[0]._choices_actions}
    for name, sub in subs[0].choices.items():
        sub.description = sub.description or helps.get(name)
        found.extend(commands(sub))
    return found


# --- the file ------------------------------------------------------------------------------------


def updated(readme: str, section: str) -> str:
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{README}: no {START} ... {END} section")
    return readme[: start + len(START)] + "\n\n" + section + "\n" + readme[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the README is stale")
    args = parser.parse_args(argv)
    section, missing = reference()
    current = README.read_text("utf-8")
    wanted = updated(current, section)
    if missing:
        print(f"no docstring: {', '.join(missing)}", file=sys.stderr)
    if args.check:
        if wanted != current:
            print(
                f"{README.relative_to(ROOT)}: the reference is out of date; run "
                "scripts/scheduler_reference.py",
                file=sys.stderr,
            )
            return 1
        return 1 if missing else 0
    if wanted != current:
        README.write_text(wanted, "utf-8")
        print(f"wrote the reference into {README.relative_to(ROOT)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
