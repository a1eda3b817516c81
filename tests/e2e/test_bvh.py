"""wp.Bvh: trees kept and built by the daemon, queried in kernels by id.

The items each query reports are checked against brute force (every box)
on random boxes with numpy, for AABB, ray (with and without max_dist),
sphere and capsule queries, SAH and median builds and several leaf sizes;
rays along box faces and through shared corners, queries far outside,
refits and rebuilds after the boxes move, graph replays that refit, and a
BVH that outlives the client's references to its arrays. Ids are resolved
through each launch's object table: made-up, freed, other sessions' ids
and ids of other kinds of objects fail the launch with a clear error, and
the daemon keeps serving; the RPC and the build command check their fields.
"""

import grpc
import numpy as np
import pytest

import warpd as wp
from warpd.v1 import runtime_pb2, runtime_pb2_grpc

N = 300


@wp.kernel
def aabb_hits(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
              hits: wp.array2d(dtype=int)):
    t = wp.tid()
    query = wp.bvh_query_aabb(bvh, lo[t], hi[t])
    item = int(0)
    while wp.bvh_query_next(query, item):
        hits[t, item] = hits[t, item] + 1


@wp.kernel
def ray_hits(bvh: wp.uint64, start: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
             max_dist: wp.array(dtype=float), hits: wp.array2d(dtype=int)):
    t = wp.tid()
    query = wp.bvh_query_ray(bvh, start[t], dirs[t])
    item = int(0)
    while wp.bvh_query_next(query, item, max_dist[t]):
        hits[t, item] = hits[t, item] + 1


@wp.kernel
def sphere_hits(bvh: wp.uint64, centers: wp.array(dtype=wp.vec3), radii: wp.array(dtype=float),
                hits: wp.array2d(dtype=int)):
    t = wp.tid()
    query = wp.bvh_query_sphere(bvh, centers[t], radii[t])
    item = int(0)
    while wp.bvh_query_next(query, item):
        hits[t, item] = hits[t, item] + 1


@wp.kernel
def capsule_hits(bvh: wp.uint64, p0: wp.array(dtype=wp.vec3), p1: wp.array(dtype=wp.vec3),
                 radii: wp.array(dtype=float), hits: wp.array2d(dtype=int)):
    t = wp.tid()
    query = wp.bvh_query_capsule(bvh, p0[t], p1[t] - p0[t], radii[t])
    item = int(0)
    while wp.bvh_query_next(query, item, 1.0):
        hits[t, item] = hits[t, item] + 1


@wp.kernel
def count_from_root(bvh: wp.uint64, root: int, out: wp.array(dtype=int)):
    query = wp.bvh_query_aabb(bvh, wp.vec3(-1.0e6), wp.vec3(1.0e6), root)
    item = int(0)
    n = int(0)
    while wp.bvh_query_next(query, item):
        n += 1
    out[0] = n


