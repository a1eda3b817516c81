"""More of wp.Mesh and wp.Bvh: sphere queries, erased query types, mesh_get and
mesh_get_bvh, grouped trees, replacing a mesh's points, and parity signs.

Every result is checked against numpy brute force over every triangle or box:
sphere queries against exact point-triangle distances (with a small band
for float32 rounding), a mesh's tree as a BVH against the triangles' boxes,
group roots against the items of each group, parity signs against the
closed-form inside of a sphere and a torus. Ids are resolved through the
launch's object table: a mesh's tree id dies with the mesh.
"""

import numpy as np
import pytest

import warpd as wp
from test_mesh import closest_on_triangles, inside_torus, make_mesh, sphere, torus


def random_triangles(rng, n=2000, spread=8.0, size=0.4):
    centers = rng.random((n, 1, 3)) * spread
    pts = (centers + (rng.random((n, 3, 3)) - 0.5) * size).reshape(-1, 3).astype(np.float32)
    return pts, np.arange(3 * n, dtype=np.int32).reshape(n, 3)


# --- sphere queries -----------------------------------------------------------

@wp.kernel
def sphere_while(mesh: wp.uint64, center: wp.vec3, radius: float, hits: wp.array(dtype=int)):
    q = wp.mesh_query_sphere(mesh, center, radius)
    f = int(0)
    while wp.mesh_query_next(q, f):
        hits[f] = hits[f] + 1


@wp.kernel
def sphere_for(mesh: wp.uint64, center: wp.vec3, radius: float, hits: wp.array(dtype=int)):
    for f in wp.mesh_query_sphere(mesh, center, radius):
        hits[f] = hits[f] + 1


@wp.kernel
def sphere_alias(mesh: wp.uint64, center: wp.vec3, radius: float, hits: wp.array(dtype=int)):
    q = wp.mesh_query_sphere(mesh, center, radius)
    f = int(0)
    while wp.mesh_query_aabb_next(q, f):
        hits[f] = hits[f] + 1


def test_sphere_queries_report_exactly_the_faces_within_the_radius(wp):
    rng = np.random.default_rng(4)
    pts, tris = random_triangles(rng)
    mesh = make_mesh(pts, tris)
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    eps = 1e-4
    total = 0
    for _ in range(12):
        center = (rng.random(3) * 8.0).astype(np.float32)
        radius = float(rng.random() * 0.9 + 0.1)
        dist = closest_on_triangles(center, a, b, c)
        for kernel in (sphere_while, sphere_for, sphere_alias):
            hits = wp.zeros(len(tris), dtype=int)
            wp.launch(kernel, dim=1, inputs=[mesh.id, wp.vec3(*center), radius, hits])
            got = hits.numpy()
            assert got.max() <= 1  # each face once
            assert not (got.astype(bool) & (dist > radius + eps)).any(), "a face farther than the radius"
            assert not ((dist <= radius - eps) & ~got.astype(bool)).any(), "a face within the radius missed"
        total += int((dist <= radius).sum())
    assert total > 40
    # Radius 0: only faces through the center (a point inside a face's box but off the face: none).
    one = make_mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32), np.array([[0, 1, 2]], np.int32))
    for center, want in (((0.25, 0.25, 0.0), 1), ((0.9, 0.9, 0.0), 0), ((0.25, 0.25, 1e-3), 0)):
        hits = wp.zeros(1, dtype=int)
        wp.launch(sphere_for, dim=1, inputs=[one.id, wp.vec3(*center), 0.0, hits])
        assert hits.numpy()[0] == want, center


# --- erased query types ---------------------------------------------------------

@wp.kernel
def mesh_runtime_kind(mesh: wp.uint64, use_sphere: bool, lo: wp.vec3, hi: wp.vec3, center: wp.vec3, radius: float,
                      hits: wp.array(dtype=int)):
    if use_sphere:
        q = wp.mesh_query_sphere(mesh, center, radius)
    else:
        q = wp.mesh_query_aabb(mesh, lo, hi)
    f = int(0)
    while wp.mesh_query_next(q, f):
        hits[f] = hits[f] + 1


@wp.func
def collect_faces(q: wp.MeshQuery, hits: wp.array(dtype=int)):
    f = int(0)
    while wp.mesh_query_next(q, f):
        hits[f] = hits[f] + 1


@wp.kernel
def mesh_erased_param(mesh: wp.uint64, use_sphere: bool, lo: wp.vec3, hi: wp.vec3, center: wp.vec3, radius: float,
                      hits: wp.array(dtype=int)):
    if use_sphere:
        collect_faces(wp.mesh_query_sphere(mesh, center, radius), hits)
    else:
        collect_faces(wp.mesh_query_aabb(mesh, lo, hi), hits)


