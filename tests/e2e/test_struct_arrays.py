"""Arrays of structs whose members are arrays (the seed's MyStruct, Warp 1.19): made
zeroed or from struct values, read and written in kernels, assigned, filled and copied
from Python; their descriptors stay in the daemon (runtime/objects/array_members.h):
never uploaded into, mapped, persisted, viewed with another dtype or downloaded, and
the arrays they point to live as long as they may be read."""

import gc
import os

import grpc
import numpy as np
import pytest

import warpd as wpd
from warpd import context, local_map
from warpd.v1 import runtime_pb2

N = 4


@wpd.struct
class MyStruct:
    param1: int
    param2: float
    param3: wpd.array(dtype=wpd.vec3)


@wpd.struct
class Outer:
    scale: float
    inner: MyStruct


@wpd.kernel
def read_structs(args: wpd.array(dtype=MyStruct), out: wpd.array(dtype=float)):
    tid = wpd.tid()
    s = args[tid]
    total = float(s.param1) + s.param2
    for j in range(s.param3.shape[0]):
        total = total + s.param3[j][1]
    out[tid] = total


@wpd.kernel
def read_nested(args: wpd.array(dtype=Outer), out: wpd.array(dtype=float)):
    tid = wpd.tid()
    o = args[tid]
    out[tid] = o.scale * o.inner.param3[0][2]


@wpd.kernel
def write_through_member(args: wpd.array(dtype=MyStruct)):
    tid = wpd.tid()
    args[tid].param3[0] = wpd.vec3(float(tid), 7.0, 8.0)


@wpd.kernel
def copy_structs(src: wpd.array(dtype=MyStruct), dst: wpd.array(dtype=MyStruct)):
    tid = wpd.tid()
    dst[tid] = src[N - 1 - tid]


@wpd.kernel
def store_param(s: MyStruct, dst: wpd.array(dtype=MyStruct)):
    tid = wpd.tid()
    dst[tid] = s


def member_arrays(n=N):
    # Member i: i + 1 rows of (i, 10 i + j, 2 i).
    return [wpd.array(np.array([[i, 10 * i + j, 2 * i] for j in range(i + 1)], dtype=np.float32), dtype=wpd.vec3)
            for i in range(n)]


def expected(n=N):
    return np.array([i + 0.5 * i + sum(10 * i + j for j in range(i + 1)) for i in range(n)], dtype=np.float32)


def make_structs(members):
    out = []
    for i, m in enumerate(members):
        s = MyStruct()
        s.param1 = i
        s.param2 = 0.5 * i
        s.param3 = m
        out.append(s)
    return out


def run_read(a):
    out = wpd.zeros(a.shape[0], dtype=float)
    wpd.launch(read_structs, dim=a.shape[0], inputs=[a, out])
    return out.numpy()


def test_seed_forms_zeros_and_from_structs(wp):
    z = wp.zeros(shape=10, dtype=MyStruct)  # the seed's two forms
    np.testing.assert_array_equal(run_read(z), np.zeros(10, dtype=np.float32))
    a = wp.array([MyStruct(), MyStruct(), MyStruct()], dtype=MyStruct)
    np.testing.assert_array_equal(run_read(a), np.zeros(3, dtype=np.float32))
    b = wp.array(make_structs(member_arrays()), dtype=MyStruct)
    np.testing.assert_allclose(run_read(b), expected())


def test_members_outlive_their_client_objects(wp):
    members = member_arrays()
    a = wp.array(make_structs(members), dtype=MyStruct)
    del members
    gc.collect()
    wp.synchronize()
    np.testing.assert_allclose(run_read(a), expected())


def test_numpy_shows_handles_not_descriptors(wp):
    members = member_arrays()
    a = wp.array(make_structs(members), dtype=MyStruct)
    got = a.numpy()
    np.testing.assert_array_equal(got["param1"], np.arange(N))
    np.testing.assert_allclose(got["param2"], 0.5 * np.arange(N))
    # Each descriptor slot reads as the client writes it: its array's handle, then zeros.
    np.testing.assert_array_equal(got["param3"][:, 0], [m.handle for m in members])
    assert not got["param3"][:, 1:].any()
    # As in Warp, an element's array member is the array (here the very object).
    values = a.list()
    assert [v.param1 for v in values] == list(range(N))
    assert all(v.param3 is m for v, m in zip(values, members))
    # Elements a kernel copies into another array carry their members along.
    b = wp.zeros(N, dtype=MyStruct)
    wp.launch(copy_structs, dim=N, inputs=[a, b])
    assert all(v.param3 is m for v, m in zip(b.list(), reversed(members)))
    # An array this client let go of (its handle is gone) reads as None; the struct
    # array still keeps its memory for kernels.
    del members, values
    gc.collect()
    wp.synchronize()
    assert all(v.param3 is None for v in a.list()) and all(v.param3 is None for v in b.list())
    np.testing.assert_allclose(run_read(a), expected())


