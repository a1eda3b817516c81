"""@wp.struct: C layout, Python-scope instances, kernel arguments, arrays of structs.

Layouts are checked against offsets computed by hand with C's rules (each
member aligned to its scalar size, the struct to its widest member); real
Warp 1.19 gives the same offsets for `Odd` (0, 8, 16, 20, 32, 48, 80, 112,
128, 130; size 136). Values travel through kernels and come back as NumPy
structured arrays, as in Warp.
"""

import copy

import numpy as np
import pytest

import warpd as wp
from warpd.v1 import ir_pb2, runtime_pb2


@wp.struct
class Inner:
    h: wp.float16
    d: wp.float64


@wp.struct
class Odd:
    a: wp.float16
    b: wp.float64
    c: wp.int8
    v: wp.vec3
    m: wp.mat22
    q: wp.quatd
    t: wp.transform
    inner: Inner
    flag: wp.bool
    u: wp.uint16


@wp.struct
class Particle:
    pos: wp.vec3
    vel: wp.vec3
    age: int


ODD_OFFSETS = [0, 8, 16, 20, 32, 48, 80, 112, 128, 130]
ODD_SIZE = 136


def sample_odd(k=1.0):
    s = Odd()
    s.a = 1.5 * k
    s.b = 2.25 * k
    s.c = -3
    s.v = wp.vec3(1.0, 2.0, 3.0) * k
    s.m = [[1, 2], [3, 4]]
    s.q = wp.quatd(0.0, 0.6, 0.0, 0.8)
    s.t = wp.transform(wp.vec3(4.0, 5.0, 6.0), wp.quat(0.0, 0.0, 0.0, 1.0))
    s.inner.h = 0.5
    s.inner.d = 8.0 * k
    s.flag = True
    s.u = 65535
    return s


# ------------------------------------------------------------------ kernels


@wp.func
def advance(p: Particle, dt: float) -> Particle:
    q = p
    q.pos = q.pos + q.vel * dt
    q.age = q.age + 1
    return q


@wp.kernel
def odd_io(s: Odd, out: wp.array(dtype=Odd), sums: wp.array(dtype=wp.float64),
           pos: wp.array(dtype=wp.vec3), inner: wp.array(dtype=Inner)):
    i = wp.tid()
    x = s
    x.a = x.a + wp.float16(1.0)
    x.b = x.b * wp.float64(2.0)
    x.c = x.c + wp.int8(i)
    x.v = x.v + wp.vec3(1.0, 1.0, 1.0)
    x.inner.d = x.inner.d + wp.float64(i)
    x.flag = not x.flag
    out[i] = x
    sums[i] = s.b + wp.float64(s.inner.h) + s.q.w + wp.float64(s.m[1, 0] + s.v[2])
    pos[i] = wp.transform_get_translation(s.t)
    inner[i] = s.inner


@wp.kernel
def step(particles: wp.array(dtype=Particle), dt: float, ages: wp.array(dtype=int)):
    i = wp.tid()
    particles[i] = advance(particles[i], dt)
    ages[i] = particles[i].age


# ------------------------------------------------------------ Python scope


def test_layout_matches_c_rules():
    dt = np.dtype(Odd.numpy_dtype())
    assert dt.itemsize == ODD_SIZE and Odd._wp_size_ == ODD_SIZE and Odd._wp_align_ == 8
    assert [dt.fields[n][1] for n in dt.names] == ODD_OFFSETS
    assert dt.names == ("a", "b", "c", "v", "m", "q", "t", "inner", "flag", "u")
    assert dt["v"].shape == (3,) and dt["m"].shape == (2, 2) and dt["t"].shape == (7,)
    assert dt["inner"].names == ("h", "d") and dt["inner"].itemsize == 16
    tr = wp.types.to_typeref(Odd)
    assert tr.struct_type.display_name == f"{__name__}.Odd" and tr.struct_type.name.startswith("Odd_")
    members = {m.name: m.type for m in tr.struct_type.members}
    assert members["q"].quat.dtype == ir_pb2.SCALAR_FLOAT64
    assert members["inner"].struct_type.display_name == f"{__name__}.Inner"
    assert members["m"].matrix == ir_pb2.MatrixType(rows=2, cols=2, dtype=ir_pb2.SCALAR_FLOAT32)
    # Bytes of one packed value: members at their offsets, padding zero.
    raw = wp.types.pack(Odd, sample_odd())
    assert len(raw) == ODD_SIZE
    assert raw[2:8] == b"\0" * 6 and raw[17:20] == b"\0" * 3
    assert np.frombuffer(raw[8:16], np.float64)[0] == 2.25
    assert np.frombuffer(raw[130:132], np.uint16)[0] == 65535