@wp.kernel
def bvh_runtime_kind(bvh: wp.uint64, kind: int, lo: wp.vec3, hi: wp.vec3, start: wp.vec3, d: wp.vec3,
                     radius: float, hits: wp.array(dtype=int)):
    if kind == 0:
        q = wp.bvh_query_aabb(bvh, lo, hi)
    elif kind == 1:
        q = wp.bvh_query_ray(bvh, start, d)
    elif kind == 2:
        q = wp.bvh_query_sphere(bvh, start, radius)
    else:
        q = wp.bvh_query_capsule(bvh, start, d, radius)
    i = int(0)
    while wp.bvh_query_next(q, i, 1.0):
        hits[i] = hits[i] + 1


@wp.func
def collect_items(q: wp.BvhQuery, hits: wp.array(dtype=int)):
    i = int(0)
    while wp.bvh_query_next(q, i, 1.0):
        hits[i] = hits[i] + 1


@wp.kernel
def bvh_erased_param(bvh: wp.uint64, start: wp.vec3, d: wp.vec3, hits: wp.array(dtype=int)):
    collect_items(wp.bvh_query_ray(bvh, start, d), hits)


def slab(start, d, lo, hi, closed=False):
    """Warp's ray/box slab test per box in float64, entry t < 1 (max_dist 1; closed: t <= 1,
    the capsule's test)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t1, t2 = (lo - start) * inv, (hi - start) * inv
    tmin = np.fmax.reduce(np.fmin(t1, t2), axis=1)
    tmax = np.fmin.reduce(np.fmax(t1, t2), axis=1)
    return (tmax >= 0) & (tmax >= tmin) & ((tmin <= 1.0) if closed else (tmin < 1.0))


def test_erased_queries_advance_as_the_kind_they_were_made(wp):
    rng = np.random.default_rng(5)
    pts, tris = random_triangles(rng)
    mesh = make_mesh(pts, tris)
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    lo, hi = np.array([2.0, 2.0, 2.0]), np.array([5.0, 6.0, 5.5])
    center, radius = np.array([4.0, 4.0, 4.0], np.float32), 1.5
    tri_lo, tri_hi = pts[tris].min(axis=1), pts[tris].max(axis=1)
    want_box = ((tri_lo <= hi) & (tri_hi >= lo)).all(axis=1)
    dist = closest_on_triangles(center, a, b, c)
    for kernel in (mesh_runtime_kind, mesh_erased_param):
        for use_sphere in (True, False):
            hits = wp.zeros(len(tris), dtype=int)
            wp.launch(kernel, dim=1, inputs=[mesh.id, use_sphere, wp.vec3(*lo), wp.vec3(*hi), wp.vec3(*center),
                                             radius, hits])
            got = hits.numpy().astype(bool)
            if use_sphere:
                assert not (got & (dist > radius + 1e-4)).any() and not ((dist <= radius - 1e-4) & ~got).any()
            else:
                np.testing.assert_array_equal(got, want_box)
    # BVH: four kinds picked at run time, and a ray through a wp.BvhQuery parameter.
    n = 300
    blo = (rng.random((n, 3)) * 5.0).astype(np.float32)
    bhi = (blo + rng.random((n, 3)) * 1.5).astype(np.float32)
    bvh = wp.Bvh(wp.array(blo, dtype=wp.vec3), wp.array(bhi, dtype=wp.vec3))
    start, d, r = np.array([0.5, 0.2, 0.1], np.float32), np.array([5.0, 4.0, 6.0], np.float32), 0.75
    lo64, hi64 = blo.astype(np.float64), bhi.astype(np.float64)
    gap = np.maximum(np.maximum(lo64 - start, start - hi64), 0.0)
    s64, d64 = start.astype(np.float64), d.astype(np.float64)
    want = {
        0: ((blo <= hi) & (bhi >= lo)).all(axis=1),
        1: slab(s64, d64, lo64, hi64),
        2: (gap ** 2).sum(axis=1) <= r * r,
        3: slab(s64, d64, lo64 - r, hi64 + r, closed=True),  # the segment against boxes grown by r
    }
    for kind in (0, 1, 2, 3):
        hits = wp.zeros(n, dtype=int)
        wp.launch(bvh_runtime_kind, dim=1, inputs=[bvh.id, kind, wp.vec3(*lo), wp.vec3(*hi), wp.vec3(*start),
                                                   wp.vec3(*d), r, hits])
        got = hits.numpy().astype(bool)
        np.testing.assert_array_equal(got, want[kind])
        assert 0 < got.sum() < n
    hits = wp.zeros(n, dtype=int)
    wp.launch(bvh_erased_param, dim=1, inputs=[bvh.id, wp.vec3(*start), wp.vec3(*d), hits])
    np.testing.assert_array_equal(hits.numpy().astype(bool), want[1])


# --- mesh_get and mesh_get_bvh --------------------------------------------------

@wp.kernel
def read_mesh(mesh_id: wp.uint64, pts: wp.array(dtype=wp.vec3), idx: wp.array(dtype=int),
              vel: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    m = wp.mesh_get(mesh_id)
    if i < m.points.shape[0]:
        pts[i] = m.points[i]
    if i < m.velocities.shape[0]:
        vel[i] = m.velocities[i]
    idx[i] = m.indices[i]


@wp.kernel
def read_point(mesh_id: wp.uint64, i: int, out: wp.array(dtype=wp.vec3)):
    out[0] = wp.mesh_get(mesh_id).points[i]


@wp.kernel
def tree_sphere(mesh_id: wp.uint64, center: wp.vec3, radius: float, hits: wp.array(dtype=int)):
    bvh = wp.mesh_get_bvh(mesh_id)
    q = wp.bvh_query_sphere(bvh, center, radius)
    i = int(0)
    while wp.bvh_query_next(q, i):
        hits[i] = hits[i] + 1


@wp.kernel
def bvh_sphere(bvh: wp.uint64, center: wp.vec3, radius: float, hits: wp.array(dtype=int)):
    q = wp.bvh_query_sphere(bvh, center, radius)
    i = int(0)
    while wp.bvh_query_next(q, i):
        hits[i] = hits[i] + 1


@wp.kernel
def tree_id(mesh_id: wp.uint64, out: wp.array(dtype=wp.uint64)):
    out[0] = wp.mesh_get_bvh(mesh_id)


def test_mesh_get_exposes_the_arrays_and_mesh_get_bvh_the_tree(wp, serving):
    pts, tris = torus()
    vel = np.random.default_rng(6).normal(size=pts.shape).astype(np.float32)
    mesh = make_mesh(pts, tris, velocities=wp.array(vel, dtype=wp.vec3))
    n = 3 * len(tris)
    out_p, out_i, out_v = wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=int), wp.zeros(n, dtype=wp.vec3)
    wp.launch(read_mesh, dim=n, inputs=[mesh.id, out_p, out_i, out_v])
    np.testing.assert_array_equal(out_p.numpy()[: len(pts)], pts)
    np.testing.assert_array_equal(out_v.numpy()[: len(pts)], vel)
    np.testing.assert_array_equal(out_i.numpy(), tris.ravel())
    # The arrays are bounds-checked like any array.
    out = wp.zeros(1, dtype=wp.vec3)
    with pytest.raises(wp.KernelError, match="out of"):
        wp.launch(read_point, dim=1, inputs=[mesh.id, len(pts), out])
        wp.synchronize()
    # The mesh's tree as a BVH: its items are the faces, their boxes the triangles'.
    rng = np.random.default_rng(7)
    tri_lo, tri_hi = pts[tris].min(axis=1), pts[tris].max(axis=1)
    for _ in range(6):
        center = rng.uniform(-1.5, 1.5, 3).astype(np.float32)
        radius = float(rng.uniform(0.1, 0.8))
        hits = wp.zeros(len(tris), dtype=int)
        wp.launch(tree_sphere, dim=1, inputs=[mesh.id, wp.vec3(*center), radius, hits])
        cp = np.clip(center, tri_lo, tri_hi)
        np.testing.assert_array_equal(hits.numpy(), (((center - cp) ** 2).sum(axis=1) <= radius * radius).astype(int))
    ids = wp.zeros(1, dtype=wp.uint64)
    wp.launch(tree_id, dim=1, inputs=[mesh.id, ids])
    tree = int(ids.numpy()[0])
    assert tree not in (0, mesh.id)
    hits = wp.zeros(len(tris), dtype=int)
    wp.launch(bvh_sphere, dim=1, inputs=[wp.uint64(tree), wp.vec3(1.0, 0.0, 0.0), 0.3, hits])
    cp = np.clip(np.array([1.0, 0.0, 0.0], np.float32), tri_lo, tri_hi)
    want = ((np.array([1.0, 0.0, 0.0]) - cp) ** 2).sum(axis=1) <= 0.09
    np.testing.assert_array_equal(hits.numpy(), want.astype(int))
    # The tree is no mesh, and its id dies with the mesh (also when the launch follows the free at once).
    with pytest.raises(wp.KernelError, match=f"id 0x{tree:016x} is a BVH, not a mesh"):
        wp.launch(tree_sphere, dim=1, inputs=[wp.uint64(tree), wp.vec3(0.0, 0.0, 0.0), 1.0, hits])
        wp.synchronize()
    del mesh
    with pytest.raises(wp.KernelError, match=f"unknown BVH id 0x{tree:016x}"):
        wp.launch(bvh_sphere, dim=1, inputs=[wp.uint64(tree), wp.vec3(0.0, 0.0, 0.0), 1.0, hits])
        wp.synchronize()
    assert serving()


# --- grouped trees --------------------------------------------------------------

@wp.kernel
def group_roots(tree: wp.uint64, is_mesh: bool, groups: wp.array(dtype=int), roots: wp.array(dtype=int)):
    i = wp.tid()
    if is_mesh:
        roots[i] = wp.mesh_get_group_root(tree, groups[i])
    else:
        roots[i] = wp.bvh_get_group_root(tree, groups[i])


@wp.kernel
def box_from_roots(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, roots: wp.array(dtype=int), hits: wp.array2d(dtype=int)):
    g = wp.tid()
    q = wp.bvh_query_aabb(bvh, lo, hi, roots[g])
    i = int(0)
    while wp.bvh_query_next(q, i):
        hits[g, i] = hits[g, i] + 1


@wp.kernel
def ray_from_root(mesh: wp.uint64, start: wp.vec3, d: wp.vec3, root: int, faces: wp.array(dtype=int)):
    q = wp.mesh_query_ray(mesh, start, d, 1.0e6, root)
    if q.result:
        faces[0] = q.face
    else:
        faces[0] = -1


def test_grouped_trees_give_each_group_its_own_subtree(wp):
    rng = np.random.default_rng(8)
    n = 500
    lo = (rng.random((n, 3)) * 6.0).astype(np.float32)
    hi = (lo + rng.random((n, 3))).astype(np.float32)
    group_of = rng.choice(np.array([-3, 0, 2, 7, 1000]), size=n).astype(np.int32)
    asked = np.array([-3, 0, 2, 7, 1000, 1, 5, -1], np.int32)
    for leaf_size, constructor in ((1, "sah"), (4, "median"), (2, "sah")):
        bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), constructor=constructor,
                     groups=wp.array(group_of, dtype=wp.int32), leaf_size=leaf_size)
        roots = wp.zeros(len(asked), dtype=int)
        wp.launch(group_roots, dim=len(asked), inputs=[bvh.id, False, wp.array(asked, dtype=int), roots])
        r = roots.numpy()
        assert (r[:5] >= 0).all() and len(set(r[:5])) == 5 and (r[5:] == -1).all(), r
        qlo, qhi = np.array([1.0, 1.0, 1.0]), np.array([5.0, 4.0, 5.0])
        hits = wp.zeros((5, n), dtype=int)
        wp.launch(box_from_roots, dim=5, inputs=[bvh.id, wp.vec3(*qlo), wp.vec3(*qhi), roots, hits])
        overlap = ((lo <= qhi) & (hi >= qlo)).all(axis=1)
        want = ((group_of[None, :] == asked[:5, None]) & overlap[None, :]).astype(int)
        np.testing.assert_array_equal(hits.numpy(), want)
    # Ungrouped: every item is of group 0 (the root); other groups have none.
    plain = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    roots = wp.zeros(2, dtype=int)
    wp.launch(group_roots, dim=2, inputs=[plain.id, False, wp.array([0, 1], dtype=int), roots])
    assert roots.numpy().tolist() == [0, -1]
    # A grouped mesh: a ray from a group's root sees that group's faces only.
    pts, tris = sphere(1.0, 10, 12)
    upper = (pts[tris].mean(axis=1)[:, 2] > 0).astype(np.int32)  # group 1: the upper half
    mesh = make_mesh(pts, tris, groups=wp.array(upper, dtype=wp.int32), bvh_leaf_size=2)
    roots = wp.zeros(2, dtype=int)
    wp.launch(group_roots, dim=2, inputs=[mesh.id, True, wp.array([0, 1], dtype=int), roots])
    faces = wp.zeros(1, dtype=int)
    for root, want_group in ((int(roots.numpy()[0]), 0), (int(roots.numpy()[1]), 1), (-1, 1)):
        wp.launch(ray_from_root, dim=1, inputs=[mesh.id, wp.vec3(0.05, 0.02, 3.0), wp.vec3(0.0, 0.0, -1.0), root,
                                                faces])
        f = int(faces.numpy()[0])
        assert f >= 0 and upper[f] == want_group, (root, f)
    with pytest.raises(RuntimeError, match="groups must have the same length as indices / 3"):
        make_mesh(pts, tris, groups=wp.zeros(len(tris) + 1, dtype=wp.int32))
    with pytest.raises(RuntimeError, match="Grouped BVHs are not supported with constructor='cubql'"):
        wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), constructor="cubql",
               groups=wp.array(group_of, dtype=wp.int32))
    with pytest.raises(RuntimeError, match="groups should be a contiguous array of type wp.int32"):
        wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), groups=wp.zeros(n, dtype=float))


# --- points setter and parity signs -----------------------------------------------

@wp.kernel
def parity(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), n_sample: int, signs: wp.array(dtype=float),
           dist: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_sign_parity(mesh, pts[i], 1.0e6, n_sample, 0.1)
    if q.result:
        signs[i] = q.sign
        dist[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - pts[i])


def test_parity_signs_and_replaced_points(wp):
    rng = np.random.default_rng(10)
    pts, tris = torus()
    mesh = make_mesh(pts, tris)
    q = rng.uniform(-1.6, 1.6, (400, 3)).astype(np.float32)
    q[:, 2] *= 0.4
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    dist_ref = np.array([closest_on_triangles(p, a, b, c).min() for p in q])
    keep = dist_ref > 0.02  # off the surface (the tessellation differs from the torus there)
    for n_sample in (1, 3, 5):
        signs, dist = wp.zeros(len(q), dtype=float), wp.zeros(len(q), dtype=float)
        wp.launch(parity, dim=len(q), inputs=[mesh.id, wp.array(q, dtype=wp.vec3), n_sample, signs, dist])
        want = np.where(inside_torus(q), -1.0, 1.0)
        np.testing.assert_allclose(dist.numpy(), dist_ref, atol=1e-5)
        mismatch = (signs.numpy() != want) & keep & (np.abs(np.hypot(np.hypot(q[:, 0], q[:, 1]) - 1.0, q[:, 2])
                                                            - 0.35) > 0.03)
        assert mismatch.sum() == 0, q[mismatch]
    # n_sample <= 0 casts no ray: inside.
    signs = wp.zeros(len(q), dtype=float)
    wp.launch(parity, dim=len(q), inputs=[mesh.id, wp.array(q, dtype=wp.vec3), 0, signs, wp.zeros(len(q), dtype=float)])
    assert (signs.numpy() == -1.0).all()
    # mesh.points = new points: the tree follows them (a refit in stream order).
    moved = pts + np.array([5.0, 0.0, 0.0], np.float32)
    mesh.points = wp.array(moved, dtype=wp.vec3)
    signs, dist = wp.zeros(2, dtype=float), wp.zeros(2, dtype=float)
    probe = np.array([[6.0, 0.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
    wp.launch(parity, dim=2, inputs=[mesh.id, wp.array(probe, dtype=wp.vec3), 3, signs, dist])
    assert signs.numpy().tolist() == [-1.0, 1.0]
    np.testing.assert_allclose(dist.numpy(), [0.35, 4.0 - 1.35], atol=2e-2)
    assert mesh.points.numpy()[0, 0] == moved[0, 0]
    with pytest.raises(RuntimeError, match="must have the same shape"):
        mesh.points = wp.zeros(len(pts) + 1, dtype=wp.vec3)


# --- gradients ------------------------------------------------------------------

def central_differences(f, x, eps=1e-6):
    """d f / d x by central differences, element by element (x is not changed)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (f(up) - f(down)) / (2 * eps)
    return g


