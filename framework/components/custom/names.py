"""Where a custom component's ``class_name`` points, worked out from names and files alone.

Nothing here imports or runs the user's code: ``validate-manifest`` uses it to
check that the module and class exist, and the loader uses it to know which
file to load. A ``class_name`` resolves, in this order:

1. ``source_declarative_manifest.components.X`` and ``components.X``: the
   ``components.py`` beside the manifest (Airbyte's manifest-only connectors);
2. ``source_<name>.<modules>.X`` when the manifest sits in a package folder
   ``source_<name>/`` (Airbyte's Python connectors): the module's file in that
   folder (``components.py``, ``components/transformations.py``, or the
   package's ``__init__.py`` for ``source_<name>.X``);
3. any other ``module.Class``: a module importable where the framework runs
   (an installed package of the user's).

The first two are *shipped with the manifest*: running them is a choice the
user makes explicitly (see :mod:`framework.components.custom.loader`); the
third is code the user installed.
"""

from __future__ import annotations

import importlib.util
import os
import re
from typing import Literal

from msgspec import Struct

from framework.errors import ConfigError

__all__ = ["MANIFEST_ONLY_PREFIXES", "ClassRef", "package_of", "resolve_class_name"]

#: ``class_name`` prefixes that mean "the components.py beside the manifest".
MANIFEST_ONLY_PREFIXES = ("source_declarative_manifest.components", "components")

_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")

Origin = Literal["beside-manifest", "package-folder", "installed"]


class ClassRef(Struct, frozen=True):
    """A resolved ``class_name``.

    ``module`` is the module's dotted name as the code knows it
    (``source_shop.components``); ``class_path`` the class inside it (``Extractor``,
    or ``Outer.Inner``); ``file`` the module's source file (None for an installed
    module that is not found or has no source); ``root`` the folder that holds
    the top package (``source_shop/``'s parent) or the manifest's folder for a
    ``components.py``; ``origin`` which of the three rules matched.
    """

    class_name: str
    module: str
    class_path: str
    file: str | None
    root: str | None
    origin: Origin

    @property
    def shipped(self) -> bool:
        """Whether the code comes with the manifest (and so runs only when the user allows it)."""
        return self.origin != "installed"


def package_of(manifest_dir: str) -> str | None:
    """The package name when the manifest sits in a folder ``source_<name>/`` (Airbyte's Python connectors)."""
    name = os.path.basename(os.path.normpath(manifest_dir))
    return name if name.startswith("source_") and name.isidentifier() else None


def _module_file(root: str, dotted: str) -> str | None:
    """The source file of module ``dotted`` under ``root`` (a module file or a package's ``__init__.py``)."""
    base = os.path.join(root, *dotted.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def resolve_class_name(class_name: str, manifest_dir: str) -> ClassRef:
    """Resolve ``class_name`` for a manifest in ``manifest_dir`` (see the module docs for the order).

    Raises :class:`~framework.errors.ConfigError` when the name is not a dotted
    ``module.Class`` path. A module that cannot be found resolves all the same,
    with ``file`` None for an installed one: callers say what is missing.
    """
    if not isinstance(class_name, str) or not _DOTTED.match(class_name):
        raise ConfigError(f"`class_name` {class_name!r} should be a dotted path to a class, "
                          "like `components.MyExtractor` or `source_shop.components.MyExtractor`")
    manifest_dir = os.path.abspath(manifest_dir)
    for prefix in MANIFEST_ONLY_PREFIXES:
        if class_name.startswith(prefix + "."):
            rest = class_name[len(prefix) + 1:]
            beside = os.path.join(manifest_dir, "components.py")
            return ClassRef(class_name, "components", rest, beside if os.path.isfile(beside) else None,
                            manifest_dir, "beside-manifest")
    parts = class_name.split(".")
    package = package_of(manifest_dir)
    if package is not None and parts[0] == package:
        root = os.path.dirname(manifest_dir)
        # the longest module path that is a file in the package folder; the rest is the class path
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            file = _module_file(root, module)
            if file is not None:
                return ClassRef(class_name, module, ".".join(parts[cut:]), file, root, "package-folder")
        return ClassRef(class_name, ".".join(parts[:-1]), parts[-1], None, root, "package-folder")
    # An installed module: found from the top package's folder, without importing anything (find_spec of a
    # dotted name would import, and so run, the parent packages).
    try:
        top = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        top = None
    if top is not None:
        if top.submodule_search_locations:  # a package: look for the longest module path in its folders
            for location in top.submodule_search_locations:
                root = os.path.dirname(location)
                for cut in range(len(parts) - 1, 0, -1):
                    found = _module_file(root, ".".join(parts[:cut]))
                    if found is not None:
                        return ClassRef(class_name, ".".join(parts[:cut]), ".".join(parts[cut:]), found, root,
                                        "installed")
        elif top.origin and top.origin.endswith(".py"):  # a plain module
            return ClassRef(class_name, parts[0], ".".join(parts[1:]), top.origin, os.path.dirname(top.origin),
                            "installed")
    return ClassRef(class_name, ".".join(parts[:-1]), parts[-1], None, None, "installed")
