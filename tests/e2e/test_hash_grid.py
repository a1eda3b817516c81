"""wp.HashGrid: grids kept and built by the daemon, queried in kernels by id.

Neighbours a kernel finds through hash_grid_query are checked against brute
force (every pair of points) on random point sets, with radii at the edges
(0, exactly a pair's distance, wider than the grid), points far outside the
grid's nominal extent and at negative coordinates, empty and rebuilt grids,
float16/float32/float64 grids, groups, the while-loop form in a @wp.func,
and graph replays that rebuild. Ids are resolved through each launch's
object table: made-up, freed and other sessions' ids fail the launch with a
clear error and the daemon keeps serving; the RPC and the build command
check their fields.
"""

import grpc
import numpy as np
import pytest

import warpd as wp
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc


@wp.kernel
def count_neighbors(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    p = points[i]
    c = int(0)
    for index in wp.hash_grid_query(grid, p, radius):
        if wp.length(p - points[index]) <= radius:
            c += 1
    counts[i] = c


@wp.kernel
def collect(grid: wp.uint64, radius: float, queries: wp.array(dtype=wp.vec3), points: wp.array(dtype=wp.vec3),
            found: wp.array2d(dtype=int), candidates: wp.array(dtype=int)):
    # Every point within radius of each query (flags), and how many
    # candidates the query yielded.
    t = wp.tid()
    q = queries[t]
    n = int(0)
    for index in wp.hash_grid_query(grid, q, radius):
        n += 1
        if wp.length(q - points[index]) <= radius:
            found[t, index] = found[t, index] + 1
    candidates[t] = n


@wp.func
def closest(query: wp.HashGridQuery[wp.float64], center: wp.vec3d, points: wp.array(dtype=wp.vec3d),
            radius: wp.float64):
    best = int(-1)
    best_d = radius * radius
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        o = points[index] - center
        d = wp.dot(o, o)
        if d <= best_d:
            best = index
            best_d = d
    return best


@wp.kernel
def closest_kernel(grid: wp.uint64, queries: wp.array(dtype=wp.vec3d), points: wp.array(dtype=wp.vec3d),
                   radius: wp.float64, out: wp.array(dtype=int)):
    t = wp.tid()
    c = queries[t]
    query = wp.hash_grid_query(grid, c, radius)
    out[t] = closest(query, c, points, radius)


@wp.kernel
def count_grouped(grid: wp.uint64, radius: float, group: int, points: wp.array(dtype=wp.vec3),
                  counts: wp.array(dtype=int)):
    t = wp.tid()
    p = points[t]
    c = int(0)
    for index in wp.hash_grid_query(grid, p, radius, group):
        if wp.length(p - points[index]) <= radius:
            c += 1
    counts[t] = c


@wp.kernel
def count_half(grid: wp.uint64, radius: wp.float16, points: wp.array(dtype=wp.vec3h), counts: wp.array(dtype=int)):
    t = wp.tid()
    p = points[t]
    c = int(0)
    for index in wp.hash_grid_query(grid, p, radius):
        if wp.length(p - points[index]) <= radius:
            c += 1
    counts[t] = c


@wp.kernel
def query_any(grid: wp.uint64, out: wp.array(dtype=int)):
    c = int(0)
    for index in wp.hash_grid_query(grid, wp.vec3(0.0, 0.0, 0.0), 1.0):
        c += 1
    out[0] = c


@wp.kernel
def point_id_of(grid: wp.uint64, index: int, out: wp.array(dtype=int)):
    out[0] = wp.hash_grid_point_id(grid, index)


@wp.kernel
def shift(points: wp.array(dtype=wp.vec3), by: wp.vec3):
    t = wp.tid()
    points[t] = points[t] + by


def brute_counts(pts, radius):
    d = np.linalg.norm(pts.astype(np.float64)[:, None] - pts.astype(np.float64)[None], axis=-1)
    return (d <= radius).sum(axis=1)


def test_random_point_sets_match_brute_force(wp):
    rng = np.random.default_rng(17)
    for n, dims, lo, hi, cell, radius in [
        (1000, (16, 16, 16), 0.0, 10.0, 1.0, 1.0),
        (800, (8, 8, 8), -20.0, 20.0, 0.5, 0.7),  # far outside 8 cells of 0.5, negative coordinates
        (500, (4, 5, 6), -3.0, 3.0, 2.0, 0.25),  # cells wider than the radius
        (300, (32, 32, 32), 0.0, 100.0, 5.0, 40.0),  # a radius wider than the grid
    ]:
        pts = rng.uniform(lo, hi, size=(n, 3)).astype(np.float32)
        grid = wp.HashGrid(*dims, device="cpu")
        a = wp.array(pts, dtype=wp.vec3)
        grid.build(a, cell)
        counts = wp.zeros(n, dtype=int)
        wp.launch(count_neighbors, dim=n, inputs=[wp.uint64(grid.id), radius, a, counts])
        # float32 distances of the kernel vs float64 brute force: only exact
        # ties could differ, and random points have none at these radii.
        np.testing.assert_array_equal(counts.numpy(), brute_counts(pts, radius), err_msg=f"{n} {dims}")


def test_each_neighbour_once_and_queries_away_from_the_points(wp):
    rng = np.random.default_rng(5)
    pts = rng.uniform(-4.0, 4.0, size=(200, 3)).astype(np.float32)
    queries = np.concatenate([pts[:20], rng.uniform(-50.0, 50.0, size=(20, 3)).astype(np.float32)])
    grid = wp.HashGrid(6, 6, 6)
    a = wp.array(pts, dtype=wp.vec3)
    grid.build(a, 1.0)
    for radius in (0.0, 0.5, 1.5, 30.0):
        found = wp.zeros((len(queries), len(pts)), dtype=int)
        cand = wp.zeros(len(queries), dtype=int)
        wp.launch(collect, dim=len(queries), inputs=[wp.uint64(grid.id), radius, wp.array(queries, dtype=wp.vec3),
                                                    a, found, cand])
        d = np.linalg.norm(queries.astype(np.float64)[:, None] - pts.astype(np.float64)[None], axis=-1)
        np.testing.assert_array_equal(found.numpy(), (d <= radius).astype(np.int32), err_msg=f"radius {radius}")
        # No point comes twice (every candidate counted once: at most all points).
        assert (cand.numpy() <= len(pts)).all()
        assert (cand.numpy() >= found.numpy().sum(axis=1)).all()


def test_radius_edges_exact_distances(wp):
    # Distances exactly representable: a neighbour exactly at the radius
    # counts (<=), one a hair beyond does not.
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0], [0, 0, 3], [1.0000001, 0, 0]], dtype=np.float32)
    grid = wp.HashGrid(8, 8, 8)
    a = wp.array(pts, dtype=wp.vec3)
    grid.build(a, 1.0)
    for radius in (0.0, 1.0, 2.0, 3.0):
        counts = wp.zeros(len(pts), dtype=int)
        wp.launch(count_neighbors, dim=len(pts), inputs=[wp.uint64(grid.id), radius, a, counts])
        np.testing.assert_array_equal(counts.numpy(), brute_counts(pts, radius), err_msg=f"radius {radius}")