def launched_loss(kernel, mesh, *points, w):
    """The one-element loss `kernel` writes for the vec3 inputs `points` (numpy) and weight w."""
    out = wp.zeros(1, dtype=float)
    wp.launch(kernel, dim=1, inputs=[mesh.id, *[wp.array(p, dtype=wp.vec3) for p in points], w, out])
    return float(out.numpy()[0])


@wp.kernel
def closest_loss(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), w: wp.vec3, loss: wp.array(dtype=float)):
    i = wp.tid()
    p = pts[i]
    sign = float(0.0)
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    wp.mesh_query_point(mesh, p, 1.0e6, sign, face, u, v)
    q = wp.mesh_eval_position(mesh, face, u, v)
    face2 = int(0)
    u2 = float(0.0)
    v2 = float(0.0)
    wp.mesh_query_point_no_sign(mesh, p, 1.0e6, face2, u2, v2)
    vel = wp.mesh_eval_velocity(mesh, face2, u2, v2)
    wp.atomic_add(loss, 0, wp.length(p - q) + wp.dot(w, vel))


@wp.kernel
def closest_loss_value(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), w: wp.vec3, loss: wp.array(dtype=float)):
    # The query-value forms (MeshQueryPoint): every signed variant's closest point.
    i = wp.tid()
    p = pts[i]
    q = wp.mesh_query_point(mesh, p, 1.0e6)
    x = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
    q2 = wp.mesh_query_point_no_sign(mesh, p, 1.0e6)
    vel = wp.mesh_eval_velocity(mesh, q2.face, q2.u, q2.v)
    q3 = wp.mesh_query_point_sign_normal(mesh, p, 1.0e6)
    x3 = wp.mesh_eval_position(mesh, q3.face, q3.u, q3.v)
    q4 = wp.mesh_query_point_sign_winding_number(mesh, p, 1.0e6)
    x4 = wp.mesh_eval_position(mesh, q4.face, q4.u, q4.v)
    q5 = wp.mesh_query_point_sign_parity(mesh, p, 1.0e6)
    x5 = wp.mesh_eval_position(mesh, q5.face, q5.u, q5.v)
    loss_i = wp.length(p - x) + 0.3 * wp.length(p - x3) + 0.2 * wp.length(p - x4) + 0.1 * wp.length(p - x5)
    wp.atomic_add(loss, 0, loss_i + wp.dot(w, vel))


