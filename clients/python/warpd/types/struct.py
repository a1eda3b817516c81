"""``@wp.struct``: user-defined structures of value types.

    @wp.struct
    class Particle:
        pos: wp.vec3
        mass: wp.float16
        inv_inertia: wp.mat33d

    p = Particle()            # every member zero
    p.mass = 2.0              # converted to the member's type on assignment
    wp.launch(k, dim=1, inputs=[p])
    a = wp.zeros(10, dtype=Particle)
    a.numpy()                 # a NumPy structured array, fields as declared

Members are scalars, vectors, matrices, quaternions, transformations or other
structs, laid out in order with C alignment (each member aligned to its
scalar size, the struct to its largest member's alignment), exactly as the
daemon lays them out (common/types/type.cc), so kernel arguments and array
elements are the NumPy record's bytes. Array members (``a: wp.array(dtype=
wp.vec3)``) hold a warpd array or None; in kernel arguments their 64-byte
slot carries the array's handle, which the daemon resolves in the launching
session and replaces by the array's descriptor. Arrays of such structs live in
daemon-private memory: they are made with their contents in one request (the
handles bound there), written by copies, fills and kernels, never uploaded
into or mapped; read back, their array members are None.

As in Warp, member defaults written in the class body are ignored (members
start at zero); unlike Warp, ``Particle(mass=2.0)`` may set members by keyword.
On the wire a struct type is given inline with a name unique to its
definition ("Particle_1a2b3c4d", see ``_ir_name``).
"""

from __future__ import annotations

import hashlib
import numbers
import re
import sys

import numpy as np

from ..v1 import ir_pb2
from .family import Value
from .scalar import _Scalar, convert, scalar_type