@wp.kernel
def copy_boxes(src_lo: wp.array(dtype=wp.vec3), src_hi: wp.array(dtype=wp.vec3), lo: wp.array(dtype=wp.vec3),
               hi: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    lo[i] = src_lo[i]
    hi[i] = src_hi[i]


def random_boxes(rng, n=N):
    lo = rng.uniform(-5, 5, size=(n, 3)).astype(np.float32)
    hi = (lo + rng.uniform(0, 1.5, size=(n, 3))).astype(np.float32)
    return lo, hi


def overlap(lo, hi, qlo, qhi):
    return np.all((lo <= qhi) & (hi >= qlo), axis=1)


def ray_box_t(lo, hi, s, d):
    # Warp's slab test, in float32 as the kernel computes it, with C's fmin/fmax
    # (NaN from 0 * inf on a face plane is ignored).
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (np.float32(1.0) / d.astype(np.float32)).astype(np.float32)
        t1 = ((lo - s).astype(np.float32) * r).astype(np.float32)
        t2 = ((hi - s).astype(np.float32) * r).astype(np.float32)
    tmin = np.fmax.reduce(np.fmin(t1, t2), axis=1)
    tmax = np.fmin.reduce(np.fmax(t1, t2), axis=1)
    hit = (tmax >= 0) & (tmax >= tmin)
    return hit, tmin


def sphere_overlap(lo, hi, c, r):
    e = np.maximum(np.maximum(lo - c, c - hi), 0.0)
    return np.sum(e.astype(np.float64) ** 2, axis=1) <= np.float64(r) ** 2


def segment_overlap(lo, hi, p0, p1, r):
    # The capsule's conservative test: the segment against boxes inflated by r.
    lo = lo.astype(np.float64) - r
    hi = hi.astype(np.float64) + r
    d = (p1 - p0).astype(np.float64)
    out = np.ones(len(lo), dtype=bool)
    tmin = np.zeros(len(lo))
    tmax = np.ones(len(lo))
    for a in range(3):
        if d[a] == 0:
            out &= (p0[a] >= lo[:, a]) & (p0[a] <= hi[:, a])
        else:
            t1 = (lo[:, a] - p0[a]) / d[a]
            t2 = (hi[:, a] - p0[a]) / d[a]
            tmin = np.maximum(tmin, np.minimum(t1, t2))
            tmax = np.minimum(tmax, np.maximum(t1, t2))
    return out & (tmin <= tmax)


def run_aabb(bvh, qlo, qhi, n=N):
    hits = wp.zeros((len(qlo), n), dtype=int)
    wp.launch(aabb_hits, dim=len(qlo), inputs=[bvh.id, wp.array(qlo, dtype=wp.vec3), wp.array(qhi, dtype=wp.vec3),
                                               hits])
    return hits.numpy()


@pytest.mark.parametrize("constructor,leaf_size", [(None, 1), ("sah", 4), ("median", 1), ("median", 8)])
def test_queries_match_brute_force(wp, constructor, leaf_size):
    rng = np.random.default_rng(7 + leaf_size)
    lo, hi = random_boxes(rng)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), constructor=constructor,
                 leaf_size=leaf_size)
    Q = 64
    qlo = rng.uniform(-7, 7, size=(Q, 3)).astype(np.float32)
    qhi = (qlo + rng.uniform(0, 4, size=(Q, 3))).astype(np.float32)
    got = run_aabb(bvh, qlo, qhi)
    for q in range(Q):
        np.testing.assert_array_equal(got[q], overlap(lo, hi, qlo[q], qhi[q]).astype(int), err_msg=f"aabb {q}")

    starts = rng.uniform(-8, 8, size=(Q, 3)).astype(np.float32)
    dirs = rng.normal(size=(Q, 3)).astype(np.float32)
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    max_dist = np.where(np.arange(Q) % 2 == 0, np.inf, rng.uniform(0, 10, size=Q)).astype(np.float32)
    hits = wp.zeros((Q, N), dtype=int)
    wp.launch(ray_hits, dim=Q, inputs=[bvh.id, wp.array(starts, dtype=wp.vec3), wp.array(dirs, dtype=wp.vec3),
                                       wp.array(max_dist), hits])
    got = hits.numpy()
    total = 0
    for q in range(Q):
        hit, t = ray_box_t(lo, hi, starts[q], dirs[q])
        want = hit & ~(t >= max_dist[q])
        total += want.sum()
        np.testing.assert_array_equal(got[q], want.astype(int), err_msg=f"ray {q}")
    assert total > 0

    centers = rng.uniform(-6, 6, size=(Q, 3)).astype(np.float32)
    radii = rng.uniform(0, 3, size=Q).astype(np.float32)
    hits = wp.zeros((Q, N), dtype=int)
    wp.launch(sphere_hits, dim=Q, inputs=[bvh.id, wp.array(centers, dtype=wp.vec3), wp.array(radii), hits])
    got = hits.numpy()
    for q in range(Q):
        np.testing.assert_array_equal(got[q], sphere_overlap(lo, hi, centers[q], radii[q]).astype(int),
                                      err_msg=f"sphere {q}")

    p0 = rng.uniform(-6, 6, size=(Q, 3)).astype(np.float32)
    p1 = rng.uniform(-6, 6, size=(Q, 3)).astype(np.float32)
    hits = wp.zeros((Q, N), dtype=int)
    wp.launch(capsule_hits, dim=Q, inputs=[bvh.id, wp.array(p0, dtype=wp.vec3), wp.array(p1, dtype=wp.vec3),
                                           wp.array(radii), hits])
    got = hits.numpy()
    for q in range(Q):
        want = segment_overlap(lo, hi, p0[q], p1[q], radii[q])
        # float32 rounding at exact tangency aside, the sets agree.
        diff = np.nonzero(got[q] != want.astype(int))[0]
        assert len(diff) == 0, (q, diff)


