"""Which component each mapping is, and what ``$parameters`` it sees.

Walking the resolved manifest from the root, guided by the models' field
annotations, this pass:

* gives a mapping without ``type`` the type its field implies (a
  ``retriever`` is a SimpleRetriever; a mapping with only a ``class_name`` is
  the custom kind of its field, a CustomRetriever there), and reports unknown
  or unsupported types with the types that fit there;
* merges ``$parameters`` down the tree (a component's own parameters win over
  inherited ones) and fills a field the component leaves out from the
  parameter of the same name, never overwriting a value the component sets;
* records every component it meets as a :class:`Site`, so later checks can
  look at each one without walking the tree again.

A custom component's other keys are the class's (kept as given); mappings
with a ``type`` among them are components too: they get ``$parameters`` and
are checked like any other.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from msgspec import Struct, field
from pydantic import BaseModel

from framework.diagnostics import Diagnostic, json_path
from framework.manifest.references import Origin
from framework.manifest.yaml_source import SourceDocument
from framework.models import REGISTRY, UNSUPPORTED, Component, CustomComponent, DeclarativeSource, default_type_of
from framework.models.base import field_types

PARAMETERS_KEY = "$parameters"

# Keys that older manifests used for what is now another field: ignoring them
# would silently change what a connector reads, so they are errors.
RENAMED = {
    "stream_slicer": "`stream_slicer` is the old name of `partition_router` (datetime slicing is now "
                     "the stream's `incremental_sync`)",
    "$options": "`$options` is the old name of `$parameters`",
    "options": "`options` is the old name of `$parameters`",
}
# Old field names that airbyte-cdk ignores (its models take unknown keys): ignored here too, so that such a
# manifest reads as it does there, with a warning that says what the key did once and what to write instead.
IGNORED_OLD_NAMES = {
    ("AsyncRetriever", "urls_extractor"): (
        "`urls_extractor` is the old name of `download_target_extractor`; airbyte-cdk ignores it, and so does "
        "this framework: each job is downloaded once, with an empty `download_target`",
        "to download from the targets the job's answer lists, rename it to `download_target_extractor` (the "
        "download requester reads each target as `download_target`); otherwise remove it"),
}
TYPO_CUTOFF = 0.8  # similarity above which an unknown key is taken for a misspelt field
# Keys Airbyte ignores that look like a misspelt field but are common on purpose (the SPEC message's
# own spelling): a warning that they are ignored, as Airbyte runs the manifest, not a typo error.
IGNORED_SPELLINGS = {("Spec", "documentationUrl"): "documentation_url"}


class Site(Struct, frozen=True):
    """A component found in the manifest: its model, its path, and its mapping."""

    model: type[Component]
    path: tuple
    data: dict


class Placement(Struct):
    """Finds the file place of a resolved path through the origin tree."""

    doc: SourceDocument
    origin: Origin

    def origin_at(self, path: tuple) -> Origin:
        node = self.origin
        for part in path:
            node = node.child(part)
        return node

    def where(self, path: tuple, key: bool = False) -> tuple[int, int]:
        node = self.origin_at(path)
        return self.doc.where(node.src, key=key)

    def diagnostic(self, path: tuple, code: str, message: str, fix: str | None = None,
                   severity: str = "error", key: bool = False) -> Diagnostic:
        line, col = self.where(path, key=key)
        return Diagnostic(self.doc.file, line, col, severity, code, message, json_path(path), fix)  # type: ignore[arg-type]


def _unwrap(annotation: Any) -> Iterator[tuple[str, Any]]:
    """Yield ``(shape, type)`` for every type an annotation admits: shape is one, seq or map."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _unwrap(args[0])
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _unwrap(arg)
    elif origin is tuple:
        for arg in args:
            if arg is not Ellipsis:
                for shape, inner in _unwrap(arg):
                    if shape == "one":
                        yield "seq", inner
    elif origin in (dict, Mapping):
        if len(args) == 2:
            for shape, inner in _unwrap(args[1]):
                if shape == "one":
                    yield "map", inner
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield "one", annotation


def slots(model: type[Component]) -> dict[str, dict[str, tuple[type[Component], ...]]]:
    """For each field alias of ``model`` that can hold components: shape -> component classes."""
    cached = _SLOTS.get(model)
    if cached is None:
        cached = {}
        for name, annotation in field_types(model).items():
            found: dict[str, list] = {}
            for shape, cls in _unwrap(annotation):
                if issubclass(cls, Component) and cls not in found.setdefault(shape, []):
                    found[shape].append(cls)
            if found:
                alias = model.model_fields[name].alias or name
                cached[alias] = {shape: tuple(classes) for shape, classes in found.items()}
        _SLOTS[model] = cached
    return cached


_SLOTS: dict[type[Component], dict[str, dict[str, tuple[type[Component], ...]]]] = {}


def field_aliases(model: type[Component]) -> dict[str, str]:
    """Alias (the manifest key) -> attribute name, for every field of ``model``."""
    return {(info.alias or name): name for name, info in model.model_fields.items()}