@pytest.mark.parametrize("kernel", [closest_loss, closest_loss_value], ids=["out_forms", "value_forms"])
def test_point_query_gradients_match_finite_differences(wp, kernel):
    # A closed torus with velocities that vary smoothly over it; query points off the
    # surface near face interiors, edges and vertices (the three Voronoi regions).
    pts, tris = torus()
    vel = np.stack([np.sin(2 * pts[:, 0]), pts[:, 1] * pts[:, 2], np.cos(pts[:, 2])], axis=1).astype(np.float32)
    mesh = make_mesh(pts, tris, velocities=wp.array(vel, dtype=wp.vec3))
    rng = np.random.default_rng(13)

    def off_surface(u, v, h):  # the torus (R 1, r 0.35) grown by h, at angles u, v
        return np.stack([(1.0 + (0.35 + h) * np.cos(v)) * np.cos(u), (1.0 + (0.35 + h) * np.cos(v)) * np.sin(u),
                         (0.35 + h) * np.sin(v)], axis=1)

    du, dv = 2 * np.pi / 32, 2 * np.pi / 16  # torus()'s vertex spacing
    iu, iv = rng.integers(0, 32, 12), rng.integers(0, 16, 12)
    h = rng.uniform(0.05, 0.25, 12)
    q = np.concatenate([
        off_surface(rng.uniform(0, 2 * np.pi, 4), rng.uniform(0, 2 * np.pi, 4), h[:4]),  # over faces
        off_surface(iu[4:8] * du, iv[4:8] * dv, h[4:8]),                                  # over vertices
        off_surface((iu[8:] + 0.5) * du, iv[8:] * dv, h[8:]),                             # over edges
        np.array([[50.0, 50.0, 50.0]]),                                                   # far (Warp's test point)
    ]).astype(np.float32)
    w = wp.vec3(0.3, -0.7, 0.5)
    for i in range(len(q)):
        x = wp.array(q[i:i + 1], dtype=wp.vec3, requires_grad=True)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=1, inputs=[mesh.id, x, w, loss])
        tape.backward(loss=loss)
        analytic = x.grad.numpy()[0]
        numeric = central_differences(lambda y: launched_loss(kernel, mesh, y, w=w), q[i:i + 1], eps=1e-3)[0]
        np.testing.assert_allclose(analytic, numeric, atol=2e-2, rtol=2e-2, err_msg=f"point {i}: {q[i]}")
        assert np.linalg.norm(analytic) > 0.1