def test_warp_doc_examples(wp):
    lowers = wp.array([[0, 0, 0], [2, 0, 0], [4, 0, 0]], dtype=wp.vec3)
    uppers = wp.array([[1, 1, 1], [3, 1, 1], [5, 1, 1]], dtype=wp.vec3)
    bvh = wp.Bvh(lowers=lowers, uppers=uppers)
    got = run_aabb(bvh, np.array([[0.5, 0.5, 0.5]], np.float32), np.array([[2.5, 0.5, 0.5]], np.float32), 3)
    assert got.tolist() == [[1, 1, 0]]
    hits = wp.zeros((1, 3), dtype=int)
    wp.launch(ray_hits, dim=1, inputs=[bvh.id, wp.array([[-1, 0.5, 0.5]], dtype=wp.vec3),
                                       wp.array([[1, 0, 0]], dtype=wp.vec3), wp.array([np.inf], dtype=float), hits])
    assert hits.numpy().tolist() == [[1, 1, 1]]
    # The capsule example: segment (0,0,0)-(0.5,0,0), radius 0.3, box from x = 0.75.
    box = wp.Bvh(wp.array([[0.75, -1, -1]], dtype=wp.vec3), wp.array([[2.0, 1, 1]], dtype=wp.vec3))
    hits = wp.zeros((1, 1), dtype=int)
    wp.launch(capsule_hits, dim=1, inputs=[box.id, wp.array([[0, 0, 0]], dtype=wp.vec3),
                                           wp.array([[0.5, 0, 0]], dtype=wp.vec3), wp.array([0.3], dtype=float), hits])
    assert hits.numpy()[0, 0] == 1
    # Sphere: radius 0.6 around (0.5, 0.5, 0.5) touches the first box only.
    hits = wp.zeros((1, 3), dtype=int)
    wp.launch(sphere_hits, dim=1, inputs=[bvh.id, wp.array([[0.5, 0.5, 0.5]], dtype=wp.vec3), wp.array([0.6], dtype=float),
                                          hits])
    assert hits.numpy().tolist() == [[1, 0, 0]]


def test_grazing_rays_and_far_queries(wp):
    # A 4x4 grid of unit boxes sharing faces and corners in the z = 0 layer.
    lo = np.array([[x, y, 0] for x in range(4) for y in range(4)], np.float32)
    hi = lo + 1
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    n = len(lo)
    starts = np.array([[-1, 2, 0.5],    # in the shared face plane y = 2
                       [-1, 0.5, 1],    # in the top faces' plane (z = 1)
                       [-1, -1, 0.5],   # diagonal through the shared corners
                       [2, 2, 50],      # straight down onto a shared corner
                       [-1, 9, 0.5],    # misses entirely
                       [1e20, 1e20, 1e20]], np.float32)
    dirs = np.array([[1, 0, 0], [1, 0, 0], [1, 1, 0], [0, 0, -1], [1, 0, 0], [1, 1, 1]], np.float32)
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    hits = wp.zeros((len(starts), n), dtype=int)
    wp.launch(ray_hits, dim=len(starts), inputs=[bvh.id, wp.array(starts, dtype=wp.vec3),
                                                 wp.array(dirs, dtype=wp.vec3),
                                                 wp.array(np.full(len(starts), np.inf, np.float32)), hits])
    got = hits.numpy()
    for q in range(len(starts)):
        hit, _ = ray_box_t(lo, hi, starts[q], dirs[q])
        np.testing.assert_array_equal(got[q], hit.astype(int), err_msg=f"ray {q}")
    # Real Warp 1.19 (CPU) gives exactly these: rays in a face plane miss, the
    # diagonal meets the boxes it passes through or touches at a corner.
    assert got.tolist() == [[0] * 16, [0] * 16,
                            [1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1], [0] * 16, [0] * 16, [0] * 16]
    far = run_aabb(bvh, np.array([[1e30, 1e30, 1e30], [-1e30, -1e30, -1e30]], np.float32),
                   np.array([[np.inf, np.inf, np.inf], [1e30, 1e30, 1e30]], np.float32), n)
    assert far[0].sum() == 0 and far[1].sum() == n


