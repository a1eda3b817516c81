"""wp.Mesh: triangle meshes kept by the daemon, queried in kernels by id.

Every query is checked against numpy brute force over every triangle: ray
casts (hits, misses, rays through shared edges and vertices, axis-parallel
rays, max_t) in both Warp forms (MeshQueryRay and the out-parameter form),
closest points with and without signs (inside, outside and far away, on a
closed sphere and on a closed torus: ray votes, angle-weighted normals and
winding numbers), furthest points, AABB queries, evaluation and getters.
Refit follows moved points (also as a graph replay). Ids are resolved
through each launch's object table: made-up, freed and other kinds' ids
fail the launch clearly; a vertex index the client breaks after the build
faults the launch instead of reading out of bounds.
"""

import numpy as np
import pytest

import warpd as wp


def sphere(r=1.0, rings=16, segs=24, center=(0.0, 0.0, 0.0)):
    pts = [(0.0, 0.0, r)]
    for i in range(1, rings):
        th = np.pi * i / rings
        for j in range(segs):
            ph = 2 * np.pi * j / segs
            pts.append((r * np.sin(th) * np.cos(ph), r * np.sin(th) * np.sin(ph), r * np.cos(th)))
    pts.append((0.0, 0.0, -r))
    south = len(pts) - 1

    def ring(i, j):
        return 1 + (i - 1) * segs + (j % segs)

    tris = [(0, ring(1, j), ring(1, j + 1)) for j in range(segs)]
    for i in range(1, rings - 1):
        for j in range(segs):
            tris.append((ring(i, j), ring(i + 1, j), ring(i + 1, j + 1)))
            tris.append((ring(i, j), ring(i + 1, j + 1), ring(i, j + 1)))
    tris += [(ring(rings - 1, j), south, ring(rings - 1, j + 1)) for j in range(segs)]
    return np.array(pts, np.float32) + np.array(center, np.float32), np.array(tris, np.int32)


def torus(R=1.0, r=0.35, nu=32, nv=16):
    pts = []
    for i in range(nu):
        u = 2 * np.pi * i / nu
        for j in range(nv):
            v = 2 * np.pi * j / nv
            pts.append(((R + r * np.cos(v)) * np.cos(u), (R + r * np.cos(v)) * np.sin(u), r * np.sin(v)))
    tris = []
    for i in range(nu):
        for j in range(nv):
            a, b = i * nv + j, ((i + 1) % nu) * nv + j
            c, d = ((i + 1) % nu) * nv + (j + 1) % nv, i * nv + (j + 1) % nv
            tris += [(a, b, c), (a, c, d)]
    return np.array(pts, np.float32), np.array(tris, np.int32)


def inside_torus(p, R=1.0, r=0.35):
    q = np.hypot(p[..., 0], p[..., 1]) - R
    return np.hypot(q, p[..., 2]) < r


# --- numpy brute force -------------------------------------------------------

def closest_on_triangles(p, a, b, c):
    """Distances from point p to every triangle (a, b, c: (n, 3)), exact in float64."""
    p = p.astype(np.float64)
    a, b, c = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    best = np.full(len(a), np.inf)
    # Projection onto the plane when inside the triangle.
    n = np.cross(b - a, c - a)
    nn = np.einsum("ij,ij->i", n, n)
    t = np.einsum("ij,ij->i", p - a, n) / nn
    q = p - t[:, None] * n
    ok = np.ones(len(a), bool)
    for x, y in ((a, b), (b, c), (c, a)):
        ok &= np.einsum("ij,ij->i", np.cross(y - x, q - x), n) >= 0
    best = np.where(ok, np.linalg.norm(p - q, axis=1), best)
    for x, y in ((a, b), (b, c), (c, a)):
        e = y - x
        s = np.clip(np.einsum("ij,ij->i", p - x, e) / np.einsum("ij,ij->i", e, e), 0, 1)
        best = np.minimum(best, np.linalg.norm(p - (x + s[:, None] * e), axis=1))
    return best