@wp.kernel
def out_forms(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), got: wp.array2d(dtype=float),
              want: wp.array2d(dtype=float)):
    i = wp.tid()
    p = pts[i]
    s = float(0.0)
    f = int(0)
    u = float(0.0)
    v = float(0.0)
    wp.mesh_query_point_sign_normal(mesh, p, 1.0e6, s, f, u, v)
    q = wp.mesh_query_point_sign_normal(mesh, p, 1.0e6)
    got[i, 0] = s
    want[i, 0] = q.sign
    got[i, 1] = float(f) + u + v
    want[i, 1] = float(q.face) + q.u + q.v
    wp.mesh_query_point_sign_winding_number(mesh, p, 1.0e6, s, f, u, v, 2.0, 0.5)
    q = wp.mesh_query_point_sign_winding_number(mesh, p, 1.0e6, 2.0, 0.5)
    got[i, 2] = s
    want[i, 2] = q.sign
    wp.mesh_query_point_sign_parity(mesh, p, 1.0e6, s, f, u, v, 3, 0.1)
    q = wp.mesh_query_point_sign_parity(mesh, p, 1.0e6, 3, 0.1)
    got[i, 3] = s
    want[i, 3] = q.sign
    wp.mesh_query_furthest_point_no_sign(mesh, p, 0.0, f, u, v)
    q = wp.mesh_query_furthest_point_no_sign(mesh, p, 0.0)
    got[i, 4] = wp.length(wp.mesh_eval_position(mesh, f, u, v) - p)
    want[i, 4] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p)