def test_instances_in_python_scope():
    s = Odd()
    # Every member starts at zero (transforms too: struct members are not identities, as in Warp).
    assert s.a == 0.0 and s.c == 0 and not s.flag and s.u == 0
    # As in Warp 1.19: scalar members start as Warp scalars of their type; a Warp scalar
    # assigned stays one, a Python number assigned stays a Python number.
    assert type(s.a) is wp.float16 and type(s.flag) is wp.bool and type(s.u) is wp.uint16
    s.u = wp.uint16(7)
    assert type(s.u) is wp.uint16 and int(s.u) == 7
    s.u = 9
    assert type(s.u) is int and s.u == 9
    s.u = None  # zeroes it, as Warp does
    assert type(s.u) is wp.uint16 and s.u == 0
    assert s.v == [0, 0, 0] and type(s.v) is wp.vec3 and s.m == np.zeros((2, 2))
    assert s.t == [0] * 7 and s.q == [0] * 4 and s.inner == Inner()
    s.v = (1, 2, 3)  # sequences convert to the member's type
    assert type(s.v) is wp.vec3 and s.v == [1, 2, 3]
    s.v.x = 5  # members are live values
    assert s.v == [5, 2, 3]
    s.c = 300  # wraps as the stored int8 does (Warp stores 44 too)
    assert s.c == 44
    s.a = 1.1
    assert s.a == float(np.float16(1.1))
    inner = Inner(h=1.0, d=2.0)
    s.inner = inner
    inner.d = 99.0  # assignment copies
    assert s.inner.d == 2.0
    assert Odd(b=3.0, u=7) == Odd(u=7, b=3.0) and Odd(b=3.0) != Odd()
    t = copy.copy(sample_odd())
    assert t == sample_odd()
    assert repr(Inner(h=0.5, d=2.0)) == "Inner(h=0.5, d=2.0)"
    with pytest.raises(AttributeError, match="struct Odd has no member 'zz'.*members: a, b, c"):
        s.zz = 1
    with pytest.raises(TypeError, match=r"Odd.c expects int8, got float 1.5"):
        s.c = 1.5
    with pytest.raises(TypeError, match=r"Struct field 'v' expects vec3f but got a single value \(Odd.v"):
        s.v = 1.0
    with pytest.raises(TypeError, match=r"Odd.inner expects Inner, got int"):
        s.inner = 3
    with pytest.raises(TypeError, match=r"Odd.m expects mat22f, got a sequence of shape \(3,\); "
                                        r"expected \(2, 2\)"):
        s.m = [1, 2, 3]


@wp.struct
class EmptyS:
    pass


@wp.struct
class HoldsEmpty:
    a: EmptyS
    b: EmptyS
    z: int