def ray_triangles(s, d, a, b, c):
    """Möller-Trumbore in float64: t of the ray s + t d against every triangle (inf: miss)."""
    s, d = s.astype(np.float64), d.astype(np.float64)
    a, b, c = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, pv)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        tv = s - a
        u = np.einsum("ij,ij->i", tv, pv) * inv
        qv = np.cross(tv, e1)
        v = (qv @ d) * inv
        t = np.einsum("ij,ij->i", e2, qv) * inv
    hit = (det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    return np.where(hit, t, np.inf), np.sign(det)


# --- kernels ----------------------------------------------------------------

@wp.kernel
def cast(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3), max_t: float,
         hit: wp.array(dtype=int), ts: wp.array(dtype=float), faces: wp.array(dtype=int),
         signs: wp.array(dtype=float), uv: wp.array(dtype=wp.vec2), normals: wp.array(dtype=wp.vec3),
         pos: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, starts[i], dirs[i], max_t)
    if q.result:
        hit[i] = 1
        ts[i] = q.t
        faces[i] = q.face
        signs[i] = q.sign
        uv[i] = wp.vec2(q.u, q.v)
        normals[i] = q.normal
        pos[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


@wp.kernel
def cast_out_form(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
                  ts: wp.array(dtype=float), faces: wp.array(dtype=int)):
    i = wp.tid()
    t = float(0.0)
    u = float(0.0)
    v = float(0.0)
    sign = float(0.0)
    n = wp.vec3()
    f = int(0)
    if wp.mesh_query_ray(mesh, starts[i], dirs[i], 1.0e6, t, u, v, sign, n, f):
        ts[i] = t
        faces[i] = f
    else:
        ts[i] = -1.0
        faces[i] = -1


@wp.kernel
def closest(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), max_dist: float, dist: wp.array(dtype=float),
            signs: wp.array(dtype=wp.vec3), nosign: wp.array(dtype=float)):
    i = wp.tid()
    p = pts[i]
    q = wp.mesh_query_point(mesh, p, max_dist)
    if q.result:
        dist[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p)
        qn = wp.mesh_query_point_sign_normal(mesh, p, max_dist)
        qw = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist)
        signs[i] = wp.vec3(q.sign, qn.sign, qw.sign)
    else:
        dist[i] = -1.0
    q2 = wp.mesh_query_point_no_sign(mesh, p, max_dist)
    if q2.result:
        nosign[i] = wp.length(wp.mesh_eval_position(mesh, q2.face, q2.u, q2.v) - p)
    else:
        nosign[i] = -1.0