def test_out_parameter_forms_of_the_signed_and_furthest_queries(wp):
    pts, tris = torus()
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(14)
    q = rng.uniform(-1.6, 1.6, (300, 3)).astype(np.float32)
    q[:, 2] *= 0.4
    got, want = wp.zeros((300, 5), dtype=float), wp.zeros((300, 5), dtype=float)
    wp.launch(out_forms, dim=300, inputs=[mesh.id, wp.array(q, dtype=wp.vec3), got, want])
    got, want = got.numpy(), want.numpy()
    np.testing.assert_array_equal(got, want)
    # The signs against the torus (away from its surface), the furthest distance against the vertices.
    tube = np.abs(np.hypot(np.hypot(q[:, 0], q[:, 1]) - 1.0, q[:, 2]) - 0.35) > 0.03
    inside = np.where(inside_torus(q), -1.0, 1.0)
    for k in (0, 2, 3):  # sign_normal, winding number, parity
        np.testing.assert_array_equal(got[tube, k], inside[tube])
    far = np.linalg.norm(q[:, None, :] - pts[None, :, :], axis=2).max(axis=1)
    np.testing.assert_allclose(got[:, 4], far, rtol=1e-5)


@wp.kernel
def ray_loss(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3), w: wp.vec3,
             loss: wp.array(dtype=float)):
    i = wp.tid()
    t = float(0.0)
    u = float(0.0)
    v = float(0.0)
    sign = float(0.0)
    n = wp.vec3()
    face = int(0)
    if wp.mesh_query_ray(mesh, starts[i], dirs[i], 1.0e6, t, u, v, sign, n, face):
        x = wp.mesh_eval_position(mesh, face, u, v)
        wp.atomic_add(loss, 0, wp.dot(w, x) + 0.5 * t)


