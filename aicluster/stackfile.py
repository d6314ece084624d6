"""Reading the Pulumi project and its stack files the way the Pulumi CLI does.

`Pulumi.yaml` names the project and `stackConfigDir`; `stacks/Pulumi.<stack>.yaml` holds the stack's
config. The cluster lives under the config key `aicluster:cluster`; provider keys (`aws:region`)
stay as Pulumi users expect. `secure:` values are never decrypted or shown: offline they are
replaced by a placeholder and marked secret, as the Pulumi CLI marks them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .spec import ClusterSpec, Problem, SpecError, parse_cluster

CLUSTER_KEY = "aicluster:cluster"
SECRET_PLACEHOLDER = "[secret]"


class StackNotFound(Exception):
    def __init__(self, stack: str, project_dir: Path, available: list[str]):
        self.stack = stack
        self.available = available
        have = ", ".join(available) if available else "none"
        super().__init__(
            f'stack "{stack}" not found: no {project_dir.name}/stacks/Pulumi.{stack}.yaml; stacks that exist: {have}'
        )


class ProjectNotFound(Exception):
    pass


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    stack_dir: Path

    def stack_path(self, stack: str) -> Path:
        return self.stack_dir / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in self.stack_dir.glob("Pulumi.*.yaml"))

    def relative(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


@dataclass(frozen=True)
class StackConfig:
    """A stack file as the Pulumi CLI hands it to the program."""

    project: Project
    stack: str
    path: Path
    config: dict[str, Any]  # plain values; secure values replaced by SECRET_PLACEHOLDER
    secret_keys: frozenset[str]
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)  # cluster path -> line

    @property
    def source(self) -> str:
        return self.project.relative(self.path)

    def engine_config(self) -> dict[str, str]:
        """Config as the engine passes it to a program: strings, objects JSON-encoded."""
        out: dict[str, str] = {}
        for key, value in self.config.items():
            out[key] = value if isinstance(value, str) else json.dumps(value)
        return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML keeps the last one silently; the Pulumi CLI's
    YAML parser rejects the file), so the offline preview and `pulumi up` never disagree."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: SafeLoader reports it
                continue
            if first is not None and key != "<<":
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {first}); remove one", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


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
    raise ProjectNotFound(f"no Pulumi.yaml in {here} or any parent directory; run from the aicluster project")


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


def _cluster_lines(text: str) -> dict[tuple[str | int, ...], int]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    for knode, vnode in root.value:
        if knode.value == "config" and isinstance(vnode, yaml.MappingNode):
            for ck, cv in vnode.value:
                if ck.value == CLUSTER_KEY:
                    out: dict[tuple[str | int, ...], int] = {}
                    _line_map(cv, (), out)
                    # a cluster given as {value: {...}} (Pulumi's object form)
                    return out
    return {}


def read_stack(project: Project, stack: str) -> StackConfig:
    path = project.stack_path(stack)
    if not path.is_file():
        raise StackNotFound(stack, project.root, project.stacks())
    source = project.relative(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(source, [Problem((), f"not UTF-8 text (byte {exc.start}); save the file as UTF-8")]) from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(where, [Problem((), f"not valid YAML: {problem}")]) from None
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
    return StackConfig(project, stack, path, config, frozenset(secret_keys), _cluster_lines(text))


def load_cluster(stack: StackConfig) -> ClusterSpec:
    """The stack's ClusterSpec, or SpecError naming the file, field, value and fix."""
    if CLUSTER_KEY in stack.secret_keys:
        raise SpecError(
            stack.source,
            [Problem((), f"{CLUSTER_KEY} must not be a secret: the cluster description is shown in plans")],
        )
    if CLUSTER_KEY not in stack.config:
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
    return parse_cluster(stack.config[CLUSTER_KEY], stack.source, stack.lines)
