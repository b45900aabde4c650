"""YAML read with bounds: aliases cannot blow a small file up, and cannot loop.

YAML aliases (``*a``) share one parsed node, so ``yaml.load`` of a 505-byte file of ten
levels of nine aliases costs little until the result is serialised: then every alias is
expanded, 9^10 times over, and the machine runs out of memory. A circular alias
(``x: &r [1, *r]``) cannot be serialised at all. This module composes the node graph first
(libyaml's C parser when PyYAML has it), counts what each node expands to (shared nodes
counted once per use, each node visited once), and constructs Python objects only for what
fits the budget. A sequence at the top of a document is checked item by item, so one bad
item is one reject and its siblings still load.

Limits (environment variables override them):

* ``GRAPHLAKE_YAML_MAX_NODES`` (default 1,000,000): scalars, sequences and mappings a
  document or a top-level item expands to, aliases counted at every use;
* ``GRAPHLAKE_YAML_MAX_DEPTH`` (default 200): nesting depth (PyYAML's constructor recurses,
  a few Python frames a level, so past about 240 levels it would overflow the interpreter's
  stack instead of naming the limit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import yaml

DEFAULT_MAX_NODES = 1_000_000
DEFAULT_MAX_DEPTH = 200


class YamlLimitError(yaml.YAMLError):
    """A YAML document (or item) past a limit, or with an alias that refers to itself."""


def max_nodes() -> int:
    return int(os.environ.get("GRAPHLAKE_YAML_MAX_NODES", DEFAULT_MAX_NODES))


def max_depth() -> int:
    return int(os.environ.get("GRAPHLAKE_YAML_MAX_DEPTH", DEFAULT_MAX_DEPTH))


def _loader_class() -> type:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _too_many(budget: int, node: yaml.Node) -> YamlLimitError:
    return YamlLimitError(
        f"YAML expands to over {budget:,} nodes (aliases counted at every use; "
        f"line {node.start_mark.line + 1}): an alias bomb or a very large "
        "document. Raise GRAPHLAKE_YAML_MAX_NODES if it is genuine"
    )


def _too_deep(depth: int, node: yaml.Node) -> YamlLimitError:
    return YamlLimitError(
        f"YAML nested deeper than {depth} levels at line {node.start_mark.line + 1}. "
        "Raise GRAPHLAKE_YAML_MAX_DEPTH if it is genuine"
    )


def _tree_size(root: yaml.Node, budget: int, depth: int) -> int:
    """:func:`check_expansion` for a document without anchors: a plain tree (no node is
    shared, none can loop), so counting nodes and levels is all there is to check, at a
    third of the cost (most task files have no anchors)."""
    count = 0
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    mapping, sequence = yaml.MappingNode, yaml.SequenceNode
    while stack:
        node, level = stack.pop()
        count += 1
        if count > budget:
            raise _too_many(budget, node)
        if level > depth:
            raise _too_deep(depth, node)
        if isinstance(node, mapping):
            for k, v in node.value:
                stack.append((k, level + 1))
                stack.append((v, level + 1))
        elif isinstance(node, sequence):
            stack.extend((c, level + 1) for c in node.value)
    return count


def check_expansion(
    root: yaml.Node, budget: int | None = None, depth: int | None = None, *, tree: bool = False
) -> int:
    """How many nodes ``root`` expands to; raises :class:`YamlLimitError` past ``budget``
    nodes or ``depth`` levels, or on a circular alias. Each distinct node is visited once
    (its expanded size is remembered), so a bomb costs what its source text costs. ``tree``:
    the text has no anchors, so no node is shared (:func:`_tree_size`)."""
    budget = max_nodes() if budget is None else budget
    depth = max_depth() if depth is None else depth
    if tree:
        return _tree_size(root, budget, depth)
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if expanded:
            on_path.discard(key)
            size = 1 + sum(sizes[id(c)] for c in _children(node))
            if size > budget:
                raise _too_many(budget, node)
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise YamlLimitError(
                f"YAML alias at line {node.start_mark.line + 1} refers to a node that "
                "contains it (a circular structure cannot be stored)"
            )
        if len(on_path) >= depth:
            raise _too_deep(depth, node)
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise YamlLimitError(
                    f"YAML alias at line {child.start_mark.line + 1} refers to a node that "
                    "contains it (a circular structure cannot be stored)"
                )
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _no_anchors(data: bytes | str) -> bool:
    """No ``&``: the text defines no anchor, so it has no alias and parses to a tree (an
    ``&`` inside a string only costs the full check)."""
    if isinstance(data, bytes):
        return b"&" not in data
    return "&" not in data


#: The scalar types the safe loader makes of plain text; anything else (``!!binary``, merge keys,
#: ``=``) is left to the composer path, which knows every rule.
_PLAIN_TAGS = frozenset(
    "tag:yaml.org,2002:" + t for t in ("null", "bool", "int", "float", "str", "timestamp")
)
_STR = "tag:yaml.org,2002:str"


class _NotPlain(Exception):
    """The text uses something the event builder leaves to the composer path."""


class _EventBuilder:
    """Python objects straight from libyaml's event stream, for the common YAML: no anchors,
    no explicit tags, no complex keys, one document. Composing a node graph first (what
    ``yaml.load`` does, and :func:`check_expansion` needs) costs seven times the C parse,
    and most of it goes on resolving and constructing the same few scalars again and again;
    here each distinct plain scalar is resolved and constructed once. Node count and depth
    are counted as the events pass, with the same limits. Anything unusual raises
    :class:`_NotPlain` and the caller takes the composer path, so errors and limits read
    exactly as before."""

    def __init__(self) -> None:
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()
        self.scalars: dict[tuple, Any] = {}

    def scalar(self, ev: yaml.ScalarEvent) -> Any:
        if ev.tag is not None and ev.tag != "!":
            raise _NotPlain
        key = (ev.value, ev.implicit)
        try:
            return self.scalars[key]
        except KeyError:
            pass
        tag = self.resolver.resolve(yaml.ScalarNode, ev.value, ev.implicit)
        if tag not in _PLAIN_TAGS:
            raise _NotPlain
        value = (
            ev.value
            if tag == _STR
            else self.constructor.yaml_constructors[tag](
                self.constructor, yaml.ScalarNode(tag, ev.value)
            )
        )
        self.scalars[key] = value
        return value

    def items(self, text: str, split: bool) -> tuple[bool, list[tuple[Any, str]]]:
        """(whether the top level was split, [(value, source text)]): with ``split``, a
        top-level sequence gives one entry per item, each counted against the limits on its
        own (as :func:`load_yaml_items`); otherwise the document is one entry."""
        budget, depth = max_nodes(), max_depth()
        scalar_ev, alias_ev = yaml.ScalarEvent, yaml.AliasEvent
        seq_start, map_start = yaml.SequenceStartEvent, yaml.MappingStartEvent
        ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
        # a frame: [container, is mapping, key waiting for its value, start index]
        stack: list[list] = []
        out: list[tuple[Any, str]] = []
        outer = 0  # 1 while inside a split top-level sequence
        documents = count = 0

        def place(value: Any, start: int, end: int) -> None:
            nonlocal count
            if len(stack) == outer:
                out.append((value, text[start:end]))
                count = 0
                return
            frame = stack[-1]
            if not frame[1]:
                frame[0].append(value)
            elif frame[2] is _NO_KEY:
                if isinstance(value, list | dict):
                    raise _NotPlain  # a complex key: the composer path says why
                frame[2] = value
            else:
                frame[0][frame[2]] = value
                frame[2] = _NO_KEY

        for ev in yaml.parse(text, Loader=_loader_class()):
            kind = type(ev)
            if kind is scalar_ev or kind is seq_start or kind is map_start:
                if ev.anchor is not None:
                    raise _NotPlain
                if split and kind is seq_start and not stack and not out:
                    outer = 1
                    stack.append([None, False, _NO_KEY, ev.start_mark.index])
                    continue
                count += 1
                if count > budget or len(stack) - outer + 1 > depth:
                    raise _NotPlain  # past a limit: the composer path words the error
                if kind is scalar_ev:
                    place(self.scalar(ev), ev.start_mark.index, ev.end_mark.index)
                    continue
                if ev.tag not in (None, "!") or (
                    stack and stack[-1][1] and stack[-1][2] is _NO_KEY
                ):
                    raise _NotPlain
                container: dict | list = {} if kind is map_start else []
                stack.append([container, kind is map_start, _NO_KEY, ev.start_mark.index])
            elif kind in ends:
                frame = stack.pop()
                if frame[0] is not None:
                    place(frame[0], frame[3], ev.end_mark.index)
            elif kind is alias_ev:
                raise _NotPlain
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _NotPlain  # the composer path's "expected a single document"
        if not documents:
            raise _NotPlain
        return bool(outer), out


_NO_KEY = object()


def _fast_items(text: str, split: bool) -> tuple[bool, list[tuple[Any, str]]] | None:
    """:meth:`_EventBuilder.items`, or None where the composer path must decide."""
    if _loader_class() is yaml.SafeLoader:
        return None  # no libyaml: the event stream is no faster than composing
    try:
        return _EventBuilder().items(text, split)
    except (_NotPlain, yaml.YAMLError, ValueError, TypeError):
        return None


def load_yaml(data: bytes | str) -> Any:
    """Parse one YAML document safely and within the limits. Raises ``yaml.YAMLError``
    (:class:`YamlLimitError` past a limit) for what cannot be loaded."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    fast = _fast_items(text, split=False)
    if fast is not None:
        return fast[1][0][0]
    loader = _loader_class()(data)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expansion(node, tree=_no_anchors(data))
        return loader.construct_document(node)
    finally:
        loader.dispose()


@dataclass(frozen=True)
class YamlItem:
    """One top-level item: its value, or why it could not be loaded (and its source text)."""

    value: Any
    error: str | None
    source: str


def load_yaml_items(data: bytes | str) -> list[YamlItem]:
    """Parse a YAML document whose top level is a sequence item by item: an item past a limit
    (or circular) becomes a :class:`YamlItem` with ``error`` and its own source text, and its
    siblings still load. Any other top level is one item. Raises ``yaml.YAMLError`` for text
    that is not YAML at all."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    fast = _fast_items(text, split=True)
    if fast is not None:
        return [YamlItem(value, None, source) for value, source in fast[1]]
    loader = _loader_class()(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return [YamlItem(None, None, "")]
        nodes = list(root.value) if isinstance(root, yaml.SequenceNode) else [root]
        items = []
        tree = _no_anchors(text)
        for node in nodes:
            source = text[node.start_mark.index : node.end_mark.index]
            try:
                check_expansion(node, tree=tree)
            except YamlLimitError as exc:
                items.append(YamlItem(None, str(exc), source))
                continue
            items.append(YamlItem(loader.construct_object(node, deep=True), None, source))
        return items
    finally:
        loader.dispose()
