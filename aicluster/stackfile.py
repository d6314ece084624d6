"""Reading the Pulumi project and its stack files the way the Pulumi CLI does.

`Pulumi.yaml` names the project and `stackConfigDir`; `stacks/Pulumi.<stack>.yaml` holds the stack's
config. The cluster lives under the config key `aicluster:cluster`; provider keys (`aws:region`)
stay as Pulumi users expect. `secure:` values are never decrypted or shown: offline they are
replaced by a placeholder and marked secret, as the Pulumi CLI marks them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .spec import ClusterSpec, Problem, SpecError, clip, did_you_mean, parse_cluster

CLUSTER_KEY = "aicluster:cluster"
# Pulumi's stack names: letters, digits, `-`, `_` and `.` (`pulumi stack init` refuses anything else).
STACK_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,100}")
SECRET_PLACEHOLDER = "[secret]"


class StackNotFound(Exception):
    def __init__(self, stack: str, project: Project, available: list[str]):
        self.stack = stack
        self.available = available
        have = ", ".join(available) if available else "none"
        guess = did_you_mean(stack, available)
        stack_dir = project.relative(project.stack_dir)
        stack_dir = "the project directory" if stack_dir == "." else f"the stack directory {stack_dir}/"
        super().__init__(
            f'stack "{clip(stack)}" not found: no Pulumi.{clip(stack)}.yaml in {stack_dir} of the project at '
            f"{project.root}{f' ({guess})' if guess else ''}; stacks that exist: {have}"
        )


class InvalidStackName(StackNotFound):
    def __init__(self, stack: str):  # not StackNotFound.__init__: there is no file to look for
        Exception.__init__(self, stack_name_problem(stack) or stack)
        self.stack = stack
        self.available = []


class ProjectNotFound(Exception):
    pass


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    stack_dir: Path
    # A stack file outside any project (`aicluster validate /elsewhere/Pulumi.x.yaml`): the file's directory stands
    # in for the project, and a preview runs the installed program (aicluster.program), as there is no __main__.py.
    standalone: bool = False

    def stack_path(self, stack: str) -> Path:
        return self.stack_dir / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in self.stack_dir.glob("Pulumi.*.yaml"))

    def relative(self, path: Path) -> str:
        """`path` relative to the project root when it lies inside it, else its absolute path."""
        whole = path.resolve()
        try:
            return str(whole.relative_to(self.root.resolve()))
        except ValueError:
            return str(whole)


@dataclass(frozen=True)
class StackConfig:
    """A stack file as the Pulumi CLI hands it to the program."""

    project: Project
    stack: str
    path: Path
    config: dict[str, Any]  # plain values; secure values replaced by SECRET_PLACEHOLDER
    secret_keys: frozenset[str]
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)  # cluster path -> line
    config_lines: dict[str, int] = field(default_factory=dict)  # config key -> line

    def clear_secret_problems(self, secrets: Mapping[str, str]) -> list[Problem]:
        """The config keys named as secrets (`secrets`: key -> what it holds, "the BMC password of host dgx001")
        whose values this stack file holds in clear text, not `secure:`: never shown, with the command that
        encrypts them. The problems' paths are the keys; their lines are in `config_lines`."""
        return [
            Problem(
                (key,),
                f"holds {what} in clear text (not shown): encrypt it with `pulumi config set --secret {key}`, and "
                "rotate the secret (the clear one is in the file's history)",
            )
            for key, what in secrets.items()
            if key in self.config and key not in self.secret_keys
        ]

    @property
    def source(self) -> str:
        return self.project.relative(self.path)

    def engine_config(self) -> dict[str, str]:
        """Config as the engine passes it to a program: strings, objects JSON-encoded."""
        out: dict[str, str] = {}
        for key, value in self.config.items():
            out[key] = value if isinstance(value, str) else json.dumps(value)
        return out