@wp.kernel
def furthest(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_furthest_point_no_sign(mesh, pts[i], 0.0)
    if q.result:
        out[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - pts[i])


@wp.kernel
def aabb(mesh: wp.uint64, lo: wp.vec3, hi: wp.vec3, hits: wp.array(dtype=int)):
    q = wp.mesh_query_aabb(mesh, lo, hi)
    f = int(0)
    while wp.mesh_query_aabb_next(q, f):
        hits[f] = hits[f] + 1


@wp.kernel
def getters(mesh: wp.uint64, idx: wp.array(dtype=int), pts: wp.array(dtype=wp.vec3),
            vel: wp.array(dtype=wp.vec3), normals: wp.array(dtype=wp.vec3), evel: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    idx[i] = wp.mesh_get_index(mesh, i)
    pts[i] = wp.mesh_get_point(mesh, i)
    vel[i] = wp.mesh_get_velocity(mesh, i)
    if i % 3 == 0:
        normals[i // 3] = wp.mesh_eval_face_normal(mesh, i // 3)
        evel[i // 3] = wp.mesh_eval_velocity(mesh, i // 3, 0.25, 0.5)


@wp.kernel
def one_face(mesh: wp.uint64, face: int, out: wp.array(dtype=wp.vec3)):
    out[0] = wp.mesh_eval_position(mesh, face, 0.3, 0.3)


def make_mesh(pts, tris, **kw):
    return wp.Mesh(wp.array(pts, dtype=wp.vec3), wp.array(tris.ravel(), dtype=wp.int32), **kw)


def run_rays(mesh, starts, dirs, max_t=1.0e6):
    n = len(starts)
    out = [wp.zeros(n, dtype=int), wp.zeros(n, dtype=float), wp.full(n, -1, dtype=int), wp.zeros(n, dtype=float),
           wp.zeros(n, dtype=wp.vec2), wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)]
    wp.launch(cast, dim=n, inputs=[mesh.id, wp.array(starts, dtype=wp.vec3), wp.array(dirs, dtype=wp.vec3),
                                   float(max_t)] + out)
    return [a.numpy() for a in out]


def check_rays(pts, tris, starts, dirs, max_t=1.0e6, **kw):
    mesh = make_mesh(pts, tris, **kw)
    hit, ts, faces, signs, uv, normals, pos = run_rays(mesh, starts, dirs, max_t)
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    nhits = 0
    for i in range(len(starts)):
        t, det = ray_triangles(starts[i], dirs[i], a, b, c)
        t = np.where(t < max_t, t, np.inf)
        best = t.min()
        if not np.isfinite(best):
            assert hit[i] == 0, (i, ts[i])
            continue
        nhits += 1
        assert hit[i] == 1, (i, best)
        np.testing.assert_allclose(ts[i], best, rtol=1e-5, atol=1e-6)
        # The face reported is one at that distance (ties on shared edges: either).
        assert abs(t[faces[i]] - best) <= 1e-5 * max(1.0, best), (i, faces[i])
        np.testing.assert_allclose(pos[i], starts[i] + ts[i] * dirs[i], atol=1e-4)
        f = faces[i]
        n = np.cross(b[f] - a[f], c[f] - a[f])
        np.testing.assert_allclose(normals[i], n / np.linalg.norm(n), atol=1e-5)
        # sign: > 0 when the ray meets the front (normal against the direction).
        assert np.sign(signs[i]) == -np.sign(np.dot(n, dirs[i])), (i, signs[i])
        bary = np.array([uv[i][0], uv[i][1], 1 - uv[i][0] - uv[i][1]])
        assert (bary >= -1e-5).all(), bary
    return mesh, nhits


def test_rays_match_brute_force_on_random_triangles(wp):
    rng = np.random.default_rng(1)
    n = 400
    centers = rng.uniform(-2, 2, (n, 1, 3))
    pts = (centers + rng.uniform(-0.3, 0.3, (n, 3, 3))).reshape(-1, 3).astype(np.float32)
    tris = np.arange(3 * n, dtype=np.int32).reshape(n, 3)
    starts = rng.uniform(-3, 3, (500, 3)).astype(np.float32)
    dirs = rng.normal(size=(500, 3)).astype(np.float32)
    dirs[::7] = [0, 0, 1]  # axis-parallel
    dirs[1::7] = [-1, 0, 0]
    for constructor in ("sah", "median"):
        for leaf in (1, 4, 9):
            _, nhits = check_rays(pts, tris, starts, dirs, bvh_constructor=constructor, bvh_leaf_size=leaf)
            assert 50 < nhits < 500
    # max_t (in multiples of |dir|, strict).
    check_rays(pts, tris, starts, dirs * 2.0, max_t=0.7)


def test_rays_hit_a_closed_sphere_once_and_graze_its_edges(wp):
    pts, tris = sphere(1.0, 12, 16)
    rng = np.random.default_rng(2)
    starts = rng.uniform(-0.5, 0.5, (300, 3)).astype(np.float32)  # inside: every ray hits
    dirs = rng.normal(size=(300, 3)).astype(np.float32)
    mesh, nhits = check_rays(pts, tris, starts, dirs)
    assert nhits == 300
    # From inside every hit is on the faces' back (sign < 0).
    hit, ts, faces, signs, *_ = run_rays(mesh, starts, dirs)
    assert (signs < 0).all()
    # Rays aimed exactly at vertices and edge midpoints (shared by 2+ faces) from
    # outside and inside: always a hit (watertight), at the point aimed at.
    targets = np.concatenate([pts, (pts[tris[:, 0]] + pts[tris[:, 1]]) / 2]).astype(np.float32)
    for origin in (np.zeros(3, np.float32), np.array([0.0, 0.0, 0.0], np.float32) + 0.01):
        d = (targets - origin).astype(np.float32)
        hit, ts, faces, *_ = run_rays(mesh, np.repeat(origin[None], len(d), 0), d)
        assert hit.all()
        np.testing.assert_allclose(ts, 1.0, atol=1e-4)
    # Misses: rays away from the sphere, and rays passing just outside.
    starts = np.array([[3, 0, 0], [0, 3, 0], [0, 0, 3], [1.01, 1.01, -5]], np.float32)
    dirs = np.array([[1, 0, 0], [0, 0, 1], [1, 1, 0], [0, 0, 1]], np.float32)
    hit, *_ = run_rays(mesh, starts, dirs)
    assert not hit.any()


def test_out_parameter_form_matches_the_query_object(wp):
    pts, tris = sphere(1.5, 10, 14)
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(3)
    starts = rng.uniform(-3, 3, (200, 3)).astype(np.float32)
    dirs = rng.normal(size=(200, 3)).astype(np.float32)
    hit, ts, faces, *_ = run_rays(mesh, starts, dirs)
    t2, f2 = wp.zeros(200, dtype=float), wp.zeros(200, dtype=int)
    wp.launch(cast_out_form, dim=200, inputs=[mesh.id, wp.array(starts, dtype=wp.vec3),
                                              wp.array(dirs, dtype=wp.vec3), t2, f2])
    np.testing.assert_array_equal(np.where(hit == 1, ts, -1.0), t2.numpy())
    np.testing.assert_array_equal(np.where(hit == 1, faces, -1), f2.numpy())
    assert 0 < hit.sum() < 200


def run_closest(mesh, q, max_dist=1.0e6):
    n = len(q)
    dist, signs, nosign = wp.zeros(n, dtype=float), wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=float)
    wp.launch(closest, dim=n, inputs=[mesh.id, wp.array(q, dtype=wp.vec3), float(max_dist), dist, signs, nosign])
    return dist.numpy(), signs.numpy(), nosign.numpy()


@pytest.mark.parametrize("shape", ["sphere", "torus"])
def test_closest_points_and_signs_on_closed_meshes(wp, shape):
    if shape == "sphere":
        pts, tris = sphere(1.0, 16, 24, center=(0.2, -0.1, 0.3))
        inside = lambda p: np.linalg.norm(p - [0.2, -0.1, 0.3], axis=-1) < 1.0  # noqa: E731
    else:
        pts, tris = torus()
        inside = inside_torus
    mesh = make_mesh(pts, tris, support_winding_number=True)
    rng = np.random.default_rng(4)
    q = np.concatenate([rng.uniform(-1.6, 1.6, (400, 3)), rng.uniform(-50, 50, (20, 3))]).astype(np.float32)
    dist, signs, nosign = run_closest(mesh, q)
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    want_in = inside(q)
    checked = 0
    for i in range(len(q)):
        want = closest_on_triangles(q[i], a, b, c).min()
        np.testing.assert_allclose(dist[i], want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(nosign[i], want, rtol=1e-4, atol=1e-5)
        if want < 0.02:  # too near the faceted surface to compare with the ideal shape
            continue
        checked += 1
        expect = -1.0 if want_in[i] else 1.0
        np.testing.assert_array_equal(signs[i], [expect] * 3, err_msg=f"point {q[i]}")
    assert checked > 350 and want_in.sum() > 20
    # max_dist is strict and bounds the search: points far away find nothing.
    dist, _, nosign = run_closest(mesh, np.array([[10, 0, 0], [0, 0, 0.5]], np.float32), max_dist=1.0)
    assert dist[0] == -1.0 and nosign[0] == -1.0
    assert (dist[1] >= 0) == (closest_on_triangles(np.array([0, 0, 0.5]), a, b, c).min() < 1.0)


def test_furthest_points_and_aabb_queries(wp):
    pts, tris = sphere(1.0, 8, 12)
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(5)
    q = rng.uniform(-2, 2, (50, 3)).astype(np.float32)
    out = wp.zeros(50, dtype=float)
    wp.launch(furthest, dim=50, inputs=[mesh.id, wp.array(q, dtype=wp.vec3), out])
    want = np.linalg.norm(q[:, None, :] - pts[None], axis=-1).max(axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    tri_lo, tri_hi = pts[tris].min(axis=1), pts[tris].max(axis=1)
    for lo, hi in (((-0.2, -2, 0.1), (0.9, 0.3, 2)), ((5, 5, 5), (6, 6, 6)), ((-2, -2, -2), (2, 2, 2))):
        hits = wp.zeros(len(tris), dtype=int)
        wp.launch(aabb, dim=1, inputs=[mesh.id, wp.vec3(*lo), wp.vec3(*hi), hits])
        want = ((tri_lo <= hi) & (tri_hi >= lo)).all(axis=1).astype(int)
        np.testing.assert_array_equal(hits.numpy(), want)


def test_getters_and_evaluation(wp):
    pts, tris = sphere(2.0, 6, 8)
    vel = np.random.default_rng(6).normal(size=pts.shape).astype(np.float32)
    mesh = make_mesh(pts, tris, velocities=wp.array(vel, dtype=wp.vec3))
    assert mesh.velocities is not None and mesh.points.shape == (len(pts),)
    n = tris.size
    idx, p, v = wp.zeros(n, dtype=int), wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)
    normals, evel = wp.zeros(len(tris), dtype=wp.vec3), wp.zeros(len(tris), dtype=wp.vec3)
    wp.launch(getters, dim=n, inputs=[mesh.id, idx, p, v, normals, evel])
    np.testing.assert_array_equal(idx.numpy(), tris.ravel())
    np.testing.assert_array_equal(p.numpy(), pts[tris.ravel()])
    np.testing.assert_array_equal(v.numpy(), vel[tris.ravel()])
    nrm = np.cross(pts[tris[:, 1]] - pts[tris[:, 0]], pts[tris[:, 2]] - pts[tris[:, 0]])
    np.testing.assert_allclose(normals.numpy(), nrm / np.linalg.norm(nrm, axis=1)[:, None], atol=1e-6)
    want = 0.25 * vel[tris[:, 0]] + 0.5 * vel[tris[:, 1]] + 0.25 * vel[tris[:, 2]]
    np.testing.assert_allclose(evel.numpy(), want, atol=1e-6)


def test_refit_follows_moved_points_also_in_graph_replays(wp):
    pts, tris = sphere(1.0, 10, 12)
    mesh = make_mesh(pts, tris)
    starts = np.array([[5, 0, 0], [5, 0.2, 0.1]], np.float32)
    dirs = np.array([[-1, 0, 0], [-1, 0, 0]], np.float32)
    hit, ts, *_ = run_rays(mesh, starts, dirs)
    assert hit.all() and abs(ts[0] - 4.0) < 1e-5
    # Move the points (+2 in x) in place, then refit.
    mesh.points.assign(pts + np.array([2, 0, 0], np.float32))
    mesh.refit()
    hit, ts, *_ = run_rays(mesh, starts, dirs)
    assert hit.all() and abs(ts[0] - 2.0) < 1e-5
    # A captured refit: each replay refits from the points' current contents.
    with wp.ScopedCapture() as capture:
        mesh.refit()
    mesh.points.assign(pts + np.array([-1, 0, 0], np.float32))
    wp.capture_launch(capture.graph)
    hit, ts, *_ = run_rays(mesh, starts, dirs)
    assert hit.all() and abs(ts[0] - 5.0) < 1e-5


def test_broken_indices_forged_and_freed_ids_fail_safely(wp, serving):
    pts, tris = sphere(1.0, 4, 6)
    indices = wp.array(tris.ravel(), dtype=wp.int32)
    mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3), indices)
    out = wp.zeros(1, dtype=wp.vec3)
    wp.launch(one_face, dim=1, inputs=[mesh.id, 2, out])
    want = 0.3 * pts[tris[2, 0]] + 0.3 * pts[tris[2, 1]] + 0.4 * pts[tris[2, 2]]
    np.testing.assert_allclose(out.numpy()[0], want, atol=1e-6)
    with pytest.raises(wp.KernelError, match=f"index {len(tris)} out of range for a mesh of {len(tris)} triangles"):
        wp.launch(one_face, dim=1, inputs=[mesh.id, len(tris), out])
        wp.synchronize()
    # The client breaks a vertex index after the build: the query faults.
    bad = tris.ravel().copy()
    bad[7] = 1 << 30
    indices.assign(bad)
    with pytest.raises(wp.KernelError, match=f"index {1 << 30} out of range for a mesh of {len(pts)} points"):
        wp.launch(one_face, dim=1, inputs=[mesh.id, 2, out])
        wp.synchronize()
    # ... and a refit reports it.
    with pytest.raises(Exception, match="vertex index 1073741824 out of range"):
        mesh.refit()
        wp.synchronize()
    indices.assign(tris.ravel())
    mesh.refit()
    for forged in (0, 1, mesh.id ^ 1, 2**64 - 1):
        with pytest.raises(wp.KernelError, match=f"unknown mesh id 0x{forged:016x}"):
            wp.launch(one_face, dim=1, inputs=[wp.uint64(forged), 0, out])
            wp.synchronize()
    grid = wp.HashGrid(2, 2, 2)
    with pytest.raises(wp.KernelError, match=f"id 0x{grid.id:016x} is a hash grid, not a mesh"):
        wp.launch(one_face, dim=1, inputs=[wp.uint64(grid.id), 0, out])
        wp.synchronize()
    stale = mesh.id
    del mesh
    with pytest.raises(wp.KernelError, match=f"unknown mesh id 0x{stale:016x}"):
        wp.launch(one_face, dim=1, inputs=[wp.uint64(stale), 0, out])
        wp.synchronize()
    assert serving()


def test_client_side_checks_match_warp(wp):
    p = wp.zeros(3, dtype=wp.vec3)
    with pytest.raises(RuntimeError, match="Mesh points should be a contiguous array of type wp.vec3"):
        wp.Mesh(wp.zeros(3, dtype=float), wp.zeros(3, dtype=wp.int32))
    with pytest.raises(RuntimeError, match="Mesh indices should be a contiguous array of type wp.int32"):
        wp.Mesh(p, wp.zeros(3, dtype=float))
    with pytest.raises(RuntimeError, match="flattened 1d array"):
        wp.Mesh(p, wp.zeros((1, 3), dtype=wp.int32))
    with pytest.raises(ValueError, match="bvh_leaf_size must be greater than or equal to 1"):
        wp.Mesh(p, wp.zeros(3, dtype=wp.int32), bvh_leaf_size=0)


@wp.kernel
def count_and_any(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3), max_t: float,
                  counts: wp.array(dtype=int), anyhit: wp.array(dtype=int)):
    i = wp.tid()
    counts[i] = wp.mesh_query_ray_count_intersections(mesh, starts[i], dirs[i])
    anyhit[i] = wp.where(wp.mesh_query_ray_anyhit(mesh, starts[i], dirs[i], max_t), 1, 0)