_REGISTRY: dict = {}  # IR name -> the newest struct class with that name
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Struct:
    """Base of the classes ``@wp.struct`` makes."""

    _wp_family_ = "struct"
    _wp_scalar_type_ = None
    _shape_ = ()
    _length_ = 0
    _wp_builtin_ = ""
    _wp_members_: tuple = ()  # ((name, type, offset), ...)
    _wp_struct_name_ = ""
    _wp_typeref_cached_ = None
    _wp_holds_array_ = False

    __slots__ = ("_values",)

    def __init__(self, **kwargs):
        object.__setattr__(self, "_values", {m: _zero(t) for m, t, _ in self._wp_members_})
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"struct {type(self).__name__} has no member '{name}' (members: "
                                 f"{', '.join(m for m, _, _ in self._wp_members_)})")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------ protocol

    @classmethod
    def _wp_typeref_(cls) -> ir_pb2.TypeRef:
        out = ir_pb2.TypeRef()
        out.CopyFrom(cls._wp_typeref_cached_)
        return out

    @classmethod
    def _wp_storage_(cls, value, wrap=False, what=None):
        if not (isinstance(value, Struct) and type(value)._wp_struct_name_ == cls._wp_struct_name_):
            got = type(value).__name__
            msg = f"got {got}"
            if isinstance(value, Struct):
                msg += " (a different struct definition)"
            raise TypeError(f"{what} expects {cls.__name__}, {msg}" if what else msg)
        return tuple(_member_storage(t, value._values[m]) for m, t, _ in cls._wp_members_)

    @classmethod
    def _wp_from_storage_(cls, raw):
        s = cls.__new__(cls)
        values = {}
        for m, t, _ in cls._wp_members_:
            field = raw[m]
            values[m] = t._wp_from_storage_(field)
        object.__setattr__(s, "_values", values)
        return s

    @classmethod
    def _wp_components_(cls, value):
        raise TypeError(f"struct {cls.__name__} values cannot be kernel constants; pass them as "
                        f"kernel arguments")

    @classmethod
    def _wp_fill_ctor_(cls, call, span):
        # S() in a kernel: the daemon's struct(dtype=S), a zero-initialized value.
        call.kind = ir_pb2.CALLEE_BUILTIN
        call.callee = "struct"
        k = call.keywords.add(name="dtype")
        k.value.span.CopyFrom(span)
        k.value.type_value.CopyFrom(cls._wp_typeref_())

    @classmethod
    def numpy_dtype(cls) -> dict:
        """The NumPy structured dtype of one element (C offsets and padding), spelled as
        Warp spells it: a dict of names, formats, offsets and itemsize (np.dtype() of it
        is the dtype of ``a.numpy()`` for an array of this struct)."""
        dt = cls._wp_np_dtype_
        return {"names": list(dt.names), "formats": [dt.fields[n][0] for n in dt.names],
                "offsets": [dt.fields[n][1] for n in dt.names], "itemsize": dt.itemsize}

    def numpy_value(self) -> tuple:
        """This value as a NumPy record's items (Warp's numpy_value): a tuple of the members,
        vectors and matrices as lists, nested structs as tuples. An array member's slot holds
        the array's handle then zeros, as ``a.numpy()`` shows it for an array of this struct:
        Warp's slot holds the array's descriptor, whose pointers in warpd live in the daemon
        and never reach a client (so a record filled with this value reads back equal to it)."""
        def items(rec):
            if rec.dtype.names is None:
                return rec.tolist()
            return tuple(items(rec[n]) for n in rec.dtype.names)

        return items(_record(type(self), self))

    # ------------------------------------------------------------ values

    def __eq__(self, other):
        if not isinstance(other, Struct) or type(other)._wp_struct_name_ != self._wp_struct_name_:
            return NotImplemented
        return all(_member_eq(self._values[m], other._values[m]) for m, _, _ in self._wp_members_)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    # Hashable by identity, as Warp's struct instances (a wp.Tape keys its
    # gradients by them); equal values in distinct instances are distinct keys.
    __hash__ = object.__hash__

    def __copy__(self):
        s = type(self).__new__(type(self))
        object.__setattr__(s, "_values", {m: _member_value(t, self._values[m], m)
                                          for m, t, _ in self._wp_members_})
        return s

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __repr__(self):
        inner = ", ".join(f"{m}={self._values[m]!r}" for m, _, _ in self._wp_members_)
        return f"{type(self).__name__}({inner})"


def _record(cls, value):
    rec = np.zeros((), dtype=cls._wp_np_dtype_)
    rec[()] = cls._wp_storage_(value)
    return rec


class ArrayMember:
    """The type of an array member of a struct: one class per array type."""

    _wp_size_ = 64  # the array descriptor (common/abi, docs/launch_abi.md)
    _wp_align_ = 8
    _wp_np_dtype_ = np.dtype((np.uint64, (8,)))
    _wp_tr_ = None
    _wp_dtype_ = None
    _wp_ndim_ = 1
    _wp_indexed_ = False

    @classmethod
    def _wp_typeref_(cls):
        out = ir_pb2.TypeRef()
        out.CopyFrom(cls._wp_tr_)
        return out

    @classmethod
    def check(cls, value, what):
        if value is None:
            return None
        from . import canonical_dtype
        if cls._wp_indexed_:
            from ..indexedarray import indexedarray
            kind = "indexedarray"
            live = isinstance(value, indexedarray) and value.data is not None
        else:
            kind = "array"
            live = getattr(value, "_wp_array_", False) and getattr(value, "handle", None) is not None
        if not live:
            noun = "indexed array" if cls._wp_indexed_ else "array"
            raise TypeError(f"{what} expects a Warp {noun}, got {type(value).__name__} (assign a warpd "
                            f"{kind}, or None to empty it)")
        # Warp 1.19's wording, naming the field.
        field = what.rsplit(".", 1)[-1]
        if canonical_dtype(value.dtype) is not cls._wp_dtype_:
            raise TypeError(f"Struct field '{field}' expects dtype {getattr(cls._wp_dtype_, '__name__', cls._wp_dtype_)}, "
                            f"got {getattr(value.dtype, '__name__', value.dtype)} ({what})")
        if value.ndim != cls._wp_ndim_:
            raise TypeError(f"Struct field '{field}' expects an array with {cls._wp_ndim_} dimension(s), got "
                            f"{value.ndim} dimension(s) ({what})")
        return value

    @classmethod
    def _wp_from_storage_(cls, raw):
        # The daemon never shows a descriptor: read back, a member names its array by
        # the handle this client knows it by (0: none, or an array freed here since).
        from ..array import LIVE
        words = np.asarray(raw, dtype=np.uint64).reshape(-1)
        data = LIVE.get(int(words[0])) if words[0] else None
        if data is None or not cls._wp_indexed_:
            return data
        from ..indexedarray import indexedarray
        indices = []
        for d in range(cls._wp_ndim_):
            h = int(words[8 + d])
            index = LIVE.get(h) if h else None
            if h and index is None:
                return None  # an index array freed here: the member cannot be shown
            indices.append(index)
        return indexedarray(data, indices)

    @classmethod
    def storage(cls, value):
        if cls._wp_indexed_:  # 112 bytes: data's handle, index arrays' at word 8 + d
            return value._wp_slot_() if value is not None else np.zeros(14, dtype=np.uint64)
        slot = np.zeros(8, dtype=np.uint64)
        if value is not None:
            slot[0] = value.handle
        return slot