def test_refit_and_rebuild_follow_moved_boxes(wp):
    rng = np.random.default_rng(3)
    lo, hi = random_boxes(rng)
    lowers = wp.array(lo, dtype=wp.vec3)
    uppers = wp.array(hi, dtype=wp.vec3)
    bvh = wp.Bvh(lowers, uppers, leaf_size=2)
    shift = np.array([30, 0, 0], np.float32)
    # Move the boxes with a kernel (in stream order), then refit.
    wp.launch(copy_boxes, dim=N, inputs=[wp.array(lo + shift, dtype=wp.vec3), wp.array(hi + shift, dtype=wp.vec3),
                                         lowers, uppers])
    bvh.refit()
    qlo = np.array([[20, -10, -10], [-10, -10, -10]], np.float32)
    qhi = np.array([[40, 10, 10], [10, 10, 10]], np.float32)
    got = run_aabb(bvh, qlo, qhi)
    assert got[0].sum() == N and got[1].sum() == 0
    # Shuffle the boxes completely and rebuild (median), then check at random.
    lo2, hi2 = random_boxes(np.random.default_rng(4))
    lowers.assign(wp.array(lo2, dtype=wp.vec3))
    uppers.assign(wp.array(hi2, dtype=wp.vec3))
    bvh.rebuild("median")
    Q = 32
    qlo = rng.uniform(-7, 7, size=(Q, 3)).astype(np.float32)
    qhi = (qlo + rng.uniform(0, 4, size=(Q, 3))).astype(np.float32)
    got = run_aabb(bvh, qlo, qhi)
    for q in range(Q):
        np.testing.assert_array_equal(got[q], overlap(lo2, hi2, qlo[q], qhi[q]).astype(int))


def test_graph_replays_refit_from_current_boxes(wp):
    lo, hi = random_boxes(np.random.default_rng(5))
    lowers = wp.array(lo, dtype=wp.vec3)
    uppers = wp.array(hi, dtype=wp.vec3)
    bvh = wp.Bvh(lowers, uppers)
    src_lo = wp.array(lo, dtype=wp.vec3)
    src_hi = wp.array(hi, dtype=wp.vec3)
    hits = wp.zeros((1, N), dtype=int)
    qlo = wp.array([[40, -10, -10]], dtype=wp.vec3)
    qhi = wp.array([[60, 10, 10]], dtype=wp.vec3)
    with wp.ScopedCapture() as capture:
        wp.launch(copy_boxes, dim=N, inputs=[src_lo, src_hi, lowers, uppers])
        bvh.refit()
        wp.launch(aabb_hits, dim=1, inputs=[bvh.id, qlo, qhi, hits])
    hits.zero_()
    shift = np.array([50, 0, 0], np.float32)
    src_lo.assign(wp.array(lo + shift, dtype=wp.vec3))
    src_hi.assign(wp.array(hi + shift, dtype=wp.vec3))
    wp.capture_launch(capture.graph)
    want = overlap(lo + shift, hi + shift, np.array([40, -10, -10]), np.array([60, 10, 10]))
    np.testing.assert_array_equal(hits.numpy()[0], want.astype(int))
    assert want.sum() == N


def test_bvh_keeps_its_arrays_alive(wp):
    lo, hi = random_boxes(np.random.default_rng(6))
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    bvh.lowers = None  # the client's references go; the daemon's BVH holds the arrays
    bvh.uppers = None
    import gc

    gc.collect()
    got = run_aabb(bvh, np.array([[-1, -1, -1]], np.float32), np.array([[1, 1, 1]], np.float32))
    np.testing.assert_array_equal(got[0], overlap(lo, hi, [-1, -1, -1], [1, 1, 1]).astype(int))