@wp.kernel
def ray_loss_value(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3), w: wp.vec3,
                   loss: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, starts[i], dirs[i], 1.0e6)
    if q.result:
        x = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        wp.atomic_add(loss, 0, wp.dot(w, x) + 0.5 * q.t)


@pytest.mark.parametrize("kernel", [ray_loss, ray_loss_value], ids=["out_form", "value_form"])
def test_ray_query_gradients_match_finite_differences(wp, kernel):
    pts, tris = torus()
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(15)
    starts = np.concatenate([rng.uniform(-0.5, 0.5, (6, 3)) + [0, 0, 3.0], [[50.0, 50.0, 0.03]]]).astype(np.float32)
    targets = np.concatenate([rng.uniform(-1.2, 1.2, (6, 3)) * [1, 1, 0.1], [[1.0, 0.3, 0.05]]])  # off the z = 0 edges
    dirs = (targets - starts).astype(np.float32)
    w = wp.vec3(1.0, -0.4, 0.7)
    hits = 0
    for i in range(len(starts)):
        s = wp.array(starts[i:i + 1], dtype=wp.vec3, requires_grad=True)
        d = wp.array(dirs[i:i + 1], dtype=wp.vec3, requires_grad=True)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=1, inputs=[mesh.id, s, d, w, loss])
        if loss.numpy()[0] == 0.0:
            continue  # a miss: nothing to differentiate
        hits += 1
        tape.backward(loss=loss)
        start, direction = starts[i:i + 1], dirs[i:i + 1]
        for which, arr, numeric in (
                ("start", s, central_differences(lambda y: launched_loss(kernel, mesh, y, direction, w=w), start,
                                                 eps=1e-3)[0]),
                ("dir", d, central_differences(lambda y: launched_loss(kernel, mesh, start, y, w=w), direction,
                                               eps=1e-3)[0])):
            np.testing.assert_allclose(arr.grad.numpy()[0], numeric, atol=2e-2, rtol=2e-2,
                                       err_msg=f"ray {i}, d loss / d {which}")
    assert hits >= 5


