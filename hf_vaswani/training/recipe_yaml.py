"""YAML for run configurations: a strict reader (no duplicate keys, no anchors or aliases) and a writer that
never emits aliases, so that the ``config.yaml`` a run writes can be read back by the strict reader.

A recipe is a handful of plain values. A key given twice is almost always a mistake that PyYAML resolves
silently (the last one wins), and an alias lets a few lines expand to billions of values (the "billion laughs"
file), so both are refused with the line they are on.
"""

from __future__ import annotations

from typing import IO, Any

import yaml

__all__ = ["RecipeYAMLError", "dump_recipe", "load_recipe_yaml"]


class RecipeYAMLError(yaml.YAMLError):
    """A recipe uses something the strict reader refuses (a duplicate key, an anchor or an alias)."""


def _line(node_or_event: Any) -> int:
    mark = getattr(node_or_event, "start_mark", None)
    return mark.line + 1 if mark is not None else 0


class _StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses anchors, aliases and a key given twice in one mapping."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise RecipeYAMLError(
                f"line {_line(event)}: YAML aliases (*{event.anchor}) are not accepted in a run configuration; "
                "write the value out"
            )
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise RecipeYAMLError(
                f"line {_line(event)}: YAML anchors (&{anchor}) are not accepted in a run configuration; "
                "write the value out"
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise RecipeYAMLError(f"line {_line(key_node)}: YAML merge keys (<<) are not accepted")
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the parent reports it
                    continue
                if first is not None:
                    raise RecipeYAMLError(
                        f"line {_line(key_node)}: the key {key!r} is given twice (first on line {first}); "
                        "keep one of them"
                    )
                seen[key] = _line(key_node)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)


def load_recipe_yaml(stream: str | IO[str]) -> Any:
    """Parse `stream` like `yaml.safe_load`, refusing duplicate keys, anchors and aliases (`RecipeYAMLError`,
    whose message gives the line)."""
    return yaml.load(stream, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_recipe(config: Any, stream: IO[str]) -> None:
    """Write `config` as YAML without anchors or aliases (a value used twice is written twice)."""
    yaml.dump(config, stream, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True)
