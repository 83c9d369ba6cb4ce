"""Loading a custom component's class, and the gate in front of code shipped with a manifest.

A :class:`CodeLoader` belongs to one connector. :meth:`CodeLoader.load_class`
turns a :class:`~framework.components.custom.names.ClassRef` into the class:

* a ``components.py`` beside the manifest is loaded from its file as the
  module ``components`` (Airbyte's manifest-only connectors);
* a module of a ``source_<name>/`` package folder is imported as
  ``source_<name>.<module>`` with the package's ``__path__`` set to the folder,
  *without* running the package's ``__init__.py`` (Airbyte's connector packages
  import their whole source there) unless the class lives in it; relative
  imports between the package's modules work;
* anything else is imported normally (an installed module).

Loaded modules are registered in :data:`sys.modules` under their dotted names,
as Airbyte's classes refer to each other by module name. A module of the same
name from another folder, or whose files changed, is replaced.

Code shipped with the manifest (the first two) runs only when the user allows
it (:func:`custom_code_allowed`); refused, :class:`~framework.errors.ConfigError`
says which file would run and how to allow it. The loader records the text of
every shipped file it loaded (:meth:`CodeLoader.shipped_files`), which is what
Spark executors get instead of the files (:func:`materialize`).

A module that imports a package missing here fails with a ConfigError naming
the package. An exception raised by the user's code is a :class:`UserCodeError`
that names the component kind, the class, the manifest place and the stream,
and keeps the user's traceback.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from framework.components.custom.names import ClassRef
from framework.errors import ConfigError, ReadError, place_suffix

__all__ = [
    "AIRBYTE_UNSAFE_ENV",
    "ALLOW_ENV",
    "CodeLoader",
    "UserCodeError",
    "custom_code_allowed",
    "materialize",
    "missing_package_error",
]

#: The environment variable that allows code shipped with a manifest to run.
ALLOW_ENV = "FRAMEWORK_ALLOW_CUSTOM_CODE"
#: Airbyte's spelling of the same switch, honoured too.
AIRBYTE_UNSAFE_ENV = "AIRBYTE_ENABLE_UNSAFE_CODE"

HOW_TO_ALLOW = (f"pass --allow-custom-code to run-manifest (or .option('allow_custom_code', 'true') to the "
                f"DataFrame reader), or set {ALLOW_ENV}=true ({AIRBYTE_UNSAFE_ENV}=true works too)")

#: Packages whose absence gets a message with the fix.
_EXTRAS = {"airbyte_cdk": "needs airbyte-cdk: pip install 'manifest-framework[airbyte]'"}

#: The package Airbyte registers a manifest's components.py under (``source_declarative_manifest.components``).
SDM_PACKAGE = "source_declarative_manifest"

_IMPORT_LOCK = threading.RLock()
#: module name -> fingerprint of what it was loaded from (a file's text, a package folder's files)
_FINGERPRINTS: dict[str, str] = {}


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def custom_code_allowed(flag: bool | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether code shipped with a manifest may run: ``flag`` when given, else the environment variables."""
    if flag is not None:
        return flag
    env = os.environ if environ is None else environ
    return _true(env.get(ALLOW_ENV)) or _true(env.get(AIRBYTE_UNSAFE_ENV))


def missing_package_error(package: str, what: str, place: str | None) -> ConfigError:
    """The ConfigError of a component whose code imports ``package``, which is not installed here."""
    top = package.split(".")[0]
    fix = _EXTRAS.get(top, f"needs the Python package `{top}`: install it where the connector runs "
                           "(the Spark executors too)")
    return ConfigError(f"{what} imports `{package}`, which is not installed: it {fix}{place_suffix(place)}")


class UserCodeError(ReadError):
    """An exception raised inside a custom component's code.

    The message names the component kind, the class, the stream and the
    manifest place; ``user_traceback`` is the user's part of the traceback
    (secrets masked), shown after the message. The exception itself is
    chained (``__cause__``).
    """

    def __init__(self, message: str, *, user_traceback: str = "", **kwargs: Any):
        self.user_traceback = user_traceback
        super().__init__(message, **kwargs)

    def __str__(self) -> str:
        head = super().__str__()
        return f"{head}\n{self.user_traceback}" if self.user_traceback else head

    def __reduce__(self) -> Any:  # pickled across processes (Spark) with its context
        return (_rebuild_user_error, (self.reason, self.user_traceback, self.stream, self.request, self.place,
                                      self.failure_type))