def test_subtree_roots_and_out_of_range_roots(wp, serving):
    lo, hi = random_boxes(np.random.default_rng(8), 50)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    out = wp.zeros(1, dtype=int)
    wp.launch(count_from_root, dim=1, inputs=[bvh.id, -1, out])
    assert out.numpy()[0] == 50
    wp.launch(count_from_root, dim=1, inputs=[bvh.id, 0, out])  # node 0 is the root
    assert out.numpy()[0] == 50
    wp.launch(count_from_root, dim=1, inputs=[bvh.id, 1, out])  # a child: a proper subset
    assert 0 < out.numpy()[0] < 50
    for bad in (99, -2, 1 << 30):  # 2n - 1 = 99 nodes
        with pytest.raises(wp.KernelError, match=f"index {bad} out of range for a BVH of 99 nodes"):
            wp.launch(count_from_root, dim=1, inputs=[bvh.id, bad, out])
            wp.synchronize()
    assert serving()


def _expect_unknown_id(launch, id_value, what="unknown BVH id"):
    with pytest.raises(wp.KernelError) as e:
        launch()
        wp.synchronize()
    msg = str(e.value)
    assert f"{what} 0x{id_value:016x}" in msg or (what in msg and f"0x{id_value:016x}" in msg), msg
    assert "test_bvh.py:" in msg, msg


def test_forged_freed_and_foreign_ids_fail_clearly(wp, raw, warpd_daemon, serving):
    from conftest import open_channel

    out = wp.zeros(1, dtype=int)
    lowers = wp.array([[0, 0, 0]], dtype=wp.vec3)
    uppers = wp.array([[1, 1, 1]], dtype=wp.vec3)
    bvh = wp.Bvh(lowers, uppers)
    for forged in (0, 1, bvh.id ^ 1, bvh.id + 1, 2**64 - 1):
        _expect_unknown_id(lambda: wp.launch(count_from_root, dim=1, inputs=[wp.uint64(forged), -1, out]), forged)
    # Another kind's id: named as such.
    grid = wp.HashGrid(2, 2, 2)
    with pytest.raises(wp.KernelError, match=f"id 0x{grid.id:016x} is a hash grid, not a BVH"):
        wp.launch(count_from_root, dim=1, inputs=[wp.uint64(grid.id), -1, out])
        wp.synchronize()
    wp.launch(count_from_root, dim=1, inputs=[bvh.id, -1, out])
    assert out.numpy()[0] == 1
    stale = bvh.id
    del bvh
    _expect_unknown_id(lambda: wp.launch(count_from_root, dim=1, inputs=[wp.uint64(stale), -1, out]), stale)
    # Another session's BVH and arrays.
    stub, session = raw
    channel = open_channel(warpd_daemon.address)
    other = runtime_pb2_grpc.RuntimeStub(channel)
    try:
        s2 = other.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
        with pytest.raises(grpc.RpcError) as e:  # our arrays are not theirs
            other.CreateBvh(runtime_pb2.CreateBvhRequest(session=s2, device="cpu", lowers=lowers.handle,
                                                         uppers=uppers.handle))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()
        a = other.CreateArray(runtime_pb2.CreateArrayRequest(session=s2, device="cpu", dtype=wp.types.to_typeref(
            wp.vec3), shape=[1])).handle
        theirs = other.CreateBvh(runtime_pb2.CreateBvhRequest(session=s2, device="cpu", lowers=a, uppers=a)).bvh
        assert theirs != 0
        _expect_unknown_id(lambda: wp.launch(count_from_root, dim=1, inputs=[wp.uint64(theirs), -1, out]), theirs)
        cmd = runtime_pb2.Command()
        cmd.build_tree.object = theirs
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd]))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()
        assert f"BVH handle 0x{theirs:016x} not found" in e.value.details()
        other.CloseSession(runtime_pb2.CloseSessionRequest(session=s2))
    finally:
        channel.close()
    assert serving()