def test_empty_and_unbuilt_grids_yield_nothing(wp):
    out = wp.full(1, 7, dtype=int)
    grid = wp.HashGrid(4, 4, 4)
    wp.launch(query_any, dim=1, inputs=[wp.uint64(grid.id), out])
    assert out.numpy()[0] == 0
    wp.launch(point_id_of, dim=1, inputs=[wp.uint64(grid.id), 0, out])
    assert out.numpy()[0] == -1  # never built: Warp's -1
    grid.build(wp.empty(0, dtype=wp.vec3), 1.0)
    wp.launch(query_any, dim=1, inputs=[wp.uint64(grid.id), out])
    assert out.numpy()[0] == 0


def test_rebuild_after_points_change(wp):
    rng = np.random.default_rng(3)
    pts = rng.uniform(0.0, 5.0, size=(400, 3)).astype(np.float32)
    a = wp.array(pts, dtype=wp.vec3)
    grid = wp.HashGrid(10, 10, 10)
    grid.build(a, 0.5)
    counts = wp.zeros(len(pts), dtype=int)
    wp.launch(count_neighbors, dim=len(pts), inputs=[wp.uint64(grid.id), 0.5, a, counts])
    np.testing.assert_array_equal(counts.numpy(), brute_counts(pts, 0.5))
    # Scatter half of the points by a kernel (stream order: the rebuild sees it).
    wp.launch(shift, dim=200, inputs=[a, wp.vec3(2.3, -1.1, 0.7)])
    moved = pts.copy()
    moved[:200] += np.array([2.3, -1.1, 0.7], dtype=np.float32)
    grid.build(a, 0.5)
    wp.launch(count_neighbors, dim=len(pts), inputs=[wp.uint64(grid.id), 0.5, a, counts])
    np.testing.assert_array_equal(counts.numpy(), brute_counts(a.numpy(), 0.5))
    np.testing.assert_allclose(a.numpy(), moved, rtol=0, atol=1e-6)
    # A smaller set replaces it.
    b = wp.array(pts[:50], dtype=wp.vec3)
    grid.build(b, 0.5)
    small = wp.zeros(50, dtype=int)
    wp.launch(count_neighbors, dim=50, inputs=[wp.uint64(grid.id), 0.5, b, small])
    np.testing.assert_array_equal(small.numpy(), brute_counts(pts[:50], 0.5))


