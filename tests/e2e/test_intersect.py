"""Intersection helpers: intersect_tri_tri (vec3f and vec3d) and closest_point_edge_edge.

References are independent numpy computations in float64: two triangles
(not coplanar) meet iff an edge of one crosses the other (segment/triangle
test); coplanar pairs are built so the answer is known; edge/edge closest
points against a dense search over both parameters.
"""

import numpy as np

import warpd as wp


@wp.kernel
def tri_tri_f(v: wp.array(dtype=wp.vec3), u: wp.array(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(v[3 * i], v[3 * i + 1], v[3 * i + 2], u[3 * i], u[3 * i + 1], u[3 * i + 2])


@wp.kernel
def tri_tri_d(v: wp.array(dtype=wp.vec3d), u: wp.array(dtype=wp.vec3d), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(v[3 * i], v[3 * i + 1], v[3 * i + 2], u[3 * i], u[3 * i + 1], u[3 * i + 2])


def segment_crosses_triangle(p, q, a, b, c):
    """Whether segment pq meets triangle abc (general position), float64."""
    d = q - p
    e1, e2 = b - a, c - a
    h = np.cross(d, e2)
    det = e1 @ h
    if abs(det) < 1e-14:
        return False
    s = p - a
    u = (s @ h) / det
    qv = np.cross(s, e1)
    v = (d @ qv) / det
    t = (e2 @ qv) / det
    return u >= 0 and v >= 0 and u + v <= 1 and 0 <= t <= 1


def tri_tri_reference(v, u):
    edges = lambda t: ((t[0], t[1]), (t[1], t[2]), (t[2], t[0]))  # noqa: E731
    return any(segment_crosses_triangle(p, q, *u) for p, q in edges(v)) or \
        any(segment_crosses_triangle(p, q, *v) for p, q in edges(u))


def run_tri_tri(v, u, dtype):
    n = len(v) // 3
    out = wp.zeros(n, dtype=int)
    vec = wp.vec3 if dtype == np.float32 else wp.vec3d
    wp.launch(tri_tri_f if dtype == np.float32 else tri_tri_d, dim=n,
              inputs=[wp.array(v.astype(dtype), dtype=vec), wp.array(u.astype(dtype), dtype=vec), out])
    return out.numpy()


def test_intersect_tri_tri_matches_an_edge_crossing_reference(wp):
    rng = np.random.default_rng(11)
    n = 2000
    v = rng.uniform(-1, 1, (n, 3, 3))
    u = rng.uniform(-1, 1, (n, 3, 3)) + rng.uniform(-0.8, 0.8, (n, 1, 3))
    want = np.array([tri_tri_reference(v[i], u[i]) for i in range(n)]).astype(int)
    assert 0.1 < want.mean() < 0.8
    for dtype in (np.float64, np.float32):
        # float32: compare away from touching configurations (the reference is float64).
        got = run_tri_tri(v.reshape(-1, 3), u.reshape(-1, 3), dtype)
        differ = np.flatnonzero(got != want)
        if dtype == np.float64:
            assert len(differ) == 0, differ
        else:
            assert len(differ) <= 2, differ


def test_intersect_tri_tri_coplanar_and_touching_cases(wp):
    base = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0]], float)
    cases = [
        (np.array([[0.5, 0.5, 0], [1.5, 0.5, 0], [0.5, 1.2, 0]]), 1),     # coplanar, inside
        (np.array([[4 / 3, 4 / 3, 0], [-2 / 3, 4 / 3, 0], [4 / 3, -2 / 3, 0]]), 1),  # coplanar star: edges cross
        (np.array([[1.5, 1.5, 0], [3, 1, 0], [1, 3, 0]]), 0),            # coplanar, beyond the hypotenuse
        (np.array([[3, 3, 0], [4, 3, 0], [3, 4, 0]]), 0),                # coplanar, apart
        (np.array([[-1, -1, 0], [4, -1, 0], [-1, 4, 0]]), 1),            # coplanar, containing
        (np.array([[1, 1, -1], [1, 1, 1], [1, -1, 0]]), 1),              # Warp's doc example: crossing
        (np.array([[0.5, 0.5, 0.5], [1, 0.5, 1], [0.5, 1, 1]]), 0),      # above the plane
        (np.array([[0.5, 0.5, 0], [1, 0.5, 1], [0.5, 1, 1]]), 1),        # a vertex on the face
        (np.array([[3, 0, -1], [3, 0, 1], [4, 0, 0]]), 0),               # in the line's range, apart
        (np.array([[1, 0, -1], [1, 0, 1], [1, -1, 0]]), 1),              # through an edge
    ]
    v = np.tile(base, (len(cases), 1))
    u = np.concatenate([c for c, _ in cases])
    want = [w for _, w in cases]
    for dtype in (np.float32, np.float64):
        assert run_tri_tri(v, u, dtype).tolist() == want, dtype