def test_kernels_write_through_members_and_store_whole_elements(wp):
    members = member_arrays()
    a = wp.array(make_structs(members), dtype=MyStruct)
    wp.launch(write_through_member, dim=N, inputs=[a])
    for i, m in enumerate(members):
        np.testing.assert_array_equal(m.numpy()[0], [i, 7.0, 8.0])
    dst = wp.zeros(N, dtype=MyStruct)
    wp.launch(copy_structs, dim=N, inputs=[a, dst])
    del a, members
    gc.collect()
    # dst's descriptors point to the members, which it now keeps alive.
    got = run_read(dst)
    want = [N - 1 - t + 0.5 * (N - 1 - t) + 7.0 + sum(10 * (N - 1 - t) + j for j in range(1, N - t))
            for t in range(N)]
    np.testing.assert_allclose(got, want)


def test_a_struct_argument_stored_into_elements(wp):
    m = wp.array(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32), dtype=wp.vec3)
    s = MyStruct()
    s.param1 = 3
    s.param2 = 0.25
    s.param3 = m
    dst = wp.zeros(N, dtype=MyStruct)
    wp.launch(store_param, dim=N, inputs=[s, dst])
    del s, m
    gc.collect()
    np.testing.assert_allclose(run_read(dst), np.full(N, 3 + 0.25 + 2 + 5, dtype=np.float32))


def test_assign_fill_and_copy_from_python(wp):
    a = wp.zeros(N, dtype=MyStruct)
    a.assign(make_structs(member_arrays()))
    np.testing.assert_allclose(run_read(a), expected())
    b = wp.zeros(N, dtype=MyStruct)
    wp.copy(b, a)
    del a
    gc.collect()
    np.testing.assert_allclose(run_read(b), expected())
    s = make_structs(member_arrays())[2]
    b.fill_(s)
    np.testing.assert_allclose(run_read(b), np.full(N, expected()[2]))
    # A view of it, on the element grid, reads the same elements.
    np.testing.assert_allclose(run_read(b[1:3]), np.full(2, expected()[2]))


@wpd.kernel
def bind_member(args: wpd.array(dtype=MyStruct), src: wpd.array(dtype=wpd.vec3)):
    tid = wpd.tid()
    args[tid].param3 = src  # an array member takes an array in a kernel, as in Warp


def test_kernels_assign_array_members_and_the_arrays_stay_alive(wp):
    a = wp.array(make_structs(member_arrays()), dtype=MyStruct)
    src = wp.array(np.array([[1.0, 100.0, 3.0], [4.0, 200.0, 6.0]], dtype=np.float32), dtype=wp.vec3)
    wp.launch(bind_member, dim=2, inputs=[a, src])
    del src  # the descriptor array holds what the launch may have stored in it
    gc.collect()
    wp.synchronize()
    want = expected()
    want[:2] = [i + 0.5 * i + 300.0 for i in range(2)]
    np.testing.assert_allclose(run_read(a), want)


def test_indexed_writes_keep_the_other_elements_arrays(wp):
    # fill_/zero_/assign through an indexedarray write only the picked elements; the others
    # keep their bound arrays (which the client never sees, so it cannot write them back).
    a = wp.array(make_structs(member_arrays()), dtype=MyStruct)
    picked = [1, 3]
    ia = wp.indexedarray(a, [wp.array(picked, dtype=int)])
    f = make_structs(member_arrays())[2]
    f.param1 = 100
    ia.fill_(f)
    want = expected()
    want[picked] = expected()[2] - 2 + 100
    np.testing.assert_allclose(run_read(a), want)
    ia.zero_()
    want[picked] = 0
    np.testing.assert_allclose(run_read(a), want)
    rec = np.zeros(2, dtype=a.numpy().dtype)
    rec["param1"] = [7, 9]
    rec["param2"] = [0.25, 0.5]
    ia.assign(rec)  # records carry no arrays: the picked elements' members are empty
    want[picked] = [7.25, 9.5]
    np.testing.assert_allclose(run_read(a), want)


def test_nested_struct_members(wp):
    members = member_arrays()
    outs = []
    for i, m in enumerate(members):
        o = Outer()
        o.scale = float(i + 1)
        o.inner = make_structs([m])[0]
        outs.append(o)
    a = wp.array(outs, dtype=Outer)
    out = wp.zeros(N, dtype=float)
    wp.launch(read_nested, dim=N, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), [(i + 1) * 2 * i for i in range(N)])