class Preparation(Struct):
    place: Placement
    strict: bool = False
    problems: list[Diagnostic] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    claimed: list[tuple] = field(default_factory=list)  # paths whose problems are already reported

    def run(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.problems.append(self.place.diagnostic(
                (), "not-a-mapping", "a manifest must be a mapping with `version`, `streams` and `check`",
                "start the file with `version: 6.7.0`"))
            self.claimed.append(())
            return data
        return self.component(data, (), (DeclarativeSource,), "DeclarativeSource", {}, {})

    def component(self, data: dict, path: tuple, candidates: tuple, default_type: str | None,
                  inherited: dict, inherited_origin: dict) -> dict:
        names = [cls.type_name() for cls in candidates]
        if "type" not in data and "class_name" in data:
            kind = self.custom_kind(data, path, candidates, names)
            if kind is None:
                return data
        else:
            kind = data.get("type") if "type" in data else self.implied_type(data, candidates, default_type)
        if kind is None:
            self.report(path, "missing-type", f"missing `type`; here it is one of: {', '.join(names)}",
                        f"add `type: {names[0]}`")
            return data
        if not isinstance(kind, str) or kind not in REGISTRY or REGISTRY[kind] not in candidates:
            self.unknown_type(kind, path + ("type",) if "type" in data else path, names)
            return data
        model = REGISTRY[kind]
        custom = issubclass(model, CustomComponent)
        data = dict(data) if custom else self.unknown_keys(dict(data), model, path)
        data["type"] = kind
        origin_node = self.place.origin_at(path)
        children = origin_node.children if isinstance(origin_node.children, dict) else {}
        own = data.get(PARAMETERS_KEY, {})
        if not isinstance(own, dict):
            self.report(path + (PARAMETERS_KEY,), "bad-parameters", "`$parameters` must be a mapping",
                        "write `$parameters:` followed by indented `key: value` lines")
            own = {}
        params = {**inherited, **own}
        param_origin = dict(inherited_origin)
        own_origin = children.get(PARAMETERS_KEY)
        for key in own:
            param_origin[key] = own_origin.child(key) if own_origin else origin_node
        for alias in field_aliases(model) if model.takes_parameters else ():
            if alias not in data and alias in params and alias not in ("type", "class_name", PARAMETERS_KEY):
                data[alias] = params[alias]
                children[alias] = param_origin[alias]
        if params:
            data[PARAMETERS_KEY] = params
        if isinstance(origin_node.children, dict):
            origin_node.children = children
        self.sites.append(Site(model, path, data))
        if custom:
            for key in [k for k in data if k not in ("type", "class_name", PARAMETERS_KEY)]:
                data[key] = self.nested(data[key], path + (key,), params, param_origin)
        for alias, shapes in slots(model).items():
            if alias not in data or alias == PARAMETERS_KEY:
                continue
            info = model.model_fields[field_aliases(model)[alias]]
            value = data[alias]
            shape = "one" if isinstance(value, dict) else "seq" if isinstance(value, list) else None
            if shape == "one" and "one" not in shapes and "map" in shapes:
                shape = "map"
            if shape not in shapes:
                continue
            classes = shapes[shape]
            default = default_type_of(info) or (classes[0].type_name() if len(classes) == 1 else None)
            if shape == "one":
                data[alias] = self.component(value, path + (alias,), classes, default, params, param_origin)
            elif shape == "seq":
                data[alias] = [
                    self.component(item, path + (alias, i), classes, default, params, param_origin)
                    if isinstance(item, dict) else item
                    for i, item in enumerate(value)
                ]
            else:
                data[alias] = {
                    key: self.component(item, path + (alias, key), classes, default, params, param_origin)
                    if isinstance(item, dict) else item
                    for key, item in value.items()
                }
        return data

    def custom_kind(self, data: dict, path: tuple, candidates: tuple, names: list[str]) -> str | None:
        """The custom kind a mapping given by ``class_name`` alone has (Airbyte's older form), from its field."""
        kinds = [cls.type_name() for cls in candidates if issubclass(cls, CustomComponent)]
        if not isinstance(data["class_name"], str):
            self.report(path + ("class_name",), "bad-class-name", "`class_name` must be a dotted class path",
                        "write it like `components.MyExtractor`")
            return None
        if len(kinds) != 1:
            self.report(path + ("class_name",), "wrong-component",
                        f"a custom component (`class_name: {data['class_name']}`) cannot be used here; "
                        f"expected one of: {', '.join(names)}", f"use one of: {', '.join(names)}")
            return None
        return kinds[0]

    def nested(self, value: Any, path: tuple, params: dict, param_origin: dict) -> Any:
        """A value a custom component is given: mappings with a known ``type`` in it are components."""
        if isinstance(value, list):
            return [self.nested(item, path + (i,), params, param_origin) for i, item in enumerate(value)]
        if not isinstance(value, dict):
            return value
        kind = value.get("type")
        if isinstance(kind, str) and kind in UNSUPPORTED:
            self.report(path + ("type",), "unsupported-component",
                        f"component `{kind}` is not supported: {UNSUPPORTED[kind]}",
                        "build it in the custom class instead, or use a supported component")
        elif isinstance(kind, str) and kind in REGISTRY:
            return self.component(value, path, (REGISTRY[kind],), kind, params, param_origin)
        return value

    def unknown_keys(self, data: dict, model: type[Component], path: tuple) -> dict:
        """Report keys ``model`` does not know, and drop them.

        A key that looks like a misspelt field, an old field name, or one holding an
        unsupported component is an error; an old field name airbyte-cdk ignores
        (:data:`IGNORED_OLD_NAMES`) and any other unknown key is a warning that it
        is ignored (as Airbyte ignores it), or an error with ``strict``.
        """
        aliases = field_aliases(model)
        for key in [k for k in data if k not in aliases and k != "type"]:
            value = data.pop(key)
            where = path + (key,)
            inner = value.get("type") if isinstance(value, dict) else None
            close = difflib.get_close_matches(str(key), [a for a in aliases if a != "type"], n=1, cutoff=0.5)
            typo = difflib.get_close_matches(str(key), list(aliases), n=1, cutoff=TYPO_CUTOFF)
            owner = model.type_name()
            if isinstance(inner, str) and inner in UNSUPPORTED:
                self.report(where + ("type",), "unsupported-component",
                            f"component `{inner}` is not supported: {UNSUPPORTED[inner]}",
                            RENAMED.get(str(key), f"remove `{key}`"))
            elif (owner, key) in IGNORED_OLD_NAMES:
                message, fix = IGNORED_OLD_NAMES[(owner, key)]
                self.problems.append(self.place.diagnostic(where, "ignored-old-field", message, fix, key=True,
                                                           severity="error" if self.strict else "warning"))
            elif key in RENAMED:
                self.report(where, "renamed-field", f"{RENAMED[key]}; {owner} does not accept it",
                            "rename the key", key=True)
            elif (owner, key) in IGNORED_SPELLINGS:
                field_name = IGNORED_SPELLINGS[(owner, key)]
                self.problems.append(self.place.diagnostic(
                    where, "ignored-field", f"`{key}` in {owner} is ignored (as Airbyte ignores it); the manifest "
                    f"spells it `{field_name}`", f"rename it to `{field_name}`", severity="warning", key=True))
            elif typo or self.strict:
                fix = f"did you mean `{(typo or close)[0]}`?" if (typo or close) else f"remove it; {owner} accepts: " \
                    + ", ".join(sorted(a for a in aliases if a != "type"))
                self.report(where, "unknown-field", f"unknown field `{key}` in {owner}", fix, key=True)
                if typo and typo[0] not in data and typo[0] != "type":
                    # checked under the name it was meant to have: one error for one misspelling, not a second
                    # "missing required field" whose fix would show the reference's example value
                    data[typo[0]] = value
            else:
                fix = f"did you mean `{close[0]}`? otherwise remove it" if close else "remove it"
                self.problems.append(self.place.diagnostic(
                    where, "ignored-field", f"unknown field `{key}` in {owner} is ignored", fix,
                    severity="warning", key=True))
        return data

    @staticmethod
    def implied_type(data: dict, candidates: tuple, default_type: str | None) -> str | None:
        """The type of a mapping written without one (nor a ``class_name``): the field's default when its
        keys fit that component, else the only candidate whose fields hold all the keys."""
        keys = set(data) - {PARAMETERS_KEY}
        # without a `class_name` it is not a custom component
        candidates = tuple(cls for cls in candidates if not issubclass(cls, CustomComponent))
        fitting = [cls for cls in candidates if keys <= set(field_aliases(cls))]
        default = REGISTRY.get(default_type) if default_type else None
        if default is not None and default in fitting:
            return default_type
        if len(fitting) == 1:
            return fitting[0].type_name()
        if default is not None:
            return default_type
        return candidates[0].type_name() if len(candidates) == 1 else None

    def unknown_type(self, kind: Any, path: tuple, names: list[str]) -> None:
        here = ", ".join(names)
        if isinstance(kind, str) and kind in UNSUPPORTED:
            self.report(path, "unsupported-component",
                        f"component `{kind}` is not supported: {UNSUPPORTED[kind]}",
                        f"use one of the supported components here: {here}")
        elif isinstance(kind, str) and kind in REGISTRY:
            self.report(path, "wrong-component", f"`{kind}` cannot be used here; expected one of: {here}",
                        f"use one of: {here}")
        else:
            close = difflib.get_close_matches(str(kind), names, n=1, cutoff=0.5) or \
                difflib.get_close_matches(str(kind), list(REGISTRY), n=1, cutoff=0.6)
            fix = f"did you mean `{close[0]}`?" if close else f"use one of: {here}"
            self.report(path, "unknown-type", f"unknown component type `{kind}`", fix)

    def report(self, path: tuple, code: str, message: str, fix: str | None, key: bool = False) -> None:
        self.problems.append(self.place.diagnostic(path, code, message, fix, key=key))
        self.claimed.append(path[:-1] if path and path[-1] in ("type", "class_name") else path)
