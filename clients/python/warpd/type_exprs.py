"""Type expressions in kernels that the client evaluates: types known from annotations.

Warp programs compute with types inside kernels: ``type(a)`` of a parameter,
``a.dtype`` of an array parameter, ``T.dtype`` / ``T.length`` of a value type,
``wp.types.vector(length=2, dtype=type(a))``, a local bound to such a type, and a
type called as a constructor. A generic kernel is instantiated here, per argument
types, with concrete annotations, so these expressions have values before
translation: the front end (frontend.py) evaluates them and sends their results,
types as ``type_value``s and numbers as constants. Types of other expressions
(``type(a[i])(...)``) are the daemon's business (its ``construct_like``).
"""

from __future__ import annotations

from . import types as wt

MISSING = object()

# Python-scope type factories a kernel may call with type arguments (Warp's
# wp.types.vector(...), ...): the results are types.
FACTORIES = frozenset({wt.vector, wt.matrix, wt.quaternion, wt.transformation})


def _is_value_type(t) -> bool:
    """Warp's type_is_value: a scalar, vector, matrix, quaternion or transformation type."""
    return isinstance(t, type) and (wt.is_scalar_type(t) or issubclass(t, wt.Value))


def attribute(t, attr: str):
    """Warp 1.19's attribute of a type in kernels (codegen's resolve_type_attribute): for a
    value type, ``dtype`` is its scalar type and ``length`` its number of scalars; anything
    else is the Python attribute (an array annotation's ``dtype``, ``ndim``). MISSING if
    there is none."""
    if _is_value_type(t):
        if attr == "dtype":
            return wt.canonical_dtype(t) if wt.is_scalar_type(t) else t._wp_scalar_type_
        if attr == "length":
            return 1 if wt.is_scalar_type(t) else int(wt.type_length(t))
    if attr.startswith("_"):
        return MISSING  # private attributes are no part of the language
    value = getattr(t, attr, MISSING)
    return MISSING if callable(value) and not isinstance(value, type) else value


def parameter_type(annotation):
    """The compile-time type of a parameter annotated `annotation`: a value type (canonical:
    float -> float32), an array annotation, or MISSING (a generic or unknown annotation)."""
    if wt.is_generic(annotation):
        return MISSING
    if getattr(annotation, "_wp_array_", False) and getattr(annotation, "_wp_annotation_dtype_", None) is not None:
        return annotation
    if wt.is_value_type(annotation):
        return wt.canonical_dtype(annotation)
    return MISSING


def is_type_value(v) -> bool:
    return isinstance(v, type) or bool(getattr(v, "_wp_array_", False))