# Bounds on what a stack file may hold. A cluster description is a few hundred values, nested five or six
# levels; these leave ample room while keeping a hostile file (an alias bomb, a 5,000-digit number,
# nesting a thousand levels deep) from costing more than a moment and a few megabytes.
MAX_STACK_BYTES = 1 << 20
MAX_DEPTH = 32
MAX_VALUES = 100_000
MAX_DIGITS = 30
# Characters a stack file may not hold: control characters other than tab and line breaks, and what YAML
# refuses anyway (U+FFFE, U+FFFF) - refused here with a line number, which the YAML reader does not give.
# Written as the refused ranges, not as the negation of the allowed ones ("[^\t\n\r\x20-\x7e\xa0-\ud7ff
# \ue000-\ufffd\U00010000-\U0010ffff]", the same set: tests/test_stack_input.py): that one takes 4 ms to compile,
# at every start.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_PY_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
_CORE = "tag:yaml.org,2002:"
# Explicit tags that only restate what plain YAML means; anything else (!!binary, !!python/..., !custom)
# builds values no stack field takes, or that the Pulumi CLI reads differently.
_PLAIN_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "map", "seq"))


class _Refused(Exception):
    """A stack file the loader will not build, located at a YAML mark and a path from the document root."""

    def __init__(self, mark: Any, path: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.line = mark.line + 1 if mark is not None else None
        self.path = path
        self.message = message


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


def _digits(text: str) -> int:
    body = text.replace("_", "").lstrip("+-")
    if body[:2].lower() in ("0x", "0o", "0b"):
        body = body[2:]
    return len(body)


class _StackLoader(yaml.SafeLoader):
    """SafeLoader for stack files.

    - refuses duplicate keys (PyYAML keeps the last one silently; the Pulumi CLI's YAML parser rejects the
      file), so the offline preview and `pulumi up` never disagree;
    - refuses, while composing and before anything is built, explicit tags other than the plain ones,
      numbers that are not finite or have more than MAX_DIGITS digits, nesting deeper than MAX_DEPTH,
      an alias inside its own anchor, and aliases that expand to more than MAX_VALUES values;
    - reads plain values as YAML 1.2 does (the core schema, as the Pulumi CLI reads stack files), not as PyYAML's
      YAML 1.1: dates (`expires: 2027-12-31`) are the text written, `6e1` is a number; a plain value that YAML 1.1
      reads otherwise (`1:30`, `yes`, `0777`, `1_000`) is refused with both readings and the fix (_check_version).
    """

    def __init__(self, stream: str, what: str = "a stack file", max_values: int = MAX_VALUES):
        super().__init__(stream)
        self._what = what  # "a stack file", "a hosts file": how messages name the file
        self._max_values = max_values
        self._path: list[str | int] = []
        self._open: set[str] = set()
        self._sizes: dict[int, int] = {}
        self._nest_start: list[tuple[int, yaml.Mark]] = []  # (path length, mark) of each collection

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if isinstance(parent, yaml.MappingNode) and isinstance(index, yaml.ScalarNode):
            self._path.append(index.value)
        elif isinstance(parent, yaml.SequenceNode) and isinstance(index, int):
            self._path.append(index)
        elif parent is not None:
            self._path.append("?")  # a mapping key, or a key that is not text
        try:
            return self._compose_checked(parent, index)
        finally:
            if parent is not None:
                self._path.pop()

    def _refuse(self, mark: Any, message: str, path: tuple[str | int, ...] | None = None) -> _Refused:
        return _Refused(mark, tuple(self._path) if path is None else path, message)

    def _compose_checked(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                raise self._refuse(
                    event.start_mark,
                    f"the alias *{event.anchor} refers to the list or mapping that contains it; "
                    "a YAML anchor cannot contain itself",
                )
            node = super().compose_node(parent, index)
            self._budget(node, event.start_mark)
            return node
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!" and tag not in _PLAIN_TAGS:
            raise self._refuse(
                event.start_mark,
                f"the YAML tag {_tag_name(tag)} is not allowed; write the value as plain text, "
                "a number, a list or a mapping",
            )
        collection = isinstance(event, yaml.CollectionStartEvent)
        if collection:
            if len(self._nest_start) >= MAX_DEPTH:
                keys = [i for i, part in enumerate(self._path) if isinstance(part, str)]
                cut = keys[-1] + 1 if keys else 0
                length, mark = next(((n, m) for n, m in self._nest_start if n >= cut), self._nest_start[-1])
                raise self._refuse(
                    mark,
                    f"nested more than {MAX_DEPTH} levels deep; {self._what} needs a handful",
                    tuple(self._path[:length]),
                )
            self._nest_start.append((len(self._path), event.start_mark))
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            if anchor is not None:
                self._open.discard(anchor)
            if collection:
                self._nest_start.pop()
        if isinstance(node, yaml.ScalarNode):
            if event.implicit[0] and node.style is None:
                self._check_number(node)
                self._check_version(node, "")
            elif node.tag in _TYPED and tag is not None:
                self._check_version(node, _tag_name(node.tag) + " ")
        self._budget(node, event.start_mark)
        return node

    def _check_number(self, node: yaml.ScalarNode) -> None:
        if node.tag == _CORE + "int" and _digits(node.value) > MAX_DIGITS:
            raise self._refuse(
                node.start_mark,
                f"a number with {_digits(node.value)} digits; no field takes a number that large",
            )
        if node.tag == _CORE + "float":
            text = node.value.replace("_", "")
            try:
                number = math.inf if text.lower().lstrip("+-") in (".inf", ".nan") else float(text)
            except ValueError:  # YAML 1.1 sexagesimal (1:30.5): small by construction
                return
            if not math.isfinite(number) or _digits(text.split(".")[0].split("e")[0].split("E")[0]) > MAX_DIGITS:
                raise self._refuse(
                    node.start_mark,
                    f"got {clip(node.value)}; numbers must be finite and of a sane size (JSON and the Pulumi engine "
                    "cannot carry .inf or .nan); write the number itself",
                )

    def _check_version(self, node: yaml.ScalarNode, tag: str) -> None:
        """Refuse a plain value (or one tagged !!int, !!float, !!bool, !!null) that YAML 1.1 and YAML 1.2 read
        differently: PyYAML reads YAML 1.1, the Pulumi CLI YAML 1.2, and the preview must read what `pulumi up`
        reads. `tag` is the explicit tag as written ("!!int "), or "" for a plain value."""
        text = node.value
        if tag and _resolve(_StackLoader.yaml_implicit_resolvers, text) != node.tag:
            raise self._refuse(node.start_mark, f"got {tag}{clip(text)}; {_NOT_YAML12[node.tag]}")
        if text[:1] not in _CLASH_FIRST:
            return
        clash = self._clash(text)
        if clash is None:
            return
        key = bool(self._path) and self._path[-1] == "?"
        if key:
            where = f"the key {clip(text)}: "
            path: tuple[str | int, ...] | None = tuple(self._path[:-1])
        else:
            where, path = f"got {tag}{clip(text)}; ", None
        raise self._refuse(node.start_mark, where + clash(key), path)

    def _clash(self, text: str) -> Any:
        """How YAML 1.1 and 1.2 (and Go's YAML reader, the Pulumi CLI's) read `text` differently, as a function of
        whether it is a key that words the message; None when they agree."""
        if _GO_PREFIX.match(text):  # 0X1F, 0O17, 0B101: text to YAML 1.1 and 1.2, a number to Go's strconv
            try:
                go = f"the number {int(text, 0)}"
            except ValueError:  # 0X_1: Go drops the underscore first
                go = "a number"
            said = f"YAML 1.1 and 1.2 read it as the text \"{text}\" and Go's YAML reader (the Pulumi CLI's) as {go}: "
            number = go.removeprefix("the number ") if go != "a number" else "the number"
            return lambda key: (
                said
                + (
                    f'write "{text}" (quoted) for the text'
                    if key
                    else f'write {number} for the number, or "{text}" (quoted) for the text'
                )
            )
        tag11 = _resolve(yaml.SafeLoader.yaml_implicit_resolvers, text)
        tag12 = _resolve(_StackLoader.yaml_implicit_resolvers, text)
        if tag11 in (_CORE + "timestamp", _CORE + "value"):  # read as text here anyway; `=` is YAML 1.1's only
            tag11 = _CORE + "str"
        if tag11 == tag12 == _CORE + "str" or (tag11 == _CORE + "str" and tag12 == _CORE + "float"):
            return None  # `6e1`: text to PyYAML's narrow float pattern, a number to YAML 1.2 and to Go
        v11 = self._reading(tag11, text, yaml.constructor.SafeConstructor)
        v12 = self._reading(tag12, text, type(self))
        if type(v11) is type(v12) and (v11 == v12 or (isinstance(v11, float) and math.isnan(v11))):  # .nan: refused
            return None
        base60 = ":" in text and tag11 in (_CORE + "int", _CORE + "float")
        octal = tag11 == _CORE + "int" and _LEADING_ZERO.match(text) is not None
        pulumi = ", as the Pulumi CLI reads stack files," if isinstance(v11, bool) or base60 else ""
        said = (
            f"YAML 1.1 reads it as {_reading_words(v11, text)}{' (base 60)' if base60 else ''}"
            f"{' (octal)' if octal else ''} and YAML 1.2{pulumi} as {_reading_words(v12, text)}: "
        )

        def fix(key: bool) -> str:
            if key:
                return said + f'write "{text}" (quoted) for the text'
            if isinstance(v11, bool):
                return said + f'write {"true" if v11 else "false"} for the boolean, or "{text}" (quoted) for the text'
            numbers = [v for v in (v11, v12) if isinstance(v, int | float) and not isinstance(v, bool)]
            if len(numbers) == 2:
                return said + (
                    f"write the number without a leading zero ({_number(v11)} or {_number(v12)}, as you mean it)"
                )
            return said + f'write {_number(numbers[0])} for the number, or "{text}" (quoted) for the text'

        return fix

    def _reading(self, tag: str, text: str, constructor: Any) -> Any:
        node = yaml.ScalarNode(tag, text)
        if tag == _CORE + "int":
            return constructor.construct_yaml_int(self, node)
        if tag == _CORE + "float":
            return constructor.construct_yaml_float(self, node)
        if tag == _CORE + "bool":
            return constructor.construct_yaml_bool(self, node)
        if tag == _CORE + "null":
            return None
        return text

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer as YAML 1.2 reads it: decimal (a leading zero does not make it octal), 0o octal, 0x hex."""
        text = self.construct_scalar(node)
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)

    def _budget(self, node: yaml.Node | None, mark: Any) -> None:
        """Count the values the node stands for with every alias expanded; refuse an alias bomb at once."""
        if node is None:
            return
        size = self._sizes.get(id(node))
        if size is None:
            size = 1
            if isinstance(node, yaml.SequenceNode):
                size += sum(self._sizes.get(id(item), 1) for item in node.value)
            elif isinstance(node, yaml.MappingNode):
                size += sum(self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value)
            self._sizes[id(node)] = size
        if size > self._max_values:
            raise self._refuse(
                mark,
                f"aliases expand to more than {self._max_values} values; {self._what} holds far fewer: "
                "write the values out or use fewer aliases",
            )

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _CORE + "merge":  # `<<: *base`: merged keys may be overridden, as in YAML
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: SafeLoader reports it
                continue
            if first is not None:
                shown = _quoted(key) if isinstance(key, str) else clip(str(key))  # unprintable characters escaped
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {shown} (first at line {first}); remove one", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def _resolve(resolvers: Mapping[Any, list[tuple[str, re.Pattern[str]]]], text: str) -> str:
    """The tag a plain scalar resolves to under a PyYAML resolver table (as yaml.resolver.Resolver.resolve)."""
    for tag, pattern in resolvers.get(text[:1] if text else "", []):
        if pattern.match(text):
            return tag
    return _CORE + "str"


def _reading_words(value: Any, text: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return f"the number {_number(value)}"
    return f'the text "{clip(text)}"'


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) or not value.is_integer() else str(int(value))


# YAML 1.2's core schema (yaml.org/spec/1.2.2, 10.3.2), which the Pulumi CLI reads stack files with, in place of
# PyYAML's YAML 1.1 resolvers; `<<` merges, as in the Pulumi CLI's reader (and PyYAML). Ints before floats: `1` is
# both. Anything else is text: dates, `=`, `yes`, `1:30`.
_StackLoader.yaml_implicit_resolvers = {}
for _tag, _regex, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("merge", r"^(?:<<)$", "<"),
):
    _StackLoader.add_implicit_resolver(_CORE + _tag, re.compile(_regex), list(_first))
# First characters of the plain values YAML 1.1 may read otherwise: y/n/on/off booleans, and numbers.
_CLASH_FIRST = frozenset("yYnNoO+-.0123456789")
_GO_PREFIX = re.compile(r"^[-+]?0[XOB][0-9A-Fa-f_]+$")
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9_]")
_TYPED = frozenset(_CORE + t for t in ("int", "float", "bool", "null"))
_NOT_YAML12 = {
    _CORE + "int": "not a YAML 1.2 integer (decimal, 0o octal or 0x hex): write the number in decimal",
    _CORE + "float": "not a YAML 1.2 number: write it as 1.5, 15 or 1.5e3",
    _CORE + "bool": "not a YAML 1.2 boolean: write true or false",
    _CORE + "null": "not a YAML 1.2 null: write null",
}


MAX_JSON_BYTES = 256 << 20  # a preview JSON of a 100,000-node cluster is tens of MiB


class JsonInputError(ValueError):
    """A JSON input (policy config, preview JSON) that is not JSON or out of bounds; the text says why."""


def _json_int(text: str) -> int:
    if _digits(text) > MAX_DIGITS:
        raise JsonInputError(f"a number with {_digits(text)} digits; no input takes a number that large")
    return int(text)


def _json_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise JsonInputError(f"got {text}; numbers must be finite")
    return number


def _json_constant(text: str) -> float:
    raise JsonInputError(f"got {text}; numbers must be finite (JSON has no {text})")


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: the Pulumi CLI and JSON parsers disagree on which duplicate wins."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise JsonInputError(f'duplicate key "{clip(key)}" in an object; a key may appear once: remove one')
    return out


def _json_depth(value: Any) -> int:
    """How deeply lists and objects nest (iteratively: the value may be deeper than Python's stack)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            todo.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def read_json_input(path: Path, max_depth: int = MAX_DEPTH) -> Any:
    """A JSON file the user gives, refused with JsonInputError (the reason) when it is not UTF-8 JSON,
    nests deeper than `max_depth`, repeats a key in an object, or holds a number
    that is not finite or has more than MAX_DIGITS digits."""
    with path.open("rb") as fh:
        raw = fh.read(MAX_JSON_BYTES + 1)
    if len(raw) > MAX_JSON_BYTES:
        raise JsonInputError(f"larger than {MAX_JSON_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(
            text,
            parse_int=_json_int,
            parse_float=_json_float,
            parse_constant=_json_constant,
            object_pairs_hook=_json_object,
        )
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise JsonInputError(f"nested more than {max_depth} levels deep") from None
    if _json_depth(value) > max_depth:
        raise JsonInputError(f"nested more than {max_depth} levels deep")
    return value


def find_project(start: Path | None = None) -> Project:
    here = (start or Path.cwd()).resolve()
    for cand in (here, *here.parents):
        pfile = cand / "Pulumi.yaml"
        if pfile.is_file():
            try:
                data = yaml.safe_load(pfile.read_text(encoding="utf-8")) or {}
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                raise ProjectNotFound(f"{pfile}: not a valid Pulumi.yaml ({exc})") from None
            if not isinstance(data, Mapping):
                raise ProjectNotFound(f"{pfile}: not a valid Pulumi.yaml (expected a mapping with `name`)")
            name = str(data.get("name") or cand.name)
            stack_dir = cand / str(data.get("stackConfigDir") or ".")
            return Project(cand, name, stack_dir)
    raise ProjectNotFound(
        f"no Pulumi.yaml in {here} or any parent directory; run from a project (`aicluster init DIR` makes one), "
        "or name a stack file by its path (e.g. stacks/Pulumi.p5-small.yaml)"
    )


STANDALONE_PROJECT = "aicluster"  # the project name a stack file outside any project previews under


def project_of_file(path: Path) -> Project:
    """The project a stack file belongs to: the nearest with Pulumi.yaml above the file, or, where there is none, the
    file's own directory standing in for one (a standalone stack file)."""
    try:
        return find_project(path.parent)
    except ProjectNotFound:
        here = path.parent.resolve()
        return Project(here, STANDALONE_PROJECT, here, standalone=True)


def _line_map(node: yaml.Node, path: tuple[str | int, ...], out: dict[tuple[str | int, ...], int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for knode, vnode in node.value:
            key = knode.value if isinstance(knode, yaml.ScalarNode) else str(knode.value)
            out[(*path, key)] = knode.start_mark.line + 1
            _line_map(vnode, (*path, key), out)
            out[(*path, key)] = knode.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*path, i), out)


def line_map(root: yaml.Node | None) -> dict[tuple[str | int, ...], int]:
    """The line (1-based) of every key and item of a document read by `read_yaml_file`, by path."""
    out: dict[tuple[str | int, ...], int] = {}
    if root is not None:
        _line_map(root, (), out)
    return out


def _cluster_lines(root: yaml.Node | None) -> dict[tuple[str | int, ...], int]:
    if not isinstance(root, yaml.MappingNode):
        return {}
    for knode, vnode in root.value:
        if knode.value == "config" and isinstance(vnode, yaml.MappingNode):
            for ck, cv in vnode.value:
                if ck.value == CLUSTER_KEY:
                    out: dict[tuple[str | int, ...], int] = {}
                    _line_map(cv, (), out)
                    return out
    return {}


def _user_path(path: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """A path from the document root as the user reads it: cluster fields from `aicluster:cluster`, other
    config keys from `config`."""
    if path[:2] == ("config", CLUSTER_KEY):
        return path[2:]
    if path[:1] == ("config",):
        return path[1:]
    return path


def _control_problems(text: str, what: str = "a stack file") -> list[tuple[int, Problem]]:
    """The first control character of each line that has one (lines as YAML counts them: LF, CR LF, CR)."""
    found = []
    last_line = 0
    for match in _CONTROL.finditer(text):
        start = match.start()
        number = text.count("\n", 0, start) + 1
        if number == last_line:
            continue
        last_line = number
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        found.append(
            (
                number,
                Problem(
                    (),
                    f"control character U+{ord(match.group()):04X} at column {column}; remove it "
                    f"({what} is plain text; write special characters as escapes in a quoted string)",
                ),
            )
        )
    return found


def stack_name_problem(name: str) -> str | None:
    """Why `name` is not a Pulumi stack name, or None. Pulumi allows letters, digits, `-`, `_` and `.`."""
    if STACK_NAME_RE.fullmatch(name) and name not in (".", ".."):
        return None
    return (
        f"{_quoted(name)} is not a stack name: a stack name is 1-100 letters, digits, '-', '_' or '.' "
        "(and not '.' or '..'), or give the path of a stack file Pulumi.<stack>.yaml"
    )


def _quoted(text: str) -> str:
    body = "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in clip(text))
    return f'"{body}"'


def stack_file_name(path: Path) -> str | None:
    """The stack a file `Pulumi.<stack>.yaml` holds, or None if the name is not of that shape."""
    name = path.name
    if name.startswith("Pulumi.") and name.endswith(".yaml") and len(name) > len("Pulumi..yaml"):
        return name[len("Pulumi.") : -len(".yaml")]
    return None


def read_yaml_file(
    path: Path,
    source: str,
    what: str = "a stack file",
    max_bytes: int = MAX_STACK_BYTES,
    max_values: int = MAX_VALUES,
) -> tuple[Any, yaml.Node | None]:
    """A YAML file read with the hardened loader (bounded size, depth, aliases and numbers; plain tags only; no
    control characters; no duplicate keys): its data and its root node (for line numbers). Anything else is a
    SpecError naming `source` and the line. `what` names the file in messages ("a stack file")."""
    with path.open("rb") as fh:
        raw = fh.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise SpecError(source, [Problem((), f"larger than {max_bytes // 1024} KiB; {what} is a few KiB of YAML")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(source, [Problem((), f"not UTF-8 text (byte {exc.start}); save the file as UTF-8")]) from None
    control = _control_problems(text, what)
    if control:
        number, first = control[0]
        more = f"; {len(control) - 1} more line(s) have them too" if len(control) > 1 else ""
        raise SpecError(f"{source}:{number}", [Problem((), first.message + more)])
    loader = _StackLoader(text, what, max_values)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except _Refused as exc:
        where = f"{source}:{exc.line}" if exc.line is not None else source
        raise SpecError(where, [Problem(_user_path(exc.path), exc.message)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = _PY_QUOTED.sub(r'"\1"', str(getattr(exc, "problem", None) or exc))  # PyYAML words values with %r
        raise SpecError(where, [Problem((), f"not valid YAML: {problem}")]) from None
    finally:
        loader.dispose()
    return data, root


def read_stack(project: Project, stack: str, path: Path | None = None) -> StackConfig:
    """The stack `stack` of the project, or the stack file at `path` (its name is Pulumi.<stack>.yaml)."""
    if stack_name_problem(stack) is not None:
        raise InvalidStackName(stack)
    if path is None:
        path = project.stack_path(stack)
        if not path.is_file():
            raise StackNotFound(stack, project, project.stacks())
    source = project.relative(path)
    data, root = read_yaml_file(path, source)
    data = data or {}
    if not isinstance(data, Mapping):
        raise SpecError(source, [Problem((), "a stack file must be a mapping with a `config:` key")])
    raw_config = data.get("config") or {}
    if not isinstance(raw_config, Mapping):
        raise SpecError(source, [Problem((), "`config:` must be a mapping of `namespace:key: value`")])
    config: dict[str, Any] = {}
    secret_keys: set[str] = set()
    for raw_key, value in raw_config.items():
        key = str(raw_key)
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            config[key] = SECRET_PLACEHOLDER
            secret_keys.add(key)
        elif isinstance(value, Mapping) and set(value) == {"value"}:  # Pulumi's {value: ...} object form
            config[key] = value["value"]
        else:
            config[key] = value
    config_lines: dict[str, int] = {}
    if isinstance(root, yaml.MappingNode):
        for knode, vnode in root.value:
            if knode.value == "config" and isinstance(vnode, yaml.MappingNode):
                config_lines = {str(ck.value): ck.start_mark.line + 1 for ck, _ in vnode.value}
    return StackConfig(project, stack, path, config, frozenset(secret_keys), _cluster_lines(root), config_lines)


def cluster_data(stack: StackConfig) -> Any:
    """The stack's `aicluster:cluster` value as written, or SpecError when the key is missing or secret."""
    if CLUSTER_KEY in stack.secret_keys:
        raise SpecError(
            stack.source,
            [Problem((), f"{CLUSTER_KEY} must not be a secret: the cluster description is shown in plans")],
        )
    if CLUSTER_KEY not in stack.config:
        # a misspelt key (`aicluster:clutser`): name its line and the key meant
        typo = next(
            (k for k in stack.config if isinstance(k, str) and did_you_mean(k, [CLUSTER_KEY]) is not None), None
        )
        if typo is not None:
            line = stack.config_lines.get(typo)
            raise SpecError(
                f"{stack.source}:{line}" if line else stack.source,
                [
                    Problem(
                        (),
                        f"config has no `{CLUSTER_KEY}` key but a `{typo}` key; rename it to `{CLUSTER_KEY}` (did you "
                        f'mean "{CLUSTER_KEY}"?)',
                    )
                ],
            )
        raise SpecError(
            stack.source,
            [
                Problem(
                    (),
                    f"config has no `{CLUSTER_KEY}` key; add the cluster description under it "
                    "(see stacks/Pulumi.p5-small.yaml)",
                )
            ],
        )
    return stack.config[CLUSTER_KEY]


def load_cluster(stack: StackConfig) -> ClusterSpec:
    """The stack's ClusterSpec, or SpecError naming the file, field, value and fix."""
    return parse_cluster(cluster_data(stack), stack.source, stack.lines)