@wp.kernel
def eval_velocity(mesh: wp.uint64, face: int, out: wp.array(dtype=wp.vec3)):
    out[0] = wp.mesh_eval_velocity(mesh, face, 0.2, 0.3)


def test_velocities_setter_replaces_the_velocities(wp):
    pts, tris = sphere(1.0, 4, 6)
    mesh = make_mesh(pts, tris, velocities=wp.zeros(len(pts), dtype=wp.vec3))
    new = np.random.default_rng(16).normal(size=pts.shape).astype(np.float32)
    mesh.velocities = wp.array(new, dtype=wp.vec3)
    out = wp.zeros(1, dtype=wp.vec3)
    wp.launch(eval_velocity, dim=1, inputs=[mesh.id, 3, out])
    a, b, c = new[tris[3]]
    np.testing.assert_allclose(out.numpy()[0], 0.2 * a + 0.3 * b + 0.5 * c, atol=1e-6)
    with pytest.raises(RuntimeError, match="must have the same shape"):
        mesh.velocities = wp.zeros(len(pts) - 1, dtype=wp.vec3)


# --- gradients through mesh_get ---------------------------------------------------

@wp.func
def triangle_energy(mesh_id: wp.uint64, f: int):
    m = wp.mesh_get(mesh_id)
    i, j, k = m.indices[3 * f], m.indices[3 * f + 1], m.indices[3 * f + 2]
    a, b, c = m.points[i], m.points[j], m.points[k]
    area = wp.length(wp.cross(b - a, c - a)) * 0.5
    return area + wp.dot(m.velocities[i], m.velocities[j]) * area


@wp.kernel
def mesh_energy(mesh_id: wp.uint64, out: wp.array(dtype=float)):
    wp.atomic_add(out, 0, triangle_energy(mesh_id, wp.tid()))


def numpy_energy(pts, vel, tris):
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    return float((area + (vel[tris[:, 0]] * vel[tris[:, 1]]).sum(axis=1) * area).sum())


def test_reads_through_mesh_get_reach_the_points_and_velocities_gradients(wp):
    # Warp 1.19's test_grad.test_mesh_grad, with velocities: the gradient of a
    # kernel that reads wp.mesh_get(id).points / .velocities lands in the
    # arrays' .grad, as for an array argument.
    pts, tris = sphere(1.0, 3, 5)
    rng = np.random.default_rng(21)
    pts = (pts + rng.normal(scale=0.05, size=pts.shape)).astype(np.float32)
    vel = rng.normal(size=pts.shape).astype(np.float32)
    points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    velocities = wp.array(vel, dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(tris.ravel(), dtype=wp.int32), velocities=velocities)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(mesh_energy, dim=len(tris), inputs=[mesh.id], outputs=[out])
    tape.backward(loss=out)
    p64, v64 = pts.astype(np.float64), vel.astype(np.float64)
    assert out.numpy()[0] == pytest.approx(numpy_energy(p64, v64, tris), rel=1e-5)
    want_p = central_differences(lambda p: numpy_energy(p, v64, tris), p64)
    want_v = central_differences(lambda v: numpy_energy(p64, v, tris), v64)
    np.testing.assert_allclose(mesh.points.grad.numpy(), want_p, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(velocities.grad.numpy(), want_v, rtol=1e-3, atol=1e-4)
    assert np.abs(want_p).max() > 0.1 and np.abs(want_v).max() > 0.01

    # New points replace the old ones with their own gradient; points without
    # one take no gradient (and nothing breaks).
    moved = (pts * 1.5).astype(np.float32)
    mesh.points = wp.array(moved, dtype=wp.vec3, requires_grad=True)
    tape.zero()
    old_grad = points.grad.numpy().copy()
    out.zero_()
    tape = wp.Tape()
    with tape:
        wp.launch(mesh_energy, dim=len(tris), inputs=[mesh.id], outputs=[out])
    tape.backward(loss=out)
    want = central_differences(lambda p: numpy_energy(p, v64, tris), moved.astype(np.float64))
    np.testing.assert_allclose(mesh.points.grad.numpy(), want, rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(points.grad.numpy(), old_grad)
    mesh.points = wp.array(pts, dtype=wp.vec3)
    velocities.grad.zero_()
    out.zero_()
    tape = wp.Tape()
    with tape:
        wp.launch(mesh_energy, dim=len(tris), inputs=[mesh.id], outputs=[out])
    tape.backward(loss=out)
    np.testing.assert_allclose(velocities.grad.numpy(), want_v, rtol=1e-3, atol=1e-4)