_ARRAY_MEMBERS: dict = {}


def _array_member(ann):
    from . import canonical_dtype, to_typeref  # the package imports this module
    tr = to_typeref(ann)
    key = tr.SerializeToString(deterministic=True)
    cls = _ARRAY_MEMBERS.get(key)
    if cls is None:
        attrs = {"_wp_tr_": tr, "_wp_dtype_": canonical_dtype(ann.dtype), "_wp_ndim_": ann.ndim}
        if tr.array.indexed:  # wp::indexedarray_t: 112 bytes
            attrs.update(_wp_indexed_=True, _wp_size_=112, _wp_np_dtype_=np.dtype((np.uint64, (14,))))
        cls = type("ArrayMember", (ArrayMember,), attrs)
        _ARRAY_MEMBERS[key] = cls
    return cls


def _zero(t):
    """A member's initial value: zero, as a Warp value (a scalar member reads wp.uint8(0)
    and so on, as in Warp)."""
    if issubclass(t, ArrayMember):
        return None
    if issubclass(t, Struct):
        return t()
    if issubclass(t, Value):
        return t._wp_wrap_(t._zeros())
    return t(t._wp_from_storage_(np.zeros((), dtype=t._np_dtype_)))


def _member_value(t, value, what):
    """`value` converted for a member of type t, as Warp 1.19 keeps it: a Warp scalar stays a
    Warp scalar of the member's type, a Python number stays a Python number (converted to
    the member's range); None empties an array member and zeroes a value member."""
    if issubclass(t, ArrayMember):
        return t.check(value, what)
    if issubclass(t, Struct):
        if not (isinstance(value, Struct) and type(value)._wp_struct_name_ == t._wp_struct_name_):
            raise TypeError(f"{what} expects {t.__name__}, got {type(value).__name__}")
        return value.__copy__()
    if issubclass(t, Value):
        if value is None:
            return _zero(t)
        if isinstance(value, (numbers.Number, np.number, np.bool_, _Scalar)):
            raise TypeError(f"Struct field '{what.rsplit('.', 1)[-1]}' expects {t._wp_type_name_} but got a "
                            f"single value ({what}: construct it explicitly, e.g. {t._wp_type_name_}(...))")
        return t._wp_wrap_(t._wp_storage_(value, wrap=True, what=what))
    if value is None:
        return _zero(t)
    converted = convert(t, value, wrap=True, what=what)
    return t(converted) if isinstance(value, _Scalar) else converted