def test_strided_and_multidimensional_points(wp):
    rng = np.random.default_rng(8)
    pts = rng.uniform(0.0, 4.0, size=(64, 3)).astype(np.float32)
    ref = wp.array(pts, dtype=wp.vec3)
    want = brute_counts(pts, 0.6)
    buf = wp.zeros(64 * 3, dtype=wp.vec3)
    strided = buf[::3]
    wp.copy(strided, ref)
    nd = wp.array(pts.reshape(4, 4, 4, 3), dtype=wp.vec3)
    for points in (strided, nd):
        grid = wp.HashGrid(8, 8, 8)
        grid.build(points, 0.6)
        counts = wp.zeros(64, dtype=int)
        wp.launch(count_neighbors, dim=64, inputs=[wp.uint64(grid.id), 0.6, ref, counts])
        np.testing.assert_array_equal(counts.numpy(), want)


def test_float64_while_form_in_a_function(wp):
    pts = np.array([[0, 0, 0], [0.2, 0, 0], [0.8, 0, 0], [2.0, 0, 0]], dtype=np.float64)
    queries = np.array([[0.18, 0, 0], [0.72, 0, 0], [1.7, 0, 0], [5.0, 0, 0]], dtype=np.float64)
    grid = wp.HashGrid(16, 16, 16, dtype=wp.float64)
    p = wp.array(pts, dtype=wp.vec3d)
    grid.build(p, 0.5)
    out = wp.empty(4, dtype=int)
    wp.launch(closest_kernel, dim=4, inputs=[wp.uint64(grid.id), wp.array(queries, dtype=wp.vec3d), p,
                                             wp.float64(0.35), out])
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, -1])


def test_float16_grid(wp):
    pts = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0.1, 0.1, 0], [10, 10, 10]], dtype=np.float16)
    grid = wp.HashGrid(128, 128, 128, dtype=wp.float16)
    a = wp.array(pts, dtype=wp.vec3h)
    grid.build(a, 0.2)
    counts = wp.zeros(5, dtype=int)
    wp.launch(count_half, dim=5, inputs=[wp.uint64(grid.id), wp.float16(0.2), a, counts])
    np.testing.assert_array_equal(counts.numpy(), [4, 4, 4, 4, 1])