@wp.kernel
def edge_edge(p1: wp.array(dtype=wp.vec3), q1: wp.array(dtype=wp.vec3), p2: wp.array(dtype=wp.vec3),
              q2: wp.array(dtype=wp.vec3), eps: float, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], eps)


def test_closest_point_edge_edge_against_a_dense_search(wp):
    rng = np.random.default_rng(12)
    n = 300
    p1, q1, p2, q2 = (rng.uniform(-1, 1, (n, 3)).astype(np.float32) for _ in range(4))
    # Degenerate and parallel edges too.
    q1[:20] = p1[:20]
    q2[20:40] = p2[20:40]
    p2[40:60] = p1[40:60] + np.array([0, 0.5, 0], np.float32)
    q2[40:60] = q1[40:60] + np.array([0, 0.5, 0], np.float32)
    out = wp.zeros(n, dtype=wp.vec3)
    arr = lambda a: wp.array(a, dtype=wp.vec3)  # noqa: E731
    wp.launch(edge_edge, dim=n, inputs=[arr(p1), arr(q1), arr(p2), arr(q2), 1e-6, out])
    got = out.numpy().astype(np.float64)
    grid = np.linspace(0, 1, 401)
    for i in range(n):
        a, b = p1[i].astype(np.float64), q1[i].astype(np.float64)
        c, d = p2[i].astype(np.float64), q2[i].astype(np.float64)
        x = a + grid[:, None] * (b - a)
        y = c + grid[:, None] * (d - c)
        dist = np.linalg.norm(x[:, None, :] - y[None, :, :], axis=2)
        best = dist.min()
        s, t, dd = got[i]
        assert 0 <= s <= 1 and 0 <= t <= 1, (i, s, t)
        # d is the distance of the reported points, and no pair is closer.
        np.testing.assert_allclose(dd, np.linalg.norm((a + s * (b - a)) - (c + t * (d - c))), atol=1e-5)
        assert dd <= best + 1e-5 and dd >= best - 5e-3, (i, dd, best)
        if i < 20:
            assert s == 0.0  # a point edge: weight 0
        elif i < 40:
            assert t == 0.0
        elif i < 60:  # parallel: the lines' distance where the projections overlap (checked by the search)
            direction = (b - a) / np.linalg.norm(b - a)
            gap = np.array([0, 0.5, 0]) - (np.array([0, 0.5, 0]) @ direction) * direction
            assert dd >= np.linalg.norm(gap) - 1e-5


@wp.kernel
def edge_edge_loss(x: wp.array(dtype=wp.vec3), w: wp.vec3, loss: wp.array(dtype=float)):
    r = wp.closest_point_edge_edge(x[0], x[1], x[2], x[3], 1.0e-6)
    wp.atomic_add(loss, 0, wp.dot(w, r))


def test_closest_point_edge_edge_gradients_match_finite_differences(wp):
    rng = np.random.default_rng(17)
    w = wp.vec3(0.7, -1.1, 1.3)
    cases = [rng.uniform(-1, 1, (4, 3)) for _ in range(30)]
    cases.append(np.array([[0, 0, 0], [0, 0, 0], [0.5, 1, 1], [0.5, 1, -1]], float))  # edge 1 a point
    cases.append(np.array([[0, 0, 0], [1, 0, 0], [0.3, 1, 1], [0.3, 1, 1]], float))   # edge 2 a point
    checked = 0
    for x0 in cases:
        x0 = x0.astype(np.float32)
        x = wp.array(x0, dtype=wp.vec3, requires_grad=True)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(edge_edge_loss, dim=1, inputs=[x, w, loss])
        tape.backward(loss=loss)
        def central(eps):
            g = np.zeros((4, 3))
            for i in range(4):
                for k in range(3):
                    vals = []
                    for e in (-eps, eps):
                        y = x0.copy()
                        y[i, k] += e
                        out = wp.zeros(1, dtype=float)
                        wp.launch(edge_edge_loss, dim=1, inputs=[wp.array(y, dtype=wp.vec3), w, out])
                        vals.append(float(out.numpy()[0]))
                    g[i, k] = (vals[1] - vals[0]) / (2 * eps)
            return g

        numeric = central(1e-3)
        # Skip pairs where the probe crosses a clamp or branch (the function has a kink there):
        # the two step sizes disagree.
        if not np.allclose(numeric, central(2.5e-4), atol=1e-2, rtol=1e-2):
            continue
        np.testing.assert_allclose(x.grad.numpy(), numeric, atol=3e-2, rtol=3e-2, err_msg=str(x0.tolist()))
        checked += 1
    assert checked >= 25