def test_local_arrays_and_descriptor_stores_do_not_share_a_module(wp):
    @wp.kernel(module="unique")
    def leaks(s: MyStruct, dst: wp.array(dtype=MyStruct)):
        tmp = wp.zeros(shape=(4,), dtype=float)
        tmp[0] = 1.0
        dst[0] = s

    with pytest.raises(wp.CompileError, match="local array"):
        wp.launch(leaks, dim=1, inputs=[MyStruct(), wp.zeros(1, dtype=MyStruct)])

    # The same through a member of an array element: the member takes an array.
    @wp.kernel(module="unique")
    def leaks_member(dst: wp.array(dtype=MyStruct)):
        tmp = wp.zeros(shape=(4,), dtype=wp.vec3)
        dst[0].param3 = tmp

    with pytest.raises(wp.CompileError, match="local array"):
        wp.launch(leaks_member, dim=1, inputs=[wp.zeros(1, dtype=MyStruct)])


# ------------------------------------------------------------- raw requests

def struct_typeref():
    return wpd.types.to_typeref(MyStruct)


def create(stub, session, contents=None, n=N, init=None):
    req = runtime_pb2.CreateArrayRequest(session=session, device="cpu", dtype=struct_typeref(), shape=[n])
    if contents is not None:
        req.init = runtime_pb2.ARRAY_INIT_CONTENTS
        req.contents = contents
    elif init is not None:
        req.init = init
    return stub.CreateArray(req)


def record_bytes(handle, n=N):
    rec = np.zeros(n, dtype=np.dtype(MyStruct.numpy_dtype()))
    rec["param1"] = 5
    rec["param3"][:, 0] = handle
    return rec.tobytes()


def test_forged_and_foreign_handles_are_not_found(wp, raw, warpd_daemon, serving):
    stub, session = raw
    for handle in (12345, 2 ** 63 + 1):
        with pytest.raises(grpc.RpcError) as e:
            create(stub, session, record_bytes(handle))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()
        assert "element 0" in e.value.details()
    # An array of another session (same tenant) is NOT_FOUND too.
    from conftest import open_channel
    from warpd.v1 import runtime_pb2_grpc

    other = runtime_pb2_grpc.RuntimeStub(open_channel(warpd_daemon.address))
    s2 = other.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
    try:
        theirs = other.CreateArray(runtime_pb2.CreateArrayRequest(
            session=s2, device="cpu", dtype=wpd.types.to_typeref(wpd.vec3), shape=[2])).handle
        with pytest.raises(grpc.RpcError) as e:
            create(stub, session, record_bytes(theirs))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        other.CloseSession(runtime_pb2.CloseSessionRequest(session=s2))
    # A handle of the wrong array type.
    floats = wp.zeros(3, dtype=float, device="cpu")
    with pytest.raises(grpc.RpcError) as e:
        create(stub, session, record_bytes(floats.handle))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "array(dtype=vec3f, ndim=1)" in e.value.details() or "vec3" in e.value.details()
    # Contents of the wrong size.
    with pytest.raises(grpc.RpcError) as e:
        create(stub, session, b"\0" * 7)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert serving()


