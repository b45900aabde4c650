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
* ``GRAPHLAKE_YAML_MAX_DEPTH`` (default 500): nesting depth.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import yaml

DEFAULT_MAX_NODES = 1_000_000
DEFAULT_MAX_DEPTH = 500


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


def load_yaml(data: bytes | str) -> Any:
    """Parse one YAML document safely and within the limits. Raises ``yaml.YAMLError``
    (:class:`YamlLimitError` past a limit) for what cannot be loaded."""
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