def test_server_validates_every_field(wp, raw, serving):
    stub, session = raw
    vec = wp.array([[0, 0, 0], [1, 1, 1]], dtype=wp.vec3)
    one = wp.array([[0, 0, 0]], dtype=wp.vec3)
    floats = wp.zeros(6, dtype=float)
    strided = wp.zeros(4, dtype=wp.vec3)[::2]

    def create(**kw):
        req = dict(session=session, device="cpu", lowers=vec.handle, uppers=vec.handle)
        req.update(kw)
        return stub.CreateBvh(runtime_pb2.CreateBvhRequest(**req))

    for kw, code, text in [
        (dict(uppers=one.handle), grpc.StatusCode.INVALID_ARGUMENT, "same number of lower and upper bounds"),
        (dict(lowers=floats.handle), grpc.StatusCode.INVALID_ARGUMENT, "contiguous array of type wp.vec3"),
        (dict(uppers=strided.handle), grpc.StatusCode.INVALID_ARGUMENT, "not contiguous"),
        (dict(lowers=12345), grpc.StatusCode.NOT_FOUND, ""),
        (dict(leaf_size=-1), grpc.StatusCode.INVALID_ARGUMENT, "leaf_size"),
        (dict(leaf_size=65), grpc.StatusCode.INVALID_ARGUMENT, "leaf_size"),
        (dict(device="cuda:7"), grpc.StatusCode.INVALID_ARGUMENT, "unknown device"),
    ]:
        with pytest.raises(grpc.RpcError) as e:
            create(**kw)
        assert e.value.code() == code, (kw, e.value.details())
        assert text in e.value.details(), (kw, e.value.details())
    bvh = create().bvh
    for build, code in [(dict(object=bvh, split=2), grpc.StatusCode.INVALID_ARGUMENT),
                        (dict(object=bvh + 1), grpc.StatusCode.NOT_FOUND)]:
        cmd = runtime_pb2.Command()
        for k, v in build.items():
            setattr(cmd.build_tree, k, v)
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd]))
        assert e.value.code() == code, (build, e.value.details())
    assert serving()


def test_client_side_checks_match_warp(wp):
    vec = wp.array([[0, 0, 0], [1, 1, 1]], dtype=wp.vec3)
    with pytest.raises(RuntimeError, match="same number of lower and upper bounds"):
        wp.Bvh(vec, wp.array([[0, 0, 0]], dtype=wp.vec3))
    with pytest.raises(RuntimeError, match="lowers should be a contiguous array of type wp.vec3"):
        wp.Bvh(wp.zeros(2, dtype=wp.vec3d), vec)
    with pytest.raises(ValueError, match="leaf_size must be greater than or equal to 1"):
        wp.Bvh(vec, vec, leaf_size=0)
    with pytest.raises(ValueError, match="Unknown BVH constructor 'octree'"):
        wp.Bvh(vec, vec, constructor="octree")
    with pytest.warns(UserWarning, match="Falling back to SAH"):
        wp.Bvh(vec, vec, constructor="lbvh")