def test_descriptors_never_cross_the_wire(wp, raw, serving):
    stub, session = raw
    member = wp.array(np.ones((2, 3), dtype=np.float32), dtype=wp.vec3, device="cpu")
    h = create(stub, session, record_bytes(member.handle)).handle
    elem = np.dtype(MyStruct.numpy_dtype()).itemsize
    # Downloads, whole or cut anywhere, show each array's handle where its descriptor is.
    whole = b"".join(c.data for c in stub.Download(runtime_pb2.DownloadRequest(session=session, handle=h)))
    rec = np.frombuffer(whole, dtype=np.dtype(MyStruct.numpy_dtype()))
    assert (rec["param1"] == 5).all() and (rec["param3"][:, 0] == member.handle).all()
    assert not rec["param3"][:, 1:].any()
    part = b"".join(c.data for c in stub.Download(runtime_pb2.DownloadRequest(
        session=session, handle=h, offset=elem + 20, length=elem)))
    assert part == whole[elem + 20:2 * elem + 20]
    # No upload into it.
    with pytest.raises(grpc.RpcError) as e:
        stub.Upload(iter([runtime_pb2.UploadChunk(session=session, handle=h, data=b"\xff" * elem)]))
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    # No view of its bytes as another dtype, or off its element grid.
    u64 = wpd.types.to_typeref(wpd.uint64)
    for offset, shape, strides, dtype in [(0, [elem // 8], [8], u64), (8, [1], [elem], None),
                                          (0, [2], [elem // 2], None)]:
        req = runtime_pb2.CreateViewRequest(session=session, base=h, offset_bytes=offset, shape=shape,
                                            strides=strides)
        if dtype is not None:
            req.dtype.CopyFrom(dtype)
        with pytest.raises(grpc.RpcError) as e:
            stub.CreateView(req)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (offset, e.value.details())
    # No copy into bytes of another dtype (which a client could download).
    words = wp.zeros(N * elem // 8, dtype=wp.uint64)
    structs = wp.zeros(N, dtype=MyStruct)
    for dst, src in [(words, structs), (structs, words)]:
        with pytest.raises(wp.WarpdError, match="same struct"):
            _copy_raw(wp, dst, src)
    # Never mapped into a client, never persisted.
    r = context.runtime()
    assert r.share_path is not None  # the fixture's daemon is local
    assert local_map.map_array(r.share_path, r.token, r.session, big_handle(stub, session), 4096 * elem) is None
    plain = wp.zeros(4096 * elem // 4, dtype=float, device="cpu")  # the control: the same size, mapped
    assert local_map.map_array(r.share_path, r.token, r.session, plain.handle, 4096 * elem) is not None
    big = wp.zeros(4096, dtype=MyStruct, device="cpu")  # large enough to be mappable otherwise
    assert big._local_bytes() is None
    with pytest.raises(wp.WarpdError, match="persistent"):
        wp.persistent.save("descriptors", big)
    assert serving()


def big_handle(stub, session):
    # Large enough that an ordinary array of its size would be shared.
    return create(stub, session, n=4096, init=runtime_pb2.ARRAY_INIT_ZEROS).handle


def _copy_raw(wp, dst, src):
    # wp.copy checks element sizes client-side; send the command as it is.
    rt = context.runtime()
    with rt.lock:
        cmd = dst._stream.add(keep=(dst, src))
        cmd.copy.dst = dst.handle
        cmd.copy.src = src.handle
    wp.synchronize()


def test_numpy_value_reads_back_from_fills(wp):
    # Warp 1.19's test_fill_struct: an array filled with a struct value reads back equal
    # to the value's numpy_value(). Warp shows the array members' descriptors on both
    # sides; warpd shows the arrays' handles on both (a descriptor never reaches a
    # client), while the fill binds the members for kernels.
    m = wp.array(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32), dtype=wp.vec3)
    s = MyStruct()
    s.param1 = -17
    s.param2 = 13.5
    s.param3 = m
    o = Outer()
    o.scale = 2.0
    o.inner = s
    assert s.numpy_value() == (-17, 13.5, [m.handle] + [0] * 7)
    assert o.numpy_value() == (2.0, (-17, 13.5, [m.handle] + [0] * 7))
    assert s.param3 is m  # the value itself still holds the array
    for shape in ((N,), (2, 3)):
        a = wp.zeros(shape, dtype=MyStruct)
        a.fill_(s)
        want = np.empty(shape, dtype=np.dtype(MyStruct.numpy_dtype()))
        want.fill(s.numpy_value())
        np.testing.assert_array_equal(a.numpy(), want)
        assert a.numpy()["param1"].tolist() == np.full(shape, -17).tolist()
    f = wp.full(N, o)
    assert f.dtype is Outer
    want = np.empty(N, dtype=np.dtype(Outer.numpy_dtype()))
    want.fill(o.numpy_value())
    np.testing.assert_array_equal(f.numpy(), want)
    out = wp.zeros(N, dtype=float)
    wp.launch(read_nested, dim=N, inputs=[f, out])
    np.testing.assert_array_equal(out.numpy(), np.full(N, 2.0 * 3.0))  # scale * param3[0][2]
    b = wp.zeros(N, dtype=MyStruct)
    b.fill_(s)
    np.testing.assert_array_equal(run_read(b), np.full(N, -17 + 13.5 + 2 + 5))
    # Through an indexedarray: the indexed elements only.
    c = wp.zeros(N, dtype=MyStruct)
    c[wp.array([3, 1], dtype=wp.int32)].fill_(s)
    np.testing.assert_array_equal(c.numpy()["param1"], [0, -17, 0, -17])
    np.testing.assert_array_equal(run_read(c), [0, -17 + 13.5 + 7, 0, -17 + 13.5 + 7])


def test_a_loaded_persistent_member_reads_back_as_its_object(wp):
    src = wp.array(np.array([[1.0, 2.0, 3.0]], dtype=np.float32), dtype=wp.vec3)
    name = f"struct-member-{os.getpid()}"
    wp.persistent.save(name, src)
    try:
        loaded = wp.persistent.load(name)
        s = MyStruct()
        s.param3 = loaded
        a = wp.array([s], dtype=MyStruct)
        assert a.list()[0].param3 is loaded
    finally:
        wp.persistent.delete(name)
