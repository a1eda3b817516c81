"""The gallery in examples/: each example runs as a user runs it (a separate
process, ``--small``) against the session's daemon, and what it computed is
checked against independent references.

- raycast: every pixel's depth against a numpy Möller-Trumbore over every
  triangle of the scene, the centre pixel against the analytic distance to
  the sphere, each hit pixel's colour against the object the brute force hit.
- particles: free fall exactly as semi-implicit Euler has it before the first
  contact, the horizontal momentum conserved through the collisions (pairwise
  forces cancel, the ground pushes vertically), energy dissipated, no
  particle through the ground or deep in another, and the contacts the kernel
  counted through the HashGrid equal the brute-force pairs.
- tape_optimization: every gradient the tape returned against the closed
  form (the end point is affine in v0), gradient descent steps as written,
  the final v0 at the analytic optimum and the loss orders of magnitude down.

Every PNG is decoded and its size checked.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image  # the client's `examples` extra (scripts/setup.sh installs it)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def run_example(name, out, warpd_daemon, *args):
    env = dict(os.environ, WARPD_ADDRESS=warpd_daemon.address, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--small", "--out", str(out), *args],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    return proc.stdout


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decoded(path, size, mode):
    with Image.open(path) as im:
        im.load()
        assert im.format == "PNG"
        assert im.size == size
        return np.asarray(im.convert(mode))


# --- raycast -----------------------------------------------------------------

def ray_triangles(origin, dirs, a, b, c):
    """Nearest hit t (inf: none) and face of each ray against every triangle, float64."""
    e1, e2 = b - a, c - a
    t_best = np.full(len(dirs), np.inf)
    face = np.full(len(dirs), -1)
    for start in range(0, len(a), 256):
        sl = slice(start, start + 256)
        pv = np.cross(dirs[:, None, :], e2[None, sl])
        det = np.einsum("tj,rtj->rt", e1[sl], pv)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / det
            tv = origin - a[sl]
            u = np.einsum("tj,rtj->rt", tv, pv) * inv
            qv = np.cross(tv, e1[sl])
            v = np.einsum("rj,tj->rt", dirs, qv) * inv
            t = np.einsum("tj,tj->t", e2[sl], qv)[None, :] * inv
        t = np.where((det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0), t, np.inf)
        k = np.argmin(t, axis=1)
        tk = t[np.arange(len(dirs)), k]
        better = tk < t_best
        t_best[better], face[better] = tk[better], k[better] + start
    return t_best, face


def camera_rays(rc, size):
    tan_half = np.tan(rc.FOV_Y / 2)
    px = (np.arange(size) + 0.5) / size
    sx = (2 * px - 1) * tan_half
    sy = (1 - 2 * px) * tan_half
    d = np.stack(np.broadcast_arrays(sx[None, :], sy[:, None], -1.0), -1).reshape(-1, 3)
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def test_raycast(wp, warpd_daemon, tmp_path):
    rc = load_example("raycast")
    out = run_example("raycast", tmp_path, warpd_daemon)
    assert "raycast.png" in out
    size = 64
    rgb = decoded(tmp_path / "raycast.png", (size, size), "RGB").astype(int)
    depth = np.load(tmp_path / "raycast_depth.npy")
    assert depth.shape == (size, size)

    points, indices, _normals, sphere_faces = rc.scene(detail=2)  # --small's mesh
    tri = points.astype(np.float64)[indices.reshape(-1, 3)]
    origin = np.array(rc.CAMERA_POS, np.float64)
    dirs = camera_rays(rc, size)
    t_ref, face = ray_triangles(origin, dirs, tri[:, 0], tri[:, 1], tri[:, 2])
    t_ref, face = t_ref.reshape(size, size), face.reshape(size, size)

    hit = np.isfinite(t_ref)
    assert 0.2 < hit.mean() < 0.8  # the scene fills part of the frame
    np.testing.assert_array_equal(np.isfinite(depth), hit)
    np.testing.assert_allclose(depth[hit], t_ref[hit], rtol=1e-5)

    # The centre pixel looks at the sphere (64 is even: its ray is half a pixel off the axis).
    d = dirs.reshape(size, size, 3)[size // 2, size // 2]
    b = np.dot(origin, d)
    t_sphere = -b - np.sqrt(b * b - (np.dot(origin, origin) - rc.SPHERE_RADIUS ** 2))
    assert face[size // 2, size // 2] < sphere_faces
    # The mesh is inscribed in the sphere: a little farther, by less than its facets' sag.
    sag = rc.SPHERE_RADIUS * (1 - np.cos(np.pi / 8))
    assert t_sphere - 1e-6 <= depth[size // 2, size // 2] <= t_sphere + sag

    # Each hit pixel is shaded in its object's colour: the sphere orange, the torus blue.
    sphere_px = hit & (face < sphere_faces)
    torus_px = hit & (face >= sphere_faces)
    assert sphere_px.sum() > 100 and torus_px.sum() > 100
    assert (rgb[sphere_px][:, 0] > rgb[sphere_px][:, 2]).all()
    assert (rgb[torus_px][:, 2] > rgb[torus_px][:, 0]).all()
    # The background is a vertical gradient, lighter towards the top.
    column = rgb[:, 0, 2]
    assert not hit[:, 0].any() and (np.diff(column) <= 0).all() and column[0] > column[-1]


def test_raycast_centre_ray_on_axis(wp, warpd_daemon, tmp_path):
    """With an odd size the centre pixel's ray is the camera's axis: it meets a vertex of the
    sphere's mesh (on the sphere), so the depth is the analytic distance, 3.5 - 0.6."""
    rc = load_example("raycast")
    run_example("raycast", tmp_path, warpd_daemon, "--size", "65")
    decoded(tmp_path / "raycast.png", (65, 65), "RGB")
    depth = np.load(tmp_path / "raycast_depth.npy")
    assert depth[32, 32] == pytest.approx(rc.CAMERA_POS[2] - rc.SPHERE_RADIUS, abs=1e-6)