@wp.kernel(module="unique")
def reads_empty(e: EmptyS, h: HoldsEmpty, hs: wp.array(dtype=HoldsEmpty), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = h.z + hs[i].z
    x = HoldsEmpty()
    x.z = 5
    hs[i] = x


def test_empty_structs_take_a_byte_as_in_warp(wp):
    # Warp (ctypes) and C++ give an empty struct one byte; members after it keep their alignment.
    assert np.dtype(EmptyS.numpy_dtype()).itemsize == 1
    assert np.dtype(HoldsEmpty.numpy_dtype()).itemsize == 8 and np.dtype(HoldsEmpty.numpy_dtype()).fields["z"][1] == 4
    h = HoldsEmpty()
    h.z = 40
    items = [HoldsEmpty(), HoldsEmpty()]
    items[0].z, items[1].z = 1, 2
    hs = wp.array(items, dtype=HoldsEmpty)
    out = wp.zeros(2, dtype=int)
    wp.launch(reads_empty, dim=2, inputs=[EmptyS(), h, hs, out])
    np.testing.assert_array_equal(out.numpy(), [41, 42])
    np.testing.assert_array_equal(hs.numpy()["z"], [5, 5])


def test_unsupported_struct_definitions(wp):
    # Defining a struct with a member type warpd cannot lay out only warns, naming the
    # member; every use that needs its layout raises that error (so a module holding
    # such a struct still imports and its other kernels run, as with broken kernels).
    with pytest.warns(UserWarning, match="struct Bad member 'x' has an unsupported type"):
        @wp.struct
        class Bad:
            f: float
            x: str
    with pytest.warns(UserWarning, match="member 'b' has the type Bad, which cannot be used"):
        @wp.struct
        class HoldsBad:
            b: Bad
    for use in (lambda: wp.zeros(2, dtype=Bad), lambda: Bad(f=1.0), lambda: HoldsBad(b=Bad()),
                lambda: wp.types.struct_from_name(Bad._wp_struct_name_)):
        with pytest.raises(TypeError, match="member 'x' has an unsupported type"):
            use()

    @wp.kernel(module="unique")
    def takes_bad(s: HoldsBad, out: wp.array(dtype=float)):
        out[0] = 1.0

    out = wp.zeros(1, dtype=float)
    with pytest.raises(wp.errors.CompileError, match="parameter 's'.*member 'x' has an unsupported type"):
        wp.launch(takes_bad, dim=1, inputs=[HoldsBad(), out])
    # The client and daemon keep working.
    @wp.kernel(module="unique")
    def fine(out: wp.array(dtype=float)):
        out[0] = 2.0

    wp.launch(fine, dim=1, inputs=[out])
    assert out.numpy()[0] == 2.0


# ------------------------------------------------------------------- arrays


def test_arrays_of_structs_read_back_as_structured_arrays(wp):
    z = wp.zeros(3, dtype=Odd)
    zn = z.numpy()
    assert zn.dtype == np.dtype(Odd.numpy_dtype()) and zn.shape == (3,)
    assert zn.tobytes() == b"\0" * 3 * ODD_SIZE
    a = wp.array([sample_odd(), Odd(), sample_odd(2.0)], dtype=Odd)
    n = a.numpy()
    np.testing.assert_array_equal(n["b"], [2.25, 0.0, 4.5])
    np.testing.assert_array_equal(n["v"][2], [2, 4, 6])
    np.testing.assert_array_equal(n["m"][0], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(n["inner"]["d"], [8.0, 0.0, 16.0])
    np.testing.assert_array_equal(n["u"], [65535, 0, 65535])
    assert n["flag"].tolist() == [True, False, True]
    items = a.list()
    assert items[0] == sample_odd() and items[1] == Odd() and type(items[2]) is Odd
    # A structured array goes in and out unchanged; 2-D arrays of structs too.
    b = wp.array(n, dtype=Odd)
    assert b.numpy().tobytes() == n.tobytes()
    c = wp.array([[Odd(), sample_odd()], [sample_odd(2.0), Odd()]], dtype=Odd)
    assert c.shape == (2, 2) and c.numpy()[1, 0]["b"] == 4.5
    f = wp.full(2, sample_odd())
    assert f.dtype is Odd and f.numpy()[1]["inner"]["h"] == 0.5
    f.fill_(Odd(b=7.0))
    np.testing.assert_array_equal(f.numpy()["b"], [7.0, 7.0])
    f.zero_()
    assert f.numpy().tobytes() == bytes(2 * ODD_SIZE)
    assert "dtype=Odd" in repr(f)
    with pytest.raises(TypeError, match="element 1 of the data: expected Odd, got Inner"):
        wp.array([Odd(), Inner()], dtype=Odd)
    with pytest.raises(TypeError, match="Odd"):
        wp.zeros(2, dtype=Odd).fill_(3.0)


def test_indexed_arrays_of_structs_fill_and_zero(wp):
    # Warp 1.19's test_indexedarray_fill_struct: fill_ writes the value into the
    # indexed elements only, and zero_ clears them (a struct has no "0" value).
    data = wp.zeros((3, 2), dtype=Odd)
    rows = wp.array([2, 0], dtype=wp.int32)
    view = data[rows]
    view.fill_(sample_odd(2.0))
    want = np.zeros((3, 2), dtype=np.dtype(Odd.numpy_dtype()))
    want[[2, 0]] = sample_odd(2.0).numpy_value()
    np.testing.assert_array_equal(data.numpy(), want)
    np.testing.assert_array_equal(view.numpy(), want[[2, 0]])
    assert data.numpy()["b"].tolist() == [[4.5, 4.5], [0.0, 0.0], [4.5, 4.5]]
    data.fill_(sample_odd())
    view.zero_()
    want = np.zeros((3, 2), dtype=np.dtype(Odd.numpy_dtype()))
    want[1] = sample_odd().numpy_value()
    np.testing.assert_array_equal(data.numpy(), want)


def test_struct_array_with_array_member_starts_empty(raw):
    # Such arrays exist (test_struct_arrays.py), but their element bytes never come from
    # a client as they are: even an uninitialized one (EMPTY, which may reuse freed
    # memory) starts with empty descriptors, and reads back as zeros.
    stub, session = raw
    tr = ir_pb2.TypeRef()
    st = tr.struct_type
    st.name = "HoldsArray_1"
    st.display_name = "HoldsArray"
    st.members.add(name="n", type=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_INT32))
    st.members.add(name="a", type=ir_pb2.TypeRef(array=ir_pb2.ArrayType(
        dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32), ndim=1)))
    for _ in range(2):  # the second may reuse the first's freed memory
        h = stub.CreateArray(runtime_pb2.CreateArrayRequest(session=session, device="cpu", dtype=tr, shape=[4],
                                                            init=runtime_pb2.ARRAY_INIT_EMPTY)).handle
        data = b"".join(c.data for c in stub.Download(runtime_pb2.DownloadRequest(session=session, handle=h)))
        assert len(data) == 4 * 72 and not any(data)
        stub.FreeArray(runtime_pb2.FreeArrayRequest(session=session, handle=h))