def test_ray_counts_and_any_hits_match_brute_force(wp):
    rng = np.random.default_rng(9)
    n = 300
    centers = rng.uniform(-2, 2, (n, 1, 3))
    pts = (centers + rng.uniform(-0.4, 0.4, (n, 3, 3))).reshape(-1, 3).astype(np.float32)
    tris = np.arange(3 * n, dtype=np.int32).reshape(n, 3)
    mesh = make_mesh(pts, tris)
    starts = rng.uniform(-3, 3, (200, 3)).astype(np.float32)
    dirs = rng.normal(size=(200, 3)).astype(np.float32)
    counts, anyhit = wp.zeros(200, dtype=int), wp.zeros(200, dtype=int)
    wp.launch(count_and_any, dim=200, inputs=[mesh.id, wp.array(starts, dtype=wp.vec3), wp.array(dirs, dtype=wp.vec3),
                                              1.5, counts, anyhit])
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    want_counts = np.array([np.isfinite(ray_triangles(starts[i], dirs[i], a, b, c)[0]).sum() for i in range(200)])
    want_any = np.array([(ray_triangles(starts[i], dirs[i], a, b, c)[0] < 1.5).any() for i in range(200)])
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    np.testing.assert_array_equal(anyhit.numpy(), want_any.astype(int))
    assert want_counts.max() >= 3 and 0 < want_any.sum() < 200
    # A closed sphere: a ray through it from outside crosses twice, from inside once
    # (rays through shared edges or vertices may count each face they touch, as in Warp).
    pts, tris = sphere(1.0, 12, 16)
    mesh = make_mesh(pts, tris)
    inner = rng.uniform(-0.4, 0.4, (200, 3)).astype(np.float32)
    starts = np.concatenate([np.full((200, 3), 5.0), np.zeros((200, 3))]).astype(np.float32)
    dirs = np.concatenate([inner - 5.0, rng.normal(size=(200, 3))]).astype(np.float32)
    counts, anyhit = wp.zeros(400, dtype=int), wp.zeros(400, dtype=int)
    wp.launch(count_and_any, dim=400, inputs=[mesh.id, wp.array(starts, dtype=wp.vec3), wp.array(dirs, dtype=wp.vec3),
                                              1.0e6, counts, anyhit])
    got = counts.numpy()
    assert (got[:200] == 2).all(), np.unique(got[:200], return_counts=True)
    assert (got[200:] == 1).all(), np.unique(got[200:], return_counts=True)
    assert anyhit.numpy().all()


@wp.kernel
def aabb_for_loop(mesh: wp.uint64, lo: wp.vec3, hi: wp.vec3, hits: wp.array(dtype=int)):
    for f in wp.mesh_query_aabb(mesh, lo, hi):
        hits[f] = hits[f] + 1


def test_aabb_query_as_a_for_loop(wp):
    pts, tris = torus()
    mesh = make_mesh(pts, tris)
    tri_lo, tri_hi = pts[tris].min(axis=1), pts[tris].max(axis=1)
    lo, hi = np.array([0.2, -0.5, -1.0]), np.array([1.5, 0.4, 0.1])
    hits = wp.zeros(len(tris), dtype=int)
    wp.launch(aabb_for_loop, dim=1, inputs=[mesh.id, wp.vec3(*lo), wp.vec3(*hi), hits])
    want = ((tri_lo <= hi) & (tri_hi >= lo)).all(axis=1).astype(int)
    np.testing.assert_array_equal(hits.numpy(), want)
    assert 0 < want.sum() < len(tris)