# --- particles ---------------------------------------------------------------

def pair_distances(x):
    diff = x[:, None, :] - x[None, :, :]
    dist = np.sqrt((diff ** 2).sum(-1))
    np.fill_diagonal(dist, np.inf)
    return dist


def test_particles(wp, warpd_daemon, tmp_path):
    out = run_example("particles", tmp_path, warpd_daemon)
    assert "256 particles" in out
    decoded(tmp_path / "particles.png", (512, 256), "RGB")
    d = np.load(tmp_path / "particles.npz")
    t, xs, vs, contacts = d["t"], d["x"].astype(np.float64), d["v"].astype(np.float64), d["contacts"]
    r, m, dt, g = float(d["radius"]), float(d["mass"]), float(d["dt"]), d["gravity"]
    x0, v0 = d["x0"].astype(np.float64), d["v0"]
    n = len(x0)
    assert xs.shape == (8, n, 3) and n == 256
    np.testing.assert_array_equal(xs[0], x0)

    # Free fall before any contact: semi-implicit Euler gives
    # x_k = x_0 + k dt v_0 + g dt^2 k (k + 1) / 2 for every particle.
    free = 0
    for ti, x in zip(t, xs):
        k = round(ti / dt)
        want = x0 + k * dt * v0 + g * dt * dt * k * (k + 1) / 2
        if want[:, 1].min() > r:
            np.testing.assert_allclose(x, want, atol=2e-5)
            free += 1
    assert free >= 2  # the first frame and at least one in flight

    # Contacts between particles are equal and opposite and the ground is frictionless:
    # the horizontal momentum is what it was, through every collision.
    p0 = m * n * v0
    for v in vs:
        np.testing.assert_allclose(m * v[:, [0, 2]].sum(0), p0[[0, 2]], atol=1e-4 * abs(p0[0]))

    energies = []
    for x, v, counted in zip(xs, vs, contacts):
        dist = pair_distances(x)
        # The kernel's contact counts (through the HashGrid) equal the brute-force pairs closer
        # than a diameter (a pair within float rounding of the diameter may go either way).
        brute = (dist < 2 * r).sum(1)
        borderline = (np.abs(dist - 2 * r) < 1e-5).sum(1)
        assert (np.abs(counted - brute) <= borderline).all()
        # Penalty contacts: no particle deep in another or in the ground.
        assert dist.min() > 1.6 * r
        assert x[:, 1].min() > 0.6 * r
        pen = np.clip(2 * r - dist, 0, None)
        ground = np.clip(r - x[:, 1], 0, None)
        energies.append(0.5 * m * (v ** 2).sum() - m * (g * x).sum() + 0.25 * float(d["k_n"]) * (pen ** 2).sum()
                        + 0.5 * float(d["k_ground"]) * (ground ** 2).sum())
    assert contacts[-1].sum() > n  # the pile is a pile: most particles touch others at the end
    # Dampers and friction dissipate: the energy never grows (beyond the integrator's drift)
    # and a good part of it is gone; the pile has come to rest vertically.
    e = np.array(energies)
    assert (np.diff(e) <= 0.01 * e[0]).all(), e
    assert e[-1] < 0.8 * e[0], e
    drop = m * -g[1] * (x0[:, 1].mean() - r)
    assert 0.5 * m * (vs[-1][:, 1] ** 2).sum() < 0.01 * drop * n


# --- tape_optimization -------------------------------------------------------

def end_point(v0, gravity, drag, dt, steps):
    x, v = np.zeros(3), np.array(v0, np.float64)
    for _ in range(steps):
        v = v + (gravity - drag * v) * dt
        x = x + v * dt
    return x


def test_tape_optimization(wp, warpd_daemon, tmp_path):
    out = run_example("tape_optimization", tmp_path, warpd_daemon)
    assert "40 iterations" in out
    decoded(tmp_path / "tape_optimization.png", (512, 256), "RGB")
    d = np.load(tmp_path / "tape_optimization.npz")
    loss, v0, grad = d["loss"], d["v0"].astype(np.float64), d["grad"].astype(np.float64)
    g, drag, target, rate = d["gravity"], float(d["drag"]), d["target"], float(d["rate"])
    steps = int(d["steps"])
    dt = float(d["duration"]) / steps
    assert len(loss) == 41

    # The end point is affine in v0: x_K = s v0 + b. (The daemon integrates in float32: the
    # end point is good to a few 1e-5 m after 50 steps.)
    b = end_point(np.zeros(3), g, drag, dt, steps)
    s = end_point(np.array([1.0, 0, 0]), g, drag, dt, steps)[0] - b[0]
    for i in range(len(loss)):
        miss = s * v0[i] + b - target
        assert np.sqrt(loss[i]) == pytest.approx(np.linalg.norm(miss), rel=1e-4, abs=5e-5)
        np.testing.assert_allclose(grad[i], 2 * s * miss, rtol=1e-4, atol=1e-4)
    # Each step is v0 <- v0 - rate * grad.
    np.testing.assert_allclose(v0[1:], v0[:-1] - rate * grad[:-1], atol=1e-5)
    # At the optimum the ball ends on the target.
    optimum = (target - b) / s
    np.testing.assert_allclose(v0[-1], optimum, atol=1e-3)
    assert loss[-1] < 1e-6 * loss[0]