# ------------------------------------------------------------------ kernels


def test_struct_argument_round_trip(wp):
    n = 3
    s = sample_odd()
    out = wp.zeros(n, dtype=Odd)
    sums = wp.zeros(n, dtype=wp.float64)
    pos = wp.zeros(n, dtype=wp.vec3)
    inner = wp.zeros(n, dtype=Inner)
    wp.launch(odd_io, dim=n, inputs=[s, out, sums, pos, inner])
    r = out.numpy()
    np.testing.assert_array_equal(r["a"], [2.5] * n)
    np.testing.assert_array_equal(r["b"], [4.5] * n)
    np.testing.assert_array_equal(r["c"], [-3, -2, -1])
    np.testing.assert_array_equal(r["v"], [[2, 3, 4]] * n)
    np.testing.assert_array_equal(r["m"], [[[1, 2], [3, 4]]] * n)
    np.testing.assert_array_equal(r["q"], [[0, 0.6, 0, 0.8]] * n)
    np.testing.assert_array_equal(r["t"], [[4, 5, 6, 0, 0, 0, 1]] * n)
    np.testing.assert_array_equal(r["inner"]["h"], [0.5] * n)
    np.testing.assert_array_equal(r["inner"]["d"], [8.0, 9.0, 10.0])
    assert r["flag"].tolist() == [False] * n
    np.testing.assert_array_equal(r["u"], [65535] * n)
    # b + inner.h + q.w + m[1, 0] + v[2] = 2.25 + 0.5 + 0.8 + 3 + 3
    np.testing.assert_allclose(sums.numpy(), [9.55] * n)
    np.testing.assert_array_equal(pos.numpy(), [[4, 5, 6]] * n)
    assert inner.list() == [Inner(h=0.5, d=8.0)] * n
    # The argument itself is unchanged on the host.
    assert s == sample_odd()


def test_struct_arrays_in_kernels(wp):
    ps = [Particle(pos=(0, 0, i), vel=(1, 2, 3), age=i) for i in range(4)]
    a = wp.array(ps, dtype=Particle)
    ages = wp.zeros(4, dtype=int)
    for _ in range(2):
        wp.launch(step, dim=4, inputs=[a, 0.5, ages])
    n = a.numpy()
    np.testing.assert_allclose(n["pos"], [[1, 2, 3 + i] for i in range(4)])
    np.testing.assert_array_equal(n["age"], [2, 3, 4, 5])
    np.testing.assert_array_equal(ages.numpy(), [2, 3, 4, 5])


def test_struct_argument_errors(wp):
    out = wp.zeros(1, dtype=Odd)
    rest = [wp.zeros(1, dtype=wp.float64), wp.zeros(1, dtype=wp.vec3), wp.zeros(1, dtype=Inner)]

    @wp.struct
    class Odd2:  # same members, another definition
        a: wp.float16

    with pytest.raises(TypeError, match=r"argument 's' of kernel 'odd_io' expects Odd, got Inner"):
        wp.launch(odd_io, dim=1, inputs=[Inner(), out] + rest)
    with pytest.raises(TypeError, match=r"argument 's' .* expects Odd, got Odd2 \(a different "
                                        r"struct definition\)"):
        wp.launch(odd_io, dim=1, inputs=[Odd2(), out] + rest)
    with pytest.raises(TypeError, match=r"argument 'out' .* expects array\(dtype=Odd, ndim=1\), "
                                        r"got an array of dtype=Inner"):
        wp.launch(odd_io, dim=1, inputs=[Odd(), wp.zeros(1, dtype=Inner)] + rest)