def _member_storage(t, v):
    if issubclass(t, ArrayMember):
        return t.storage(v)
    if issubclass(t, Struct):
        return t._wp_storage_(v)
    if issubclass(t, Value):
        return t._wp_scalar_type_._wp_encode_(v._v)  # bfloat16 components: bits
    return t._wp_encode_(v.value if isinstance(v, _Scalar) else v)


def _member_property(name, t, owner):
    def get(self):
        return self._values[name]

    def set_(self, value):
        self._values[name] = _member_value(t, value, f"{owner}.{name}")

    return property(get, set_)


def _member_eq(a, b):
    if a is None or b is None or getattr(a, "_wp_array_", False):
        return a is b
    return bool(a == b)


def _member_type(owner, name, ann):
    st = scalar_type(ann)
    if st is not None:
        return st
    if _is_struct_class(ann) and getattr(ann, "_wp_unusable_", None):
        raise TypeError(f"struct {owner} member '{name}' has the type {ann.__name__}, which "
                        f"cannot be used: {ann._wp_unusable_}")
    if _is_struct_class(ann) or (isinstance(ann, type) and issubclass(ann, Value)
                                 and ann._wp_scalar_type_ is not None):
        return ann
    if ((getattr(ann, "_wp_array_", False) or getattr(ann, "_wp_indexed_", False))
            and getattr(ann, "_wp_annotation_dtype_", None) is not None):
        return _array_member(ann)
    raise TypeError(f"struct {owner} member '{name}' has an unsupported type {ann!r}: expected a "
                    f"scalar, vector, matrix, quaternion, transformation or @wp.struct type")


def _is_struct_class(t) -> bool:
    return isinstance(t, type) and issubclass(t, Struct) and t is not Struct


def _annotations(cls) -> dict:
    anns = dict(cls.__dict__.get("__annotations__", {}))
    if not any(isinstance(v, str) for v in anns.values()):
        return anns
    module = sys.modules.get(cls.__module__)
    ns = dict(vars(module)) if module else {}
    ns.update(vars(cls))
    out = {}
    for k, v in anns.items():
        if isinstance(v, str):
            try:
                v = eval(v, ns)  # noqa: S307 - the user's own annotation
            except Exception as e:
                raise TypeError(f"struct {cls.__name__} member '{k}': cannot evaluate the "
                                f"annotation {v!r}: {e}") from None
        out[k] = v
    return out


def _ir_name(cls, members) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", cls.__name__.encode("ascii", "replace").decode())
    if not base or base[0].isdigit():
        base = "S_" + base
    h = hashlib.sha256(f"{cls.__module__}\0{cls.__qualname__}".encode())
    for name, t, _ in members:
        h.update(b"\0" + name.encode() + b"\0" + t._wp_typeref_().SerializeToString(deterministic=True))
    return f"{base[:100]}_{h.hexdigest()[:8]}"


class _Unusable:
    """A class attribute of an unusable struct: reading it raises the struct's error."""

    def __init__(self, message):
        self.message = message

    def __get__(self, obj, owner=None):
        raise TypeError(self.message)


_UNUSABLE_ATTRS = ("_wp_members_", "_wp_struct_name_", "_wp_np_dtype_", "_wp_size_", "_wp_align_",
                   "_wp_typeref_cached_", "_wp_holds_array_", "vars")


