"""The daemon's CUDA devices on a real GPU (issue 26).

These run only where the test daemon executes work on a GPU: on a GPU machine,
scripts/gpu-check.sh runs them against the lean CUDA-only daemon
(scripts/build-lean.sh), which opens every GPU. Elsewhere (CI, a machine
without a GPU, a daemon without --cuda-execution) each test skips and says so.
The stand-in driver of test_cuda_devices.py runs no kernel code, so it cannot
serve these: every value here is computed on the GPU and checked against numpy.
"""

import numpy as np
import pytest

import warpd as wp

NO_GPU = ("no CUDA device runs work on this daemon (no GPU on this machine, or the daemon runs "
          "without --cuda-execution): scripts/gpu-check.sh runs these tests on a GPU machine")


@pytest.fixture
def gpu(wp):
    devices = wp.get_cuda_devices()
    if not devices:
        pytest.skip(NO_GPU)
    return devices[0]


@wp.kernel(module="gpu_e2e")
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@wp.kernel(module="gpu_e2e")
def count_into(n: wp.array(dtype=int)):
    wp.atomic_add(n, 0, 1)


@wp.kernel(module="gpu_e2e")
def normalize_all(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.normalize(v[i])


@wp.kernel(module="gpu_e2e")
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel(module="gpu_e2e")
def reads_past_end(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i + 1]


@wp.kernel(module="gpu_e2e")
def mat_rows(m: wp.array2d(dtype=float), sums: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(sums, i, m[i, j])


def test_the_default_device_is_the_gpu(wp, gpu):
    assert wp.get_device() == gpu
    assert gpu.is_cuda and gpu.arch >= 50
    a = wp.zeros(4, dtype=float)
    assert a.device == gpu


def test_saxpy_matches_numpy(wp, gpu):
    n = 1 << 20
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = wp.empty(n, dtype=float, device=gpu)
    wp.launch(saxpy, dim=n, inputs=[2.5, wp.array(x, device=gpu), wp.array(y, device=gpu), out], device=gpu)
    np.testing.assert_allclose(out.numpy(), np.float32(2.5) * x + y, rtol=1e-6, atol=1e-6)


def test_atomics_count_every_thread(wp, gpu):
    n = wp.zeros(1, dtype=int, device=gpu)
    wp.launch(count_into, dim=3_000_001, inputs=[n], device=gpu)
    assert n.numpy()[0] == 3_000_001


def test_vectors_and_2d_arrays(wp, gpu):
    rng = np.random.default_rng(2)
    v = rng.standard_normal((1000, 3)).astype(np.float32)
    out = wp.empty(1000, dtype=wp.vec3, device=gpu)
    wp.launch(normalize_all, dim=1000, inputs=[wp.array(v, dtype=wp.vec3, device=gpu), out], device=gpu)
    np.testing.assert_allclose(out.numpy(), v / np.linalg.norm(v, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    m = rng.standard_normal((64, 33)).astype(np.float32)
    sums = wp.zeros(64, dtype=float, device=gpu)
    wp.launch(mat_rows, dim=(64, 33), inputs=[wp.array(m, device=gpu), sums], device=gpu)
    np.testing.assert_allclose(sums.numpy(), m.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_arrays_move_between_the_gpu_and_the_cpu(wp, gpu):
    rng = np.random.default_rng(3)
    host = rng.standard_normal(10_000).astype(np.float32)
    a = wp.array(host, device=gpu)
    back = a.to("cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.numpy(), host)
    b = wp.zeros(10_000, dtype=float, device=gpu)
    wp.copy(b, a, dest_offset=100, src_offset=0, count=500)
    want = np.zeros(10_000, dtype=np.float32)
    want[100:600] = host[:500]
    np.testing.assert_array_equal(b.numpy(), want)
    b.fill_(7.0)
    np.testing.assert_array_equal(b.numpy(), np.full(10_000, 7.0, dtype=np.float32))
    # A strided view of a GPU array (through the daemon's host staging).
    m = wp.array(host.reshape(100, 100), device=gpu)
    np.testing.assert_array_equal(m[:, 3].numpy(), host.reshape(100, 100)[:, 3])


def test_large_arrays_move_through_mapped_memory_and_daemon_copies(wp, gpu):
    # 12 MiB: through a CPU array mapped into this client and a copy on the GPU's
    # stream (array._host_staging), in more than one staging chunk.
    rng = np.random.default_rng(11)
    host = rng.standard_normal(3 << 20).astype(np.float32)
    a = wp.array(host, dtype=float, device=gpu)
    np.testing.assert_array_equal(a.numpy(), host)
    c = wp.zeros(3 << 20, dtype=float, device="cpu")
    wp.copy(c, a)  # gpu -> cpu in the daemon
    np.testing.assert_array_equal(c.numpy(), host)
    b = wp.empty(3 << 20, dtype=float, device=gpu)
    wp.copy(b, c)  # cpu -> gpu in the daemon
    np.testing.assert_array_equal(b.numpy(), host)


def test_threads_loop_over_ids_past_the_grid_cap(wp, gpu):
    # 40M ids: past 32 blocks of 256 per SM, each thread loops (wp::grid_stride),
    # polling for faults every 32 of its ids.
    n = 40_000_000
    x = wp.array(np.arange(n, dtype=np.float32) % 1000.0, dtype=float, device=gpu)
    y = wp.ones(n, dtype=float, device=gpu)
    out = wp.empty(n, dtype=float, device=gpu)
    wp.launch(saxpy, dim=n, inputs=[2.0, x, y, out], device=gpu)
    np.testing.assert_array_equal(out.numpy(), 2.0 * (np.arange(n, dtype=np.float32) % 1000.0) + 1.0)


def test_queued_launches_run_as_a_batch_and_a_fault_names_its_kernel(wp, gpu):
    # Launches queued back to back run as one batch on the GPU (exec/stream_batch.cc).
    n = wp.zeros(1, dtype=int, device=gpu)
    for _ in range(300):
        wp.launch(count_into, dim=64, inputs=[n], device=gpu)
    assert n.numpy()[0] == 300 * 64
    # A fault in the middle: its kernel and line are the error; the kernels after it in
    # the batch ran (as on a CUDA stream), and the stream serves on.
    a = wp.zeros(8, dtype=float, device=gpu)
    b = wp.zeros(8, dtype=float, device=gpu)
    wp.launch(count_into, dim=1, inputs=[n], device=gpu)
    wp.launch(reads_past_end, dim=8, inputs=[a, b], device=gpu)
    wp.launch(count_into, dim=1, inputs=[n], device=gpu)
    with pytest.raises(wp.KernelError) as info:
        wp.synchronize_device(gpu)
    assert "kernel 'reads_past_end' at " in str(info.value)
    assert n.numpy()[0] == 300 * 64 + 2


@wp.kernel(module="gpu_e2e")
def block_size(out: wp.array(dtype=int)):
    out[wp.tid()] = wp.block_dim()


def test_a_launchs_block_dim_and_max_blocks_shape_its_grid(wp, gpu):
    # Every id runs whatever the grid (threads loop over ids past max_blocks);
    # wp.block_dim() is the launch's threads per block, 256 by default, as in Warp.
    n = wp.zeros(1, dtype=int, device=gpu)
    wp.launch(count_into, dim=(70, 90), inputs=[n], device=gpu, max_blocks=2, block_dim=32)
    assert n.numpy()[0] == 70 * 90
    out = wp.zeros(1000, dtype=int, device=gpu)
    wp.launch(block_size, dim=1000, inputs=[out], device=gpu)
    assert (out.numpy() == 256).all()
    wp.launch(block_size, dim=1000, inputs=[out], device=gpu, block_dim=64, max_blocks=3)
    assert (out.numpy() == 64).all()


def test_mempool_use_is_the_sessions_own(wp, gpu):
    import gc

    gc.collect()  # earlier tests' arrays freed first
    wp.synchronize()
    before = wp.get_mempool_used_mem_current(gpu)
    a = wp.zeros(1 << 20, dtype=float, device=gpu)
    assert wp.get_mempool_used_mem_current(gpu) == before + (4 << 20)
    assert wp.get_mempool_used_mem_high(gpu) >= before + (4 << 20)
    del a
    wp.synchronize_device(gpu)
    assert wp.get_mempool_used_mem_current(gpu) == before
    assert gpu.sm_count > 0 and gpu.arch >= 50 and gpu.is_mempool_supported


def test_out_of_bounds_is_a_kernel_error_and_the_gpu_serves_on(wp, gpu, serving):
    a = wp.zeros(8, dtype=float, device=gpu)
    b = wp.zeros(8, dtype=float, device=gpu)
    wp.launch(reads_past_end, dim=8, inputs=[a, b], device=gpu)
    with pytest.raises(wp.KernelError) as info:
        wp.synchronize_device(gpu)
    assert "kernel 'reads_past_end' at " in str(info.value)
    out = wp.empty(4, dtype=float, device=gpu)
    wp.launch(saxpy, dim=4, inputs=[1.0, wp.ones(4, dtype=float, device=gpu), wp.ones(4, dtype=float, device=gpu),
                                    out], device=gpu)
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0, 2.0, 2.0])
    assert serving()


def test_backward_pass_on_the_gpu(wp, gpu):
    rng = np.random.default_rng(4)
    xs = rng.standard_normal(1000).astype(np.float32)
    x = wp.array(xs, device=gpu, requires_grad=True)
    y = wp.zeros(1000, dtype=float, device=gpu, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=1000, inputs=[x, y], device=gpu)
    tape.backward(grads={y: wp.ones(1000, dtype=float, device=gpu)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * xs, rtol=1e-6, atol=1e-6)


@wp.kernel(module="gpu_e2e")
def slow_set(a: wp.array(dtype=float), rounds: int, value: float):
    i = wp.tid()
    x = float(0.0)
    for k in range(rounds):
        x = x + wp.sin(float(k))
    a[i] = value + x * 0.0


def test_streams_and_events_order_work_on_the_gpu(wp, gpu):
    n = 1 << 20
    s = wp.Stream(gpu)
    a = wp.zeros(n, dtype=float, device=gpu)
    b = wp.zeros(n, dtype=float, device=gpu)
    # A slow kernel on s, a copy on the default stream after waiting for it.
    wp.launch(slow_set, dim=n, inputs=[a, 2000, 4.0], device=gpu, stream=s)
    e = s.record_event()
    wp.wait_event(e)
    wp.copy(b, a)
    np.testing.assert_array_equal(b.numpy(), np.full(n, 4.0, dtype=np.float32))
    # Two streams writing halves at once, joined on the default stream before the
    # transfer (as in Warp, numpy() orders after the array's stream only: the
    # device's current one).
    s2 = wp.Stream(gpu)
    c = wp.zeros(n, dtype=float, device=gpu)
    wp.launch(slow_set, dim=n // 2, inputs=[c[: n // 2], 500, 1.0], device=gpu, stream=s)
    wp.launch(slow_set, dim=n // 2, inputs=[c[n // 2:], 500, 2.0], device=gpu, stream=s2)
    wp.wait_stream(s)
    wp.wait_stream(s2)
    got = c.numpy()
    np.testing.assert_array_equal(got[: n // 2], 1.0)
    np.testing.assert_array_equal(got[n // 2:], 2.0)


def test_timing_events_time_gpu_work(wp, gpu):
    """A kernel with 4x the rounds takes longer between its timing events."""
    n = 1 << 20
    a = wp.zeros(n, dtype=float, device=gpu)

    def timed(rounds):
        start, end = wp.Event(gpu, enable_timing=True), wp.Event(gpu, enable_timing=True)
        wp.record_event(start)
        wp.launch(slow_set, dim=n, inputs=[a, rounds, 1.0], device=gpu)
        wp.record_event(end)
        return wp.get_event_elapsed_time(start, end)

    with wp.ScopedDevice(gpu):
        timed(100)  # compiled and loaded before the timed runs
        short, long = timed(500), timed(2000)
    assert 0.0 < short < long, (short, long)


def test_matmul_and_its_backward_on_the_gpu(wp, gpu):
    rng = np.random.default_rng(3)
    an, bn, cn = (rng.standard_normal(s).astype(np.float32) for s in ((64, 32), (32, 48), (64, 48)))
    a = wp.array(an, dtype=float, device=gpu, requires_grad=True)
    b = wp.array(bn, dtype=float, device=gpu, requires_grad=True)
    c = wp.array(cn, dtype=float, device=gpu, requires_grad=True)
    d = wp.zeros((64, 48), dtype=float, device=gpu, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.matmul(a, b, c, d, alpha=2.0, beta=0.5)
    d.grad.fill_(1.0)
    tape.backward()
    ones = np.ones((64, 48), dtype=np.float32)
    np.testing.assert_allclose(d.numpy(), 2.0 * an @ bn + 0.5 * cn, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * ones @ bn.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), 2.0 * an.T @ ones, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c.grad.numpy(), 0.5 * ones, rtol=1e-6)


def test_a_captured_graph_replays_on_the_gpu(wp, gpu):
    n = 1 << 16
    x = wp.array(np.arange(n, dtype=np.float32), device=gpu)
    y = wp.zeros(n, dtype=float, device=gpu)
    out = wp.zeros(n, dtype=float, device=gpu)
    wp.launch(saxpy, dim=n, inputs=[1.0, x, y, out], device=gpu)  # compiled and loaded before the capture
    wp.capture_begin(device=gpu)
    y.fill_(1.0)
    wp.launch(saxpy, dim=n, inputs=[3.0, x, y, out], device=gpu)
    wp.copy(y, out)
    graph = wp.capture_end(device=gpu)
    for _ in range(3):
        wp.capture_launch(graph)
    np.testing.assert_allclose(out.numpy(), 3.0 * np.arange(n, dtype=np.float32) + 1.0)
    np.testing.assert_allclose(y.numpy(), out.numpy())


# Meshes, BVHs, hash grids and volumes on the GPU: built on the daemon's host,
# mirrored to the GPU (runtime/objects/device_mirror.h), queried by kernels
# there; every answer against numpy brute force.
@wp.kernel(module="gpu_e2e")
def mesh_queries(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), ts: wp.array(dtype=float),
                 faces: wp.array(dtype=int), dists: wp.array(dtype=float)):
    i = wp.tid()
    p = starts[i]
    r = wp.mesh_query_ray(mesh, p, wp.normalize(-p), 100.0)
    ts[i] = -1.0
    faces[i] = -1
    if r.result:
        ts[i] = r.t
        faces[i] = r.face
    q = wp.mesh_query_point_no_sign(mesh, p, 100.0)
    dists[i] = -1.0
    if q.result:
        dists[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p)


@wp.kernel(module="gpu_e2e")
def move_points(points: wp.array(dtype=wp.vec3), by: wp.vec3):
    i = wp.tid()
    points[i] = points[i] + by


@wp.kernel(module="gpu_e2e")
def box_and_neighbour_counts(bvh: wp.uint64, grid: wp.uint64, lo: wp.array(dtype=wp.vec3),
                             hi: wp.array(dtype=wp.vec3), pts: wp.array(dtype=wp.vec3), radius: float,
                             boxes: wp.array(dtype=int), near: wp.array(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_aabb(bvh, lo[i], hi[i])
    k = int(0)
    n = int(0)
    while wp.bvh_query_next(q, k):
        n += 1
    boxes[i] = n
    h = wp.hash_grid_query(grid, pts[i], radius)
    m = int(0)
    while wp.hash_grid_query_next(h, k):
        if wp.length(pts[k] - pts[i]) <= radius:
            m += 1
    near[i] = m


@wp.kernel(module="gpu_e2e")
def sample_volume(volume: wp.uint64, uvw: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample_f(volume, uvw[i], wp.Volume.LINEAR)


def _sphere_mesh(rings=24, segs=32):
    th = np.linspace(0.0, np.pi, rings + 1)
    ph = np.linspace(0.0, 2.0 * np.pi, segs, endpoint=False)
    pts = np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                    np.outer(np.cos(th), np.ones_like(ph))], axis=-1).reshape(-1, 3).astype(np.float32)
    idx = []
    for i in range(rings):
        for j in range(segs):
            a, b = i * segs + j, i * segs + (j + 1) % segs
            idx += [a, a + segs, b + segs, a, b + segs, b]
    return pts, np.array(idx, dtype=np.int32).reshape(-1, 3)


def _ray_hits(p, d, tri):
    """(t, face) of the closest hit of ray p + t d over every triangle (Moller-Trumbore), t = -1 for none."""
    a, b, c = tri[:, 0].astype(np.float64), tri[:, 1].astype(np.float64), tri[:, 2].astype(np.float64)
    e1, e2 = b - a, c - a
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, h)
    ok = np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = p - a
    u = inv * np.einsum("ij,ij->i", s, h)
    q = np.cross(s, e1)
    v = inv * (q @ d)
    t = inv * np.einsum("ij,ij->i", e2, q)
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    if not hit.any():
        return -1.0, -1
    f = int(np.argmin(np.where(hit, t, np.inf)))
    return float(t[f]), f


def _closest_distance(p, tri):
    """The distance from p to the closest of the triangles, by dense sampling of each (barycentric grid)
    refined around the best: an upper bound within 1e-4 of the truth for these small triangles."""
    n = 24
    u, v = np.meshgrid(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    keep = u + v <= 1.0
    u, v = u[keep], v[keep]
    a, b, c = (tri[:, k].astype(np.float64) for k in range(3))
    pts = a[:, None] + u[None, :, None] * (b - a)[:, None] + v[None, :, None] * (c - a)[:, None]
    return float(np.linalg.norm(pts - p, axis=-1).min())


def test_mesh_queries_on_the_gpu_match_brute_force_and_follow_a_refit(wp, gpu):
    pts, tris = _sphere_mesh()
    points = wp.array(pts, dtype=wp.vec3, device=gpu)
    mesh = wp.Mesh(points=points, indices=wp.array(tris.reshape(-1), dtype=int, device=gpu))
    assert mesh.device == gpu
    rng = np.random.default_rng(11)
    starts = rng.standard_normal((64, 3)).astype(np.float32)
    starts *= (1.5 + rng.random((64, 1)).astype(np.float32)) / np.linalg.norm(starts, axis=1, keepdims=True)
    for shift in (np.zeros(3, np.float32), np.array([0.25, -0.5, 0.125], np.float32)):
        if shift.any():  # move the points on the GPU, then refit
            wp.launch(move_points, dim=len(pts), inputs=[points, wp.vec3(*shift)], device=gpu)
            mesh.refit()
        ts, faces, dists = (wp.zeros(64, dtype=t, device=gpu) for t in (float, int, float))
        wp.launch(mesh_queries, dim=64, inputs=[mesh.id, wp.array(starts, dtype=wp.vec3, device=gpu),
                                                ts, faces, dists], device=gpu)
        moved = (pts + shift)[tris]
        for i, p in enumerate(starts.astype(np.float64)):
            d = -p / np.linalg.norm(p)
            t, f = _ray_hits(p, d, moved)
            assert ts.numpy()[i] == pytest.approx(t, rel=1e-4, abs=1e-5), (i, shift)
            if t >= 0:
                got_face = int(faces.numpy()[i])
                # The same face, or one whose hit is as close (a ray through a shared edge).
                t_other, _ = _ray_hits(p, d, moved[[got_face]])
                assert t_other == pytest.approx(t, rel=1e-4, abs=1e-5), (i, got_face, f)
            assert dists.numpy()[i] == pytest.approx(_closest_distance(p, moved), abs=2e-4), (i, shift)


def test_bvh_and_hash_grid_queries_on_the_gpu_match_brute_force(wp, gpu):
    rng = np.random.default_rng(12)
    lo = (rng.random((2000, 3)) * 10.0).astype(np.float32)
    hi = lo + (rng.random((2000, 3)) * 0.8).astype(np.float32)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=gpu), wp.array(hi, dtype=wp.vec3, device=gpu))
    pts = (rng.random((3000, 3)) * 6.0).astype(np.float32)
    grid = wp.HashGrid(32, 32, 32, device=gpu)
    radius = 0.45
    pts_gpu = wp.array(pts, dtype=wp.vec3, device=gpu)
    grid.build(pts_gpu, radius)
    qlo = (rng.random((3000, 3)) * 10.0).astype(np.float32)
    qhi = qlo + 1.0
    boxes, near = wp.zeros(3000, dtype=int, device=gpu), wp.zeros(3000, dtype=int, device=gpu)
    wp.launch(box_and_neighbour_counts, dim=3000,
              inputs=[bvh.id, grid.id, wp.array(qlo, dtype=wp.vec3, device=gpu),
                      wp.array(qhi, dtype=wp.vec3, device=gpu), pts_gpu, radius, boxes, near], device=gpu)
    want_boxes = [int(((lo <= qhi[i]) & (hi >= qlo[i])).all(axis=1).sum()) for i in range(3000)]
    assert boxes.numpy().tolist() == want_boxes
    d = np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=-1)
    want_near = (d <= np.float32(radius)).sum(axis=1)
    # Distances within float32 rounding of the radius may count either way.
    edge = (np.abs(d - radius) < 1e-5).sum(axis=1)
    assert (np.abs(near.numpy() - want_near) <= edge).all()
    assert near.numpy().sum() > 3000  # every point finds itself, and some more


def test_volume_samples_on_the_gpu_match_trilinear_interpolation(wp, gpu):
    rng = np.random.default_rng(13)
    dense = rng.standard_normal((12, 10, 9)).astype(np.float32)
    volume = wp.Volume.load_from_numpy(dense, bg_value=0.0, device=gpu)
    assert volume.device == gpu
    uvw = (rng.random((500, 3)) * (np.array(dense.shape) - 1)).astype(np.float32)
    out = wp.zeros(500, dtype=float, device=gpu)
    wp.launch(sample_volume, dim=500, inputs=[volume.id, wp.array(uvw, dtype=wp.vec3, device=gpu), out],
              device=gpu)
    i0 = np.floor(uvw).astype(int)
    f = uvw - i0
    want = np.zeros(500)
    for corner in range(8):
        o = np.array([(corner >> 2) & 1, (corner >> 1) & 1, corner & 1])
        w = np.prod(np.where(o, f, 1.0 - f), axis=1)
        idx = np.minimum(i0 + o, np.array(dense.shape) - 1)
        want += w * dense[idx[:, 0], idx[:, 1], idx[:, 2]]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    # What kernels stored comes back with array(): the GPU's copy of the grid.
    assert volume.array().numpy().size == volume.get_grid_info().size_in_bytes


def test_a_local_client_maps_its_gpu_arrays_through_cuda_ipc(wp, gpu):
    """The session's pool and the array's allocation imported into this process
    (cuda_ipc.py): this process's driver reads and writes the daemon's memory, and
    the daemon's kernels see the writes."""
    import ctypes

    from warpd import cuda_ipc
    from warpd.context import runtime

    if runtime().share_path is None:
        pytest.skip("the test client is not on the daemon's Unix socket: CUDA IPC is for local clients")
    n = 1 << 20
    want = np.arange(n, dtype=np.float32)
    x = wp.array(want, device=gpu)
    y = wp.zeros(n, dtype=float, device=gpu)
    cx, cy = x.__cuda_array_interface__, y.__cuda_array_interface__
    assert cx["shape"] == (n,) and cx["typestr"] == "<f4" and cx["version"] == 3
    drv = cuda_ipc._get_driver()
    dtoh = drv._fn("cuMemcpyDtoH", [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t])
    htod = drv._fn("cuMemcpyHtoD", [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t])
    ctx = cuda_ipc.imported_root(x)._ctx
    got = np.empty(n, dtype=np.float32)
    drv.in_context(ctx, lambda: drv.check(dtoh(got.ctypes.data, cx["data"][0], got.nbytes), "cuMemcpyDtoH"))
    np.testing.assert_array_equal(got, want)
    halves = want * 0.5
    drv.in_context(ctx, lambda: drv.check(htod(cy["data"][0], halves.ctypes.data, halves.nbytes), "cuMemcpyHtoD"))
    out = wp.zeros(n, dtype=float, device=gpu)
    wp.launch(square, dim=n, inputs=[y, out], device=gpu)
    np.testing.assert_allclose(out.numpy(), halves * halves, rtol=1e-6)
    assert x.__dlpack_device__() == (2, cuda_ipc.imported_root(x).ordinal)
    imported = cuda_ipc.imported_root(x)
    del x
    import gc

    gc.collect()
    assert imported.address == 0  # freed here before the daemon frees the array