def test_grouped_queries(wp):
    rng = np.random.default_rng(11)
    pts = rng.uniform(0.0, 2.0, size=(300, 3)).astype(np.float32)
    groups = rng.choice(np.array([np.iinfo(np.int32).min, -1, 0, 7], dtype=np.int32), size=300)
    grid = wp.HashGrid(4, 4, 4)
    a = wp.array(pts, dtype=wp.vec3)
    grid.build(a, 0.5, groups=wp.array(groups, dtype=int))
    d = np.linalg.norm(pts.astype(np.float64)[:, None] - pts.astype(np.float64)[None], axis=-1) <= 0.6
    for g in (np.iinfo(np.int32).min, -1, 0, 7, 99):
        counts = wp.zeros(300, dtype=int)
        wp.launch(count_grouped, dim=300, inputs=[wp.uint64(grid.id), 0.6, int(g), a, counts])
        np.testing.assert_array_equal(counts.numpy(), (d & (groups[None, :] == g)).sum(axis=1), err_msg=f"group {g}")
    # Without a group: all of them.
    counts = wp.zeros(300, dtype=int)
    wp.launch(count_neighbors, dim=300, inputs=[wp.uint64(grid.id), 0.6, a, counts])
    np.testing.assert_array_equal(counts.numpy(), d.sum(axis=1))


def test_graph_replays_rebuild_from_current_points(wp):
    points = wp.array([[0, 0, 0], [5, 0, 0]], dtype=wp.vec3)
    source = wp.array([[0, 0, 0], [5, 0, 0]], dtype=wp.vec3)
    counts = wp.zeros(2, dtype=int)
    grid = wp.HashGrid(16, 16, 16)
    grid.build(points, 0.5)
    wp.launch(count_neighbors, dim=2, inputs=[wp.uint64(grid.id), 0.5, points, counts])
    wp.synchronize()
    with wp.ScopedCapture() as capture:
        wp.copy(points, source)
        grid.build(points, 0.5)
        wp.launch(count_neighbors, dim=2, inputs=[wp.uint64(grid.id), 0.5, points, counts])
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(counts.numpy(), [1, 1])
    source.assign([[0, 0, 0], [0.25, 0, 0]])
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(counts.numpy(), [2, 2])


# ------------------------------------------------------------------ ids

def _expect_unknown_id(launch, id_value):
    with pytest.raises(wp.KernelError) as e:
        launch()
        wp.synchronize()
    msg = str(e.value)
    assert f"unknown hash grid id 0x{id_value:016x}" in msg, msg
    assert "test_hash_grid.py:" in msg, msg  # the kernel's source line


def test_forged_ids_fail_the_launch_clearly(wp, serving):
    out = wp.zeros(1, dtype=int)
    grid = wp.HashGrid(4, 4, 4)
    grid.build(wp.array([[0, 0, 0]], dtype=wp.vec3), 1.0)
    rng = np.random.default_rng(1)
    for forged in (0, 1, grid.id ^ 1, grid.id + 1, int(rng.integers(1, 2**63)), 2**64 - 1):
        _expect_unknown_id(lambda: wp.launch(query_any, dim=1, inputs=[wp.uint64(forged), out]), forged)
        _expect_unknown_id(lambda: wp.launch(point_id_of, dim=1, inputs=[wp.uint64(forged), 0, out]), forged)
    # The real id still works.
    wp.launch(query_any, dim=1, inputs=[wp.uint64(grid.id), out])
    assert out.numpy()[0] == 1
    assert serving()


def test_freed_ids_fail_the_launch_clearly(wp, serving):
    out = wp.zeros(1, dtype=int)
    grid = wp.HashGrid(4, 4, 4)
    grid.build(wp.array([[0, 0, 0]], dtype=wp.vec3), 1.0)
    stale = grid.id
    wp.launch(query_any, dim=1, inputs=[wp.uint64(stale), out])
    del grid  # queued free: the launch before it still sees the grid
    _expect_unknown_id(lambda: wp.launch(query_any, dim=1, inputs=[wp.uint64(stale), out]), stale)
    assert out.numpy()[0] == 1
    assert serving()