def test_structs_constructed_in_kernels_start_at_zero(wp):
    @wp.kernel(module="unique")
    def makes_struct(out: wp.array(dtype=Particle), src: wp.array(dtype=Particle)):
        i = wp.tid()
        p = Particle()
        q = Particle()
        p.age = i + 1
        q = src[i]
        out[2 * i] = p
        out[2 * i + 1] = q

    src_np = np.zeros(3, dtype=np.dtype(Particle.numpy_dtype()))
    src_np["age"] = [7, 8, 9]
    src = wp.array(src_np, dtype=Particle)
    out = wp.zeros(6, dtype=Particle)
    wp.launch(makes_struct, dim=3, inputs=[out, src])
    got = out.numpy()
    # Every member of a fresh struct is zero but the one assigned.
    for name in np.dtype(Particle.numpy_dtype()).names:
        col = got[name][0::2]
        if name == "age":
            np.testing.assert_array_equal(col, [1, 2, 3])
        else:
            assert not np.any(col), (name, col)
    np.testing.assert_array_equal(got["age"][1::2], [7, 8, 9])


# The Runtime Reference's struct example (seeds/003), as written.
@wp.struct
class MyStruct:

    param1: int
    param2: float
    param3: wp.array(dtype=wp.vec3)


@wp.kernel
def compute(args: MyStruct):

    tid = wp.tid()

    print(args.param1)
    print(args.param2)
    print(args.param3[tid])


@wp.kernel
def scale_member(args: MyStruct):
    tid = wp.tid()
    args.param3[tid] = args.param3[tid] * args.param2 + wp.vec3(float(args.param1), 0.0, 0.0)


def test_seed_struct_with_an_array_member(wp, capsys):
    # construct an instance of the struct in Python
    s = MyStruct()
    s.param1 = 10
    s.param2 = 2.5
    s.param3 = wp.zeros(shape=10, dtype=wp.vec3)

    # pass to our compute kernel
    wp.launch(compute, dim=10, inputs=[s])
    wp.synchronize()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 30
    assert lines[0::3] == ["10"] * 10 and lines[1::3] == ["2.5"] * 10
    assert all(l.split() == ["0", "0", "0"] for l in lines[2::3]), lines[2::3]

    # The member is the array itself: a kernel writes through it.
    pts = np.arange(30, dtype=np.float32).reshape(10, 3)
    s.param3 = wp.array(pts, dtype=wp.vec3)
    wp.launch(scale_member, dim=10, inputs=[s])
    np.testing.assert_allclose(s.param3.numpy(), pts * 2.5 + [10.0, 0.0, 0.0])


def test_array_members_are_checked(wp):
    s = MyStruct()
    # Warp 1.19's messages
    with pytest.raises(TypeError, match=r"Struct field 'param3' expects dtype vec3f, got float32"):
        s.param3 = wp.zeros(3, dtype=float)
    with pytest.raises(TypeError, match=r"Struct field 'param3' expects an array with 1 dimension\(s\), got 2"):
        s.param3 = wp.zeros((3, 2), dtype=wp.vec3)
    with pytest.raises(TypeError, match=r"param3 expects a Warp array, got list"):
        s.param3 = [1, 2, 3]
    with pytest.raises(TypeError, match=r"Struct field 'v' expects vec3f but got a single value"):
        Odd().v = 1.5
    v = Odd()
    v.v = (1, 2, 3)
    v.v = None  # None zeroes a value member
    assert v.v == [0, 0, 0]
    with pytest.raises(RuntimeError, match="Warp structs must be defined as base classes"):
        @wp.struct
        class Derived(MyStruct):
            extra: int
    assert isinstance(s, MyStruct.cls)  # values are instances of the class the user wrote
    # Without an array the member is empty: an access is an index error, never a stray pointer.
    with pytest.raises(wp.KernelError, match=r"out of bounds"):
        wp.launch(compute, dim=1, inputs=[MyStruct()])
        wp.synchronize()


def test_numpy_dtype_and_value_are_spelled_as_in_warp():
    # Warp 1.19: numpy_dtype() is a dict (names, formats, offsets, itemsize); numpy_value()
    # the record's items (vectors as lists).
    @wp.struct
    class NV:
        a: int
        b: wp.vec3

    d = NV.numpy_dtype()
    assert isinstance(d, dict) and d["names"] == ["a", "b"] and d["offsets"] == [0, 4] and d["itemsize"] == 16
    s = NV()
    s.a = 3
    s.b = wp.vec3(1.0, 2.0, 3.5)
    assert s.numpy_value() == (3, [1.0, 2.0, 3.5])
    rec = np.array([s.numpy_value()], dtype=np.dtype(d))
    assert rec["a"][0] == 3 and list(rec["b"][0]) == [1.0, 2.0, 3.5]
