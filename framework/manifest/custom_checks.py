"""Checks of custom components (``class_name``) made from their source, never importing or running it.

For each custom component: its ``class_name`` resolves to a module file, the
class is in it, the class has the methods its kind needs (unless a base that
cannot be read, an airbyte-cdk class say, may give them), the keys the manifest
gives it are fields it declares, and the packages its module imports are
installed (``airbyte_cdk`` names the framework's ``airbyte`` extra). Every
problem is placed at the component's ``class_name`` (an unknown key at the key).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator

from msgspec import Struct, field

from framework.components.custom.names import ClassRef, resolve_class_name
from framework.components.custom.source import (
    AIRBYTE_CDK,
    ClassFacts,
    class_names,
    find_class,
    is_installed,
    missing_imports,
    read_module,
)
from framework.diagnostics import Diagnostic
from framework.errors import ConfigError
from framework.manifest.components import PARAMETERS_KEY, Placement, Site
from framework.models import CustomComponent

AIRBYTE_EXTRA_FIX = "pip install 'manifest-framework[airbyte]'"
#: Top-level modules that airbyte-cdk (the version the extra pins) installs with it: where airbyte-cdk is
#: missing too, a component importing one gets the extra's error alone.
AIRBYTE_CDK_BRINGS = frozenset({
    "airbyte_protocol", "airbyte_protocol_dataclasses", "anyascii", "backoff", "boltons", "cachetools", "dateparser",
    "dpath", "dunamai", "genson", "ijson", "isodate", "jsonref", "nltk", "pyrate_limiter", "rapidfuzz",
    "requests_cache", "serpyco_rs", "ulid", "unidecode", "wcmatch", "whenever",
})
_OWN_KEYS = ("type", "class_name", PARAMETERS_KEY)


class _Run(Struct):
    place: Placement
    manifest_dir: str
    reported_imports: set[str] = field(default_factory=set)  # each missing package or broken module once
    #: each module no file provides, by where it was looked for: the classes named from it, and how many
    #: components name them (one error for the module, at its first use, names them all)
    users: dict[tuple[str, str], tuple[list[str], int]] = field(default_factory=dict)
    reported_modules: set[tuple[str, str]] = field(default_factory=set)
    facts: dict[tuple[str, str], ClassFacts | str | None] = field(default_factory=dict)

    def check(self, site: Site) -> Iterator[Diagnostic]:
        model = site.model
        assert issubclass(model, CustomComponent)
        class_name = site.data.get("class_name")
        at = site.path + ("class_name",)
        if not isinstance(class_name, str):
            return  # reported when the component was typed
        try:
            ref = resolve_class_name(class_name, self.manifest_dir)
        except ConfigError as exc:
            yield self.place.diagnostic(at, "bad-class-name", str(exc), "write `module.Class`, like "
                                        "`components.MyExtractor`")
            return
        if ref.file is None:
            yield from self.module_missing(ref, at)
            return
        parsed = read_module(ref.file)
        if parsed.syntax_error is not None:
            if ref.file in self.reported_imports:
                return  # once per module
            self.reported_imports.add(ref.file)
            line, message = parsed.syntax_error
            yield self.place.diagnostic(at, "custom-syntax-error",
                                        f"{ref.file}:{line}: {message} (the module of `{class_name}`)",
                                        "fix the Python syntax there")
            return
        key = (ref.file, ref.class_path)
        if key not in self.facts:
            self.facts[key] = find_class(ref.file, ref.module, ref.class_path, ref.root)
        facts = self.facts[key]
        if ref.shipped:
            yield from self.imports(ref, facts, at)
        if facts is None:
            yield self.class_missing(ref, at)
            return
        if isinstance(facts, str):
            return  # bound by an import or an assignment: it may well be a class, but its source is elsewhere
        missing = facts.missing(model.methods)
        if missing:
            names = ", ".join(f"`{name}`" for name in missing)
            yield self.place.diagnostic(
                at, "custom-method-missing",
                f"class `{facts.name}` ({facts.file}:{facts.line}) has no {names}, which a {model.kind} needs",
                f"define {names} in `{facts.name}` (see docs/custom-components.md for the signatures), "
                "or subclass a class that has them")
        if facts.fields_known:
            yield from self.options(site, facts)

    def count_use(self, site: Site) -> None:
        """Note the module of the custom component at ``site`` when no file provides it."""
        class_name = site.data.get("class_name")
        try:
            ref = resolve_class_name(class_name, self.manifest_dir) if isinstance(class_name, str) else None
        except ConfigError:
            return
        if ref is not None and ref.file is None:
            classes, count = self.users.get((ref.origin, ref.module), ([], 0))
            self.users[(ref.origin, ref.module)] = (classes + [ref.class_path] * (ref.class_path not in classes),
                                                    count + 1)

    def _used_by(self, ref: ClassRef) -> str:
        """`` (needed by ...)``: the classes the manifest names from the missing module of ``ref``."""
        classes, count = self.users.get((ref.origin, ref.module), ([ref.class_path], 1))
        if count <= 1:
            return ""
        names = ", ".join(f"`{name}`" for name in classes)
        return f"; the manifest names {len(classes)} class{'es' * (len(classes) != 1)} from it ({names}), at " \
               f"{count} places: this error stands for all of them"

    def module_missing(self, ref: ClassRef, at: tuple) -> Iterator[Diagnostic]:
        if (ref.origin, ref.module) in self.reported_modules:
            return  # one error for the module, at its first use
        self.reported_modules.add((ref.origin, ref.module))
        if ref.origin == "beside-manifest":
            wanted = os.path.join(self.manifest_dir, "components.py")
            yield self.place.diagnostic(
                at, "custom-module-not-found",
                f"`{ref.class_name}` names a class in `components.py` beside the manifest, but {wanted} does not "
                f"exist{self._used_by(ref)}",
                f"create {wanted} defining `class {ref.class_path}`, or fix `class_name`")
        elif ref.origin == "package-folder":
            base = os.path.join(ref.root or self.manifest_dir, *ref.module.split("."))
            yield self.place.diagnostic(
                at, "custom-module-not-found",
                f"module `{ref.module}` of `{ref.class_name}` is not in the package folder: looked for "
                f"{base}.py and {os.path.join(base, '__init__.py')}{self._used_by(ref)}",
                f"create {base}.py defining `class {ref.class_path}`, or fix `class_name`")
        else:
            top = ref.class_name.split(".", 1)[0]
            if is_installed(top):
                return  # installed, but not as Python source (an extension module): nothing to read
            if top == AIRBYTE_CDK:
                yield self.place.diagnostic(at, "airbyte-extra-missing",
                                            f"`{ref.class_name}` is an airbyte-cdk class, and airbyte-cdk is not "
                                            "installed", AIRBYTE_EXTRA_FIX)
            else:
                yield self.place.diagnostic(
                    at, "custom-module-not-found",
                    f"module `{ref.module}` of `{ref.class_name}` is not installed, and no file of the manifest's "
                    f"folder provides it (looked for {os.path.join(self.manifest_dir, 'components.py')} and a "
                    f"package folder `source_<name>/`){self._used_by(ref)}",
                    f"keep the manifest in the connector's package folder `{top}/`, beside its modules"
                    if top.startswith("source_") else
                    f"install the package that provides `{top}`, or write the class in "
                    f"{os.path.join(self.manifest_dir, 'components.py')} and name it `components.{ref.class_path}`")

    def class_missing(self, ref: ClassRef, at: tuple) -> Diagnostic:
        assert ref.file is not None and ref.root is not None
        head = ref.class_path.split(".", 1)[0]
        parsed = read_module(ref.file)
        if "." in ref.class_path and head not in parsed.classes and ref.origin == "package-folder":
            # `source_x.components.X` with no components module: names.py stopped at the package
            base = os.path.join(ref.root, *ref.module.split("."), head)
            return self.place.diagnostic(
                at, "custom-module-not-found",
                f"module `{ref.module}.{head}` of `{ref.class_name}` is not in the package folder: looked for "
                f"{base}.py and {os.path.join(base, '__init__.py')}",
                f"create {base}.py defining `class {ref.class_path.split('.', 1)[1]}`, or fix `class_name`")
        known = class_names(ref.file)
        close = difflib.get_close_matches(ref.class_path, known, n=1, cutoff=0.6)
        if close:
            fix = f"did you mean `{close[0]}`? (`{ref.class_name.rpartition('.')[0]}.{close[0]}`)"
        else:
            fix = f"define `class {ref.class_path}` in {ref.file}, or fix `class_name`" + (
                f" (it defines: {', '.join(known)})" if known else "")
        return self.place.diagnostic(at, "custom-class-not-found",
                                     f"class `{ref.class_path}` is not defined in {ref.file}", fix)

    def options(self, site: Site, facts: ClassFacts) -> Iterator[Diagnostic]:
        declared = sorted(facts.fields)
        for key in site.data:
            if key in _OWN_KEYS or key in facts.fields or not isinstance(key, str):
                continue
            close = difflib.get_close_matches(key, declared, n=1, cutoff=0.6)
            if close:
                fix = f"did you mean `{close[0]}`?"
            elif declared:
                fix = f"declare `{key}` in the class, or remove it; `{facts.name}` takes: {', '.join(declared)}"
            else:
                fix = f"declare `{key}` in the class (an annotated field), or remove it"
            yield self.place.diagnostic(
                site.path + (key,), "custom-unknown-option",
                f"`{key}` is not a field of class `{facts.name}` ({facts.file}:{facts.line}): it is not passed "
                "to the class", fix, severity="warning", key=True)

    def imports(self, ref: ClassRef, facts: ClassFacts | str | None, at: tuple) -> Iterator[Diagnostic]:
        """Packages the class's modules (and the local modules they import) need that are not installed."""
        assert ref.file is not None and ref.root is not None
        files = [ref.file]
        modules = {ref.file: ref.module}
        if isinstance(facts, ClassFacts):
            for file in facts.modules:
                files.append(file)
                modules.setdefault(file, _module_name(ref.root, file))
        problems = missing_imports(files, modules, ref.root)
        without_airbyte = any(p.package == AIRBYTE_CDK for p in problems)
        for problem in problems:
            if problem.package in self.reported_imports:
                continue
            if without_airbyte and problem.package.split(".")[0] in AIRBYTE_CDK_BRINGS:
                continue  # the airbyte extra's error says it all: installing it brings this one
            self.reported_imports.add(problem.package)
            where = f"{problem.file}:{problem.line}"
            if problem.local:
                yield self.place.diagnostic(
                    at, "custom-module-not-found",
                    f"{where} imports `{problem.package}`, which is not there (looked for {problem.looked_for}); "
                    f"it is needed by `{ref.class_name}`",
                    "add the missing module file, or fix the import")
            elif problem.package == AIRBYTE_CDK:
                yield self.place.diagnostic(
                    at, "airbyte-extra-missing",
                    f"`{ref.class_name}` needs airbyte-cdk ({where} imports `airbyte_cdk`), which is not installed",
                    AIRBYTE_EXTRA_FIX)
            else:
                yield self.place.diagnostic(
                    at, "package-missing",
                    f"`{ref.class_name}` needs the package `{problem.package}` ({where} imports it), which is not "
                    "installed", f"install the package that provides `{problem.package}`, then validate again"
                    + (" (airbyte-cdk, missing too, may bring it: install the extra first)" if without_airbyte else ""))


def _module_name(root: str, file: str) -> str:
    relative = os.path.relpath(file, root)
    parts = relative[:-3].split(os.sep) if relative.endswith(".py") else relative.split(os.sep)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def custom_checks(sites: list[Site], place: Placement, manifest_dir: str) -> Iterator[Diagnostic]:
    """Check every custom component of a manifest in ``manifest_dir`` against its Python source."""
    run = _Run(place, manifest_dir)
    custom = [site for site in sites if issubclass(site.model, CustomComponent)]
    for site in custom:
        run.count_use(site)
    for site in custom:
        yield from run.check(site)