def test_point_id_out_of_range_is_a_clear_fault(wp, serving):
    out = wp.zeros(1, dtype=int)
    grid = wp.HashGrid(4, 4, 4)
    grid.build(wp.array([[0, 0, 0], [1, 1, 1]], dtype=wp.vec3), 1.0)
    for bad in (2, -1, 1 << 30):
        with pytest.raises(wp.KernelError, match=f"index {bad} out of range for a hash grid of 2 points"):
            wp.launch(point_id_of, dim=1, inputs=[wp.uint64(grid.id), bad, out])
            wp.synchronize()
    assert serving()


def test_another_sessions_ids_are_unknown(wp, raw, warpd_daemon, serving):
    from conftest import open_channel

    stub, session = raw
    channel = open_channel(warpd_daemon.address)
    other = runtime_pb2_grpc.RuntimeStub(channel)
    try:
        s2 = other.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
        theirs = other.CreateHashGrid(runtime_pb2.CreateHashGridRequest(session=s2, device="cpu", dim_x=4, dim_y=4,
                                                                        dim_z=4)).grid
        assert theirs != 0
        out = wp.zeros(1, dtype=int)
        _expect_unknown_id(lambda: wp.launch(query_any, dim=1, inputs=[wp.uint64(theirs), out]), theirs)
        # Their handle is NOT_FOUND for this session's commands too.
        pts = wp.array([[0, 0, 0]], dtype=wp.vec3)
        cmd = runtime_pb2.Command()
        cmd.build_hash_grid.grid = theirs
        cmd.build_hash_grid.points = pts.handle
        cmd.build_hash_grid.radius = 1.0
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd]))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()
        assert f"hash grid handle 0x{theirs:016x} not found" in e.value.details()
        other.CloseSession(runtime_pb2.CloseSessionRequest(session=s2))
    finally:
        channel.close()
    assert serving()


def test_ids_are_unguessable_handles(wp):
    ids = [wp.HashGrid(2, 2, 2).id for _ in range(8)]
    assert len(set(ids)) == 8
    assert all(i != 0 for i in ids)
    # Not a counter or an address pattern: high bits vary.
    assert len({i >> 48 for i in ids}) > 1


# ------------------------------------------------------------- validation

def test_client_side_checks_match_warp(wp):
    with pytest.raises(TypeError):
        wp.HashGrid(4, 4, 4, dtype=wp.int32)
    with pytest.raises(RuntimeError, match="cell count exceeds supported limit"):
        wp.HashGrid(1291, 1291, 1291)
    with pytest.raises(RuntimeError, match="must be positive"):
        wp.HashGrid(0, 4, 4)
    grid = wp.HashGrid(4, 4, 4)
    with pytest.raises(ValueError):
        grid.build(wp.zeros(3, dtype=wp.vec3), 0.0)
    with pytest.raises(TypeError):
        grid.build(wp.zeros(3, dtype=wp.vec3d), 1.0)
    with pytest.raises(RuntimeError, match="same length"):
        grid.build(wp.zeros(3, dtype=wp.vec3), 1.0, groups=wp.zeros(2, dtype=int))