def _rebuild_user_error(reason: str, user_traceback: str, stream: str | None, request: str | None,
                        place: str | None, failure_type: str) -> UserCodeError:
    return UserCodeError(reason, user_traceback=user_traceback, stream=stream, request=request, place=place,
                         failure_type=failure_type)


def user_traceback(exc: BaseException, skip: int, mask: Callable[[str], str]) -> str:
    """The traceback of ``exc`` from the user's code: the first ``skip`` frames (the framework's) left out."""
    frames = traceback.extract_tb(exc.__traceback__)[skip:]
    lines = ["Traceback (most recent call last, the component's code):\n", *traceback.format_list(frames),
             *traceback.format_exception_only(type(exc), exc)]
    return mask("".join(lines).rstrip("\n"))


def _fingerprint_file(file: str) -> str:
    with open(file, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _fingerprint_folder(folder: str) -> str:
    digest = hashlib.sha256()
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                digest.update(os.path.relpath(path, folder).encode())
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def _purge(name: str) -> None:
    """Forget module ``name`` and its submodules (loaded from another folder, or since changed)."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
        _FINGERPRINTS.pop(key, None)
    importlib.invalidate_caches()


def _alias(module: ModuleType) -> None:
    """Register ``components`` as ``source_declarative_manifest.components`` too, as Airbyte does (its
    classes, and airbyte-cdk's factory, may name it so)."""
    parent = sys.modules.get(SDM_PACKAGE)
    if parent is None:
        spec = importlib.machinery.ModuleSpec(SDM_PACKAGE, None, is_package=True)
        spec.submodule_search_locations = []
        parent = sys.modules[SDM_PACKAGE] = importlib.util.module_from_spec(spec)
    parent.components = module  # type: ignore[attr-defined]
    sys.modules[SDM_PACKAGE + ".components"] = module


def _exec_file(name: str, file: str, package_path: list[str] | None = None) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, file, submodule_search_locations=package_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


class CodeLoader:
    """Loads the classes of one connector's custom components (see the module docs).

    ``manifest_dir`` is the manifest's folder; ``allowed`` whether code shipped
    with the manifest may run.
    """

    def __init__(self, manifest_dir: str | None, allowed: bool):
        self.manifest_dir = os.path.abspath(manifest_dir) if manifest_dir else None
        self.allowed = allowed
        self._shipped: dict[str, str] = {}
        self._classes: dict[str, type] = {}

    def shipped_files(self) -> dict[str, str]:
        """The shipped files loaded so far: path relative to the manifest folder's parent -> text."""
        return dict(self._shipped)

    @property
    def loaded_any(self) -> bool:
        """Whether a class was loaded (a custom component's: the manifest's own Python code runs here)."""
        return bool(self._classes)

    def load_class(self, ref: ClassRef, what: str, place: str | None) -> type:
        """The class ``ref`` names; ``what`` says which component it is for messages (``record extractor``)."""
        found = self._classes.get(ref.class_name)
        if found is not None:
            return found
        if ref.shipped:
            self._gate(ref, what, place)
        with _IMPORT_LOCK:
            module = self._module(ref, what, place)
            if ref.shipped:
                self._record(ref)
        target: Any = module
        for part in ref.class_path.split("."):
            target = getattr(target, part, None)
            if target is None:
                shown = ref.file or ref.module
                raise ConfigError(f"`class_name` {ref.class_name}: {shown} has no `{ref.class_path}`; define the "
                                  f"class there or fix the name{place_suffix(place)}")
        if not isinstance(target, type):
            raise ConfigError(f"`class_name` {ref.class_name} is a {type(target).__name__}, not a class"
                              f"{place_suffix(place)}")
        self._classes[ref.class_name] = target
        return target

    def _gate(self, ref: ClassRef, what: str, place: str | None) -> None:
        if self.allowed:
            return
        file = ref.file or os.path.join(ref.root or "", *ref.module.split(".")) + ".py"
        raise ConfigError(f"the {what} `{ref.class_name}` would run the Python file {file}, shipped with the "
                          f"manifest{place_suffix(place)}; running code that comes with a manifest is your "
                          f"choice: {HOW_TO_ALLOW}")

    def _module(self, ref: ClassRef, what: str, place: str | None) -> ModuleType:
        if ref.origin == "beside-manifest" and ref.file is None:
            raise ConfigError(f"`class_name` {ref.class_name} points to components.py beside the manifest, and "
                              f"there is none in {ref.root}; add it{place_suffix(place)}")
        if ref.origin == "package-folder" and ref.file is None:
            raise ConfigError(f"`class_name` {ref.class_name}: no module `{ref.module}` in the package folder "
                              f"{ref.root}{place_suffix(place)}")
        shown = ref.file or f"module `{ref.module}`"
        try:
            if ref.origin == "beside-manifest":
                assert ref.file is not None
                return self._file_module(ref.module, ref.file)
            if ref.origin == "package-folder":
                return self._package_module(ref)
            return importlib.import_module(ref.module)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if ref.origin == "installed" and (ref.module == missing or ref.module.startswith(missing + ".")):
                raise ConfigError(f"`class_name` {ref.class_name}: no module `{missing}` is installed; install "
                                  f"it, or put the class in components.py beside the manifest"
                                  f"{place_suffix(place)}") from None
            top = ref.module.split(".")[0]
            if ref.origin == "package-folder" and (missing == top or missing.startswith(top + ".")):
                raise ConfigError(f"{shown} (for `{ref.class_name}`) imports `{missing}`, which is not in the "
                                  f"package folder {os.path.join(ref.root or '', top)}{place_suffix(place)}") from None
            raise missing_package_error(missing, f"{shown} (for `{ref.class_name}`)", place) from None
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"loading {shown} for the {what} `{ref.class_name}` failed{place_suffix(place)}:\n"
                              f"{user_traceback(exc, 0, lambda text: text)}") from exc

    def _file_module(self, name: str, file: str) -> ModuleType:
        fingerprint = file + ":" + _fingerprint_file(file)
        module = sys.modules.get(name)
        if module is not None and _FINGERPRINTS.get(name) == fingerprint:
            return module
        _purge(name)
        module = _exec_file(name, file)
        _FINGERPRINTS[name] = fingerprint
        _alias(module)
        return module

    def _package_module(self, ref: ClassRef) -> ModuleType:
        assert ref.root is not None
        top = ref.module.split(".")[0]
        folder = os.path.join(ref.root, top)
        fingerprint = folder + ":" + _fingerprint_folder(folder)
        if _FINGERPRINTS.get(top) != fingerprint or top not in sys.modules:
            _purge(top)
            spec = importlib.machinery.ModuleSpec(top, None, is_package=True)
            spec.submodule_search_locations = [folder]
            sys.modules[top] = importlib.util.module_from_spec(spec)  # a bare package: __init__.py not run
            _FINGERPRINTS[top] = fingerprint
        if ref.module == top:  # the class is in the package's __init__.py: run it now
            package = sys.modules[top]
            if getattr(package, "__file__", None) is None:
                package = _exec_file(top, os.path.join(folder, "__init__.py"), [folder])
            return package
        return importlib.import_module(ref.module)

    def _record(self, ref: ClassRef) -> None:
        """Keep the text of the shipped files now loaded (a package's modules imported along too)."""
        assert ref.root is not None and self.manifest_dir is not None
        base = os.path.dirname(self.manifest_dir)
        if ref.origin == "beside-manifest":
            files = [ref.file] if ref.file else []
        else:
            top = ref.module.split(".")[0]
            folder = os.path.join(ref.root, top) + os.sep
            found = [getattr(m, "__file__", None) for k, m in list(sys.modules.items())
                     if k == top or k.startswith(top + ".")]
            files = [f for f in found if f and f.startswith(folder)]  # the bare package has no file
        for file in files:
            assert file is not None
            relative = os.path.relpath(file, base)
            if relative not in self._shipped:
                with open(file, encoding="utf-8") as handle:
                    self._shipped[relative] = handle.read()


def materialize(files: Mapping[str, str], manifest_folder: str) -> str:
    """Write shipped ``files`` (relative path -> text) under a per-process temporary folder keyed by their hash.

    Returns the folder that stands for the manifest's folder (named
    ``manifest_folder``, as on the driver), so a package folder keeps its name
    (``<tmp>/source_shop/...``). Written once per content; safe to call again.
    """
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    root = os.path.join(tempfile.gettempdir(), f"manifest-custom-{os.getpid()}-{digest.hexdigest()[:16]}")
    for relative, text in files.items():
        path = os.path.normpath(os.path.join(root, relative))
        if not path.startswith(root + os.sep):
            raise ConfigError(f"a shipped file's path {relative!r} leaves its folder")
        if not os.path.isfile(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            partial = f"{path}.{threading.get_ident()}.tmp"
            with open(partial, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(partial, path)
    return os.path.join(root, manifest_folder)