def _unusable_struct(cls, message):
    """A struct class whose definition failed: defining it only warns (as a kernel that fails
    type checking fails only its own launches), and every use that needs its layout raises
    `message`: an array of it, a member of another struct, a kernel parameter of its type, a
    value of it passed to a launch. A value made with no arguments is inert (no members)."""
    import warnings

    warnings.warn(message + " (the struct cannot be used)", stacklevel=3)
    attrs = {k: _Unusable(message) for k in _UNUSABLE_ATTRS}

    def __init__(self, **kwargs):
        if kwargs:
            raise TypeError(message)
        object.__setattr__(self, "_values", {})

    attrs.update({"__slots__": (), "__init__": __init__, "__module__": cls.__module__,
                  "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                  "_wp_type_name_": cls.__name__, "_wp_unusable_": message, "cls": cls})
    return type(cls.__name__, (Struct,), attrs)


def struct(cls):
    """Decorator: a class of annotated members becomes a struct type."""
    if not isinstance(cls, type):
        raise TypeError(f"@wp.struct decorates a class, got {type(cls).__name__}")
    if any(_is_struct_class(b) for b in cls.__mro__[1:]):
        raise RuntimeError(f"struct {cls.__name__} derives from a struct: Warp structs must be defined as "
                           f"base classes")
    anns = _annotations(cls)
    members, offset, align = [], 0, 1
    formats, names, offsets = [], [], []
    for name, ann in anns.items():
        if not _IDENT.match(name) or name.startswith("_wp_") or name == "_values":
            raise TypeError(f"struct {cls.__name__} member '{name}': names must be ASCII "
                            f"identifiers, not starting with _wp_")
        try:
            t = _member_type(cls.__name__, name, ann)
        except Exception as e:  # noqa: BLE001 - any failure of the annotation is the struct's
            return _unusable_struct(cls, f"struct {cls.__name__} member '{name}': {e}"
                                    if not str(e).startswith(f"struct {cls.__name__} ") else str(e))
        a = t._wp_align_
        offset = (offset + a - 1) // a * a
        members.append((name, t, offset))
        names.append(name)
        formats.append(t._wp_np_dtype_)
        offsets.append(offset)
        offset += t._wp_size_
        align = max(align, a)
    # An empty struct takes one byte, as in C++ and Warp (ctypes).
    size = max((offset + align - 1) // align * align, 1)
    np_dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})
    ir_name = _ir_name(cls, members)

    attrs = {k: v for k, v in cls.__dict__.items()
             if k not in anns and k not in ("__dict__", "__weakref__", "__annotations__")}
    attrs.update({
        "__slots__": (), "__module__": cls.__module__, "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__, "_wp_members_": tuple(members), "_wp_struct_name_": ir_name,
        "_wp_np_dtype_": np_dtype, "_wp_size_": size, "_wp_align_": align,
        "_wp_type_name_": cls.__name__,
        "_wp_holds_array_": any(issubclass(t, ArrayMember) or getattr(t, "_wp_holds_array_", False)
                                for _, t, _ in members),
    })
    # Warp's class attributes, unless a member has the name.
    attrs.setdefault("cls", cls)
    attrs.setdefault("vars", {name: t for name, t, _ in members})
    for name, t, _ in members:
        attrs[name] = _member_property(name, t, cls.__name__)
    # Values are instances of the class the user wrote too (Warp's `isinstance(s, S.cls)`).
    new = type(cls.__name__, (Struct, cls) if cls.__bases__ == (object,) else (Struct,), attrs)
    tr = ir_pb2.TypeRef()
    st = tr.struct_type
    st.name = ir_name
    # Warp's messages name a struct by its module-qualified class name (types.type_repr).
    qualified = f"{cls.__module__}.{cls.__qualname__}"
    st.display_name = qualified if len(qualified) <= 256 else cls.__name__[:256]
    for name, t, _ in members:
        st.members.add(name=name, type=t._wp_typeref_())
    new._wp_typeref_cached_ = tr
    _REGISTRY[ir_name] = new
    return new


def struct_from_name(ir_name: str):
    """The struct class registered under an IR name; None if unknown."""
    return _REGISTRY.get(ir_name)


def is_struct_type(t) -> bool:
    return _is_struct_class(t)


def holds_array(t) -> bool:
    """Whether values of type `t` hold an array at any depth (a struct with an array member)."""
    return bool(getattr(t, "_wp_holds_array_", False))