def test_server_validates_every_field(wp, raw, serving):
    stub, session = raw

    def create(**kw):
        args = dict(session=session, device="cpu", dim_x=4, dim_y=4, dim_z=4)
        args.update(kw)
        return stub.CreateHashGrid(runtime_pb2.CreateHashGridRequest(**args))

    for kw in (dict(dim_x=0), dict(dim_y=-3), dict(dim_z=-(2**62)), dict(dim_x=2**31, dim_y=1, dim_z=1),
               dict(dim_x=2**40, dim_y=2**40, dim_z=2**40), dict(dim_x=1291, dim_y=1291, dim_z=1291),
               dict(dtype=ir_pb2.SCALAR_INT32), dict(dtype=ir_pb2.SCALAR_BOOL)):
        with pytest.raises(grpc.RpcError) as e:
            create(**kw)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (kw, e.value.details())
    with pytest.raises(grpc.RpcError) as e:
        create(device="cuda:99")
    assert e.value.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT), e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        create(session="no-such-session")
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED

    grid = create().grid
    f64 = create(dtype=ir_pb2.SCALAR_FLOAT64).grid
    pts = wp.array([[0, 0, 0]], dtype=wp.vec3)
    ints = wp.zeros(1, dtype=int)
    floats = wp.zeros(1, dtype=float)

    def build(**kw):
        cmd = runtime_pb2.Command()
        b = cmd.build_hash_grid
        b.grid, b.points, b.radius = grid, pts.handle, 1.0
        for k, v in kw.items():
            setattr(b, k, v)
        return stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd]))

    build()
    for kw, code in ((dict(radius=0.0), grpc.StatusCode.INVALID_ARGUMENT),
                     (dict(radius=-1.0), grpc.StatusCode.INVALID_ARGUMENT),
                     (dict(radius=float("nan")), grpc.StatusCode.INVALID_ARGUMENT),
                     (dict(radius=float("inf")), grpc.StatusCode.INVALID_ARGUMENT),
                     (dict(points=ints.handle), grpc.StatusCode.INVALID_ARGUMENT),
                     (dict(grid=f64), grpc.StatusCode.INVALID_ARGUMENT),  # vec3f points, float64 grid
                     (dict(groups=floats.handle), grpc.StatusCode.INVALID_ARGUMENT),
                     (dict(groups=wp.zeros(2, dtype=int).handle), grpc.StatusCode.INVALID_ARGUMENT),
                     (dict(points=12345), grpc.StatusCode.NOT_FOUND),
                     (dict(grid=12345), grpc.StatusCode.NOT_FOUND),
                     (dict(grid=pts.handle), grpc.StatusCode.NOT_FOUND)):  # an array is not a grid
        with pytest.raises(grpc.RpcError) as e:
            build(**kw)
        assert e.value.code() == code, (kw, e.value.details())
    # Freeing twice: the second is NOT_FOUND; a free of an array handle too.
    for handle, code in ((grid, None), (grid, grpc.StatusCode.NOT_FOUND), (pts.handle, grpc.StatusCode.NOT_FOUND)):
        cmd = runtime_pb2.Command()
        cmd.free_object.object = handle
        if code is None:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd]))
            continue
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd]))
        assert e.value.code() == code
    assert serving()


def test_cell_tables_are_charged_to_the_session(wp, raw):
    # In a fresh session (no cached memory of earlier tests in its pool).
    stub, _ = raw
    s2 = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="charge")).session
    try:
        before = _memory_used(stub, s2)
        stub.CreateHashGrid(runtime_pb2.CreateHashGridRequest(session=s2, device="cpu", dim_x=128, dim_y=128,
                                                              dim_z=128))  # 16 MiB of cells
        assert _memory_used(stub, s2) - before >= 128**3 * 8
    finally:
        stub.CloseSession(runtime_pb2.CloseSessionRequest(session=s2))


def _memory_used(stub, session):
    usage = stub.GetUsage(runtime_pb2.GetUsageRequest(session=session))
    return next(q.used for q in usage.quotas if q.resource == "memory_bytes")


def test_queries_are_not_kernel_parameters(wp):
    with pytest.raises(wp.WarpdError, match="kernel parameters cannot be HashGridQuery"):
        @wp.kernel
        def takes_query(q: wp.HashGridQuery, out: wp.array(dtype=int)):
            out[0] = 1

        wp.launch(takes_query, dim=1, inputs=[None, wp.zeros(1, dtype=int)])