def test_construction_is_one_batch_and_raises_the_daemons_checks(wp, raw, serving, monkeypatch):
    """wp.Bvh / wp.Mesh make the object and queue its build in one Submit (a create_tree
    command under an id the client drew): no CreateBvh / CreateMesh RPC; the daemon's
    checks still raise at the constructor, and a refused batch makes nothing."""
    from warpd import context

    rt = context.runtime()
    stream = rt.stream(wp.get_device("cpu"))
    calls = []
    real_call = rt.call
    monkeypatch.setattr(rt, "call", lambda method, *a, **k: (calls.append(method), real_call(method, *a, **k))[1])
    lo, hi = random_boxes(np.random.default_rng(12))
    lowers, uppers = wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3)
    wp.synchronize()
    calls.clear()
    before = stream.submits
    bvh = wp.Bvh(lowers, uppers)
    assert stream.submits == before + 1 and calls == ["Submit"], calls
    # Commands queued before go first (the build reads what they wrote).
    moved = wp.array(lo + 100, dtype=wp.vec3), wp.array(hi + 100, dtype=wp.vec3)
    wp.copy(lowers, moved[0])
    wp.copy(uppers, moved[1])
    assert stream.queued == 2
    bvh2 = wp.Bvh(lowers, uppers)
    got = run_aabb(bvh2, np.array([[99, 99, 99]], np.float32), np.array([[101, 101, 101]], np.float32))
    np.testing.assert_array_equal(got[0], overlap(lo + 100, hi + 100, [99] * 3, [101] * 3).astype(int))
    assert got.sum() > 0
    assert bvh.id and bvh2.id and bvh.id != bvh2.id
    # The daemon's own checks raise at the constructor: 4 indices are not triangles.
    pts = wp.array(np.eye(3, dtype=np.float32), dtype=wp.vec3)
    with pytest.raises(wp.errors.InvalidArgumentError, match="3 vertex indices per triangle, got 4"):
        wp.Mesh(pts, wp.array([0, 1, 2, 0], dtype=wp.int32))
    wp.synchronize()  # nothing made, nothing left to free
    mesh = wp.Mesh(pts, wp.array([0, 1, 2], dtype=wp.int32))
    assert mesh.id
    del mesh
    out = wp.zeros(1, dtype=int)
    wp.launch(count_from_root, dim=1, inputs=[bvh.id, -1, out])
    assert out.numpy()[0] == N
    # Raw batches: id 0, an id in use, no kind; a refused batch makes nothing.
    stub, session = raw

    def submit(*cmds):
        return stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=list(cmds)))

    def create(ident, **kw):
        cmd = runtime_pb2.Command()
        cmd.create_tree.id = ident
        cmd.create_tree.bvh.CopyFrom(runtime_pb2.CreateBvhRequest(lowers=lowers.handle, uppers=uppers.handle, **kw))
        return cmd

    def build(ident, split=0):
        cmd = runtime_pb2.Command()
        cmd.build_tree.object = ident
        cmd.build_tree.split = split
        return cmd

    no_kind = runtime_pb2.Command()
    no_kind.create_tree.id = 77
    for cmds, code, text in [
        ((create(0),), grpc.StatusCode.INVALID_ARGUMENT, "must not be 0"),
        ((create(bvh.id),), grpc.StatusCode.ALREADY_EXISTS, "already in use"),
        ((no_kind,), grpc.StatusCode.INVALID_ARGUMENT, "neither a BVH"),
        ((create(78, leaf_size=65),), grpc.StatusCode.INVALID_ARGUMENT, "leaf_size"),
        ((create(79), build(79, split=2)), grpc.StatusCode.INVALID_ARGUMENT, "split 2"),
        ((create(80), create(80)), grpc.StatusCode.ALREADY_EXISTS, "already in use"),
    ]:
        with pytest.raises(grpc.RpcError) as e:
            submit(*cmds)
        assert e.value.code() == code, (cmds, e.value.details())
        assert text in e.value.details(), (cmds, e.value.details())
    # 79 and 80 were never made: the ids are free, and the trees work under them.
    submit(create(79), build(79), create(80), build(80, split=1))
    for ident in (79, 80):
        wp.launch(count_from_root, dim=1, inputs=[wp.uint64(ident), -1, out])
        assert out.numpy()[0] == N
    free = runtime_pb2.Command()
    free.free_object.object = 79
    submit(free)
    _expect_unknown_id(lambda: wp.launch(count_from_root, dim=1, inputs=[wp.uint64(79), -1, out]), 79)
    # Not in graphs.
    with pytest.raises(grpc.RpcError) as e:
        stub.CreateGraph(runtime_pb2.CreateGraphRequest(session=session, device="cpu", commands=[create(81)]))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert serving()


def test_made_in_a_capture_and_built_by_its_replays(wp):
    """In a capture the build is recorded (each replay builds from the arrays' contents then)
    and the object is made at once."""
    lo, hi = random_boxes(np.random.default_rng(13))
    lowers, uppers = wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3)
    out = wp.zeros(1, dtype=int)
    with wp.ScopedCapture() as capture:
        bvh = wp.Bvh(lowers, uppers)
        wp.launch(count_from_root, dim=1, inputs=[bvh.id, -1, out])
    assert bvh.id
    wp.capture_launch(capture.graph)
    assert out.numpy()[0] == N
