"""What making the models' classes costs (validate-manifest's cold start).

pydantic reads every field's annotation when a class is made. A string annotation (``from __future__ import
annotations``, or a quoted name) is compiled and evaluated there, and again when the validator is built if a
name was not defined yet; an annotation that is already a type costs neither. Only the names a cycle between
model modules leaves undefined when a class is made stay quoted.
"""

from __future__ import annotations

import typing

from framework.models import Model

# 21 of 527 fields when written: the back-references, names of models in a module above the field's own
# (framework/models/back_references.py)
MOST_DEFERRED = 0.1


def _models() -> set[type[Model]]:
    found: set[type[Model]] = set()
    todo = [Model]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def _deferred(annotation: object) -> bool:
    if isinstance(annotation, (str, typing.ForwardRef)):
        return True
    if typing.get_origin(annotation) is typing.Literal:  # its strings are values
        return False
    return any(_deferred(arg) for arg in typing.get_args(annotation))


def test_field_annotations_are_types_when_the_classes_are_made():
    fields = deferred = 0
    for model in _models():
        for name, annotation in vars(model).get("__annotations__", {}).items():
            if name in model.model_fields:
                fields += 1
                deferred += _deferred(annotation)
    assert fields > 400
    assert deferred <= MOST_DEFERRED * fields, f"{deferred} of {fields} field annotations are strings"


def test_every_deferred_name_resolves():
    for model in _models():
        assert typing.get_type_hints(model, include_extras=True)  # raises NameError on a name left undefined
