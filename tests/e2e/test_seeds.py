"""The Warp documentation examples (../shared/seeds) that need only this scope.

Each runs as written there, but for ``import warpd as wp`` (and device="cpu").
"""

import os
import subprocess
import sys

import numpy as np
import warpd as wp

from conftest import daemon_binary


@wp.kernel
def simple_kernel(a: wp.array(dtype=wp.vec3),
                  b: wp.array(dtype=wp.vec3),
                  c: wp.array(dtype=float)):

    # get thread index
    tid = wp.tid()

    # load two vec3s
    x = a[tid]
    y = b[tid]

    # compute the dot product between vectors
    r = wp.dot(x, y)

    # write result back to memory
    c[tid] = r


@wp.kernel
def compute_image(color: wp.array2d(dtype=wp.vec3), width: int, height: int):
    # get thread index
    i, j = wp.tid()

    r = float(i) / float(width)
    g = float(j) / float(height)
    b = r * g

    # write out a color value for each pixel
    color[i, j] = wp.vec3(r, g, b)


@wp.func
def square(x: float):
    return x*x


@wp.kernel
def apply_square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    tid = wp.tid()
    y[tid] = square(x[tid])


def test_simple_kernel_vec3_dot(wp):
    n = 1024
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, 3)).astype(np.float32)
    b_np = rng.standard_normal((n, 3)).astype(np.float32)
    a = wp.array(a_np, dtype=wp.vec3, device="cpu")
    b = wp.array(b_np, dtype=wp.vec3, device="cpu")
    c = wp.zeros(n, dtype=float, device="cpu")

    wp.launch(kernel=simple_kernel,  # kernel to launch
              dim=1024,              # number of threads
              inputs=[a, b, c],      # parameters
              device="cpu")          # execution device

    np.testing.assert_allclose(c.numpy(), np.einsum("ij,ij->i", a_np, b_np), rtol=1e-5, atol=1e-6)


def test_compute_image_2d_launch(wp):
    width, height = 64, 48
    img = wp.zeros(shape=(width, height), dtype=wp.vec3, device="cpu")
    wp.launch(kernel=compute_image,
              dim=(width, height),
              inputs=[img, width, height],
              device="cpu")
    got = img.numpy()
    assert got.shape == (width, height, 3)
    i, j = np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32),
                       indexing="ij")
    r = i / np.float32(width)
    g = j / np.float32(height)
    np.testing.assert_allclose(got, np.stack([r, g, r * g], axis=-1), rtol=1e-6)


def test_square_user_function(wp):
    x_np = np.linspace(-3.0, 3.0, 257, dtype=np.float32)
    x = wp.array(x_np, dtype=float)
    y = wp.empty_like(x)
    wp.launch(apply_square, dim=len(x), inputs=[x, y])
    np.testing.assert_allclose(y.numpy(), x_np * x_np, rtol=1e-6)


CACHE_EXAMPLE = '''
import os

import warpd as wp

example_dir = os.path.dirname(os.path.realpath(__file__))

# set default cache directory before wp.init()
wp.config.kernel_cache_dir = os.path.join(example_dir, "tmp", "warpcache1")

wp.init()

print("+++ Current cache directory: ", wp.config.kernel_cache_dir)

# change cache directory after wp.init()
wp.build.init_kernel_cache(os.path.join(example_dir, "tmp", "warpcache2"))

print("+++ Current cache directory: ", wp.config.kernel_cache_dir)

# clear kernel cache (forces fresh kernel builds every time)
wp.build.clear_kernel_cache()


@wp.kernel
def basic(x: wp.array(dtype=float)):
    tid = wp.tid()
    x[tid] = float(tid)


device = "cpu"
n = 10
x = wp.zeros(n, dtype=float, device=device)

wp.launch(kernel=basic, dim=n, inputs=[x], device=device)
print(x.numpy())
'''


def _run_example(tmp_path, env_update, drop=("WARPD_ADDRESS",)):
    script = tmp_path / "example_cache_dir.py"
    script.write_text(CACHE_EXAMPLE)
    env = dict(os.environ)
    for k in drop:
        env.pop(k, None)
    env.update(env_update)
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=300)


def _check_cache_example(tmp_path, proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [l for l in proc.stdout.splitlines() if l.startswith("+++")]
    c1 = os.path.join(str(tmp_path), "tmp", "warpcache1")
    c2 = os.path.join(str(tmp_path), "tmp", "warpcache2")
    assert len(lines) == 2, proc.stdout
    assert os.path.realpath(lines[0].split(":", 1)[1].strip()) == os.path.realpath(c1)
    assert os.path.realpath(lines[1].split(":", 1)[1].strip()) == os.path.realpath(c2)
    values = proc.stdout.strip().splitlines()[-1]
    got = np.array(values.strip("[]").split(), dtype=np.float32)
    np.testing.assert_array_equal(got, np.arange(10, dtype=np.float32))
    # The compiled module landed in the second cache directory.
    files = [os.path.join(d, f) for d, _, fs in os.walk(c2) for f in fs]
    assert files, f"nothing cached under {c2}"
    assert "warpd 0.1.0 initialized:" in proc.stdout
    assert "Kernel cache:" in proc.stdout


def test_cache_directory_example_private_daemon(tmp_path):
    """wp.config.kernel_cache_dir is honoured by a daemon that wp.init() starts."""
    proc = _run_example(tmp_path, {"WARPD_BIN": daemon_binary(), "WARPD_PRIVATE_DAEMON": "1"})
    _check_cache_example(tmp_path, proc)
    assert "private daemon" in proc.stdout


def test_cache_directory_example_shared_daemon(tmp_path, warpd_daemon, wp):
    """Against an already running daemon (that allows clients to set the cache dir)."""
    before = wp.config.kernel_cache_dir
    try:
        proc = _run_example(tmp_path, {"WARPD_ADDRESS": warpd_daemon.address}, drop=())
        _check_cache_example(tmp_path, proc)
    finally:
        wp.build.init_kernel_cache(before)
    assert os.path.realpath(wp.config.kernel_cache_dir) == os.path.realpath(before)


def test_init_kernel_cache_and_clear_in_process(wp, tmp_path):
    before = wp.config.kernel_cache_dir
    try:
        wp.build.init_kernel_cache(str(tmp_path / "cacheA"))
        assert os.path.realpath(wp.config.kernel_cache_dir) == os.path.realpath(tmp_path / "cacheA")

        @wp.kernel(module="unique")
        def fresh(x: wp.array(dtype=float)):
            i = wp.tid()
            x[i] = float(i) * 3.0

        x = wp.zeros(5, dtype=float)
        wp.launch(fresh, dim=5, inputs=[x])
        np.testing.assert_array_equal(x.numpy(), np.arange(5, dtype=np.float32) * 3)
        cached = [f for _, _, fs in os.walk(tmp_path / "cacheA") for f in fs]
        assert cached
        removed = wp.build.clear_kernel_cache()
        assert removed >= 1
        left = [f for _, _, fs in os.walk(tmp_path / "cacheA") for f in fs
                if not f.startswith(".")]
        assert not left, left
    finally:
        wp.build.init_kernel_cache(before)


# ---------------------------------------------------------------- 003: types, constants, printing
# The kernels below are the Runtime Reference's examples (seeds/003) with
# their `...` filled by writing results out.

mat32h = wp.types.matrix(shape=(3, 2), dtype=wp.float16)
quatd = wp.types.quaternion(dtype=wp.float64)
transformd = wp.types.transformation(dtype=wp.float64)


@wp.kernel
def seed_matrices(out: wp.array(dtype=wp.vec2), out3: wp.array(dtype=wp.vec3h), big: wp.array(dtype=wp.float64)):
    # initialize matrix
    m = wp.mat22(1.0, 2.0,
                 3.0, 4.0)

    # compute inverse
    minv = wp.inverse(m)

    # transform vector
    v = minv * wp.vec2(0.5, 0.3)
    out[0] = v

    # initialize a mat32h matrix
    m32 = mat32h(wp.float16(1.0), wp.float16(2.0),
                 wp.float16(3.0), wp.float16(4.0),
                 wp.float16(5.0), wp.float16(6.0))

    # declare a 2 component half precision vector
    v2 = wp.vec2h(wp.float16(1.0), wp.float16(1.0))

    # multiply by the matrix, returning a 3 component vector:
    v3 = m32 * v2
    out3[0] = v3

    # create a 3x2 half precision matrix from components (row major ordering):
    ma = wp.matrix(
        wp.float16(1.0), wp.float16(2.0),
        wp.float16(1.0), wp.float16(2.0),
        wp.float16(1.0), wp.float16(2.0),
        shape=(3, 2))
    out3[1] = ma * v2

    # zero initialize a 3x2 half precision matrix:
    mz = wp.matrix(wp.float16(0.0), shape=(3, 2))
    out3[2] = mz * v2

    # create a 5x5 double precision identity matrix:
    mi = wp.identity(n=5, dtype=wp.float64)
    big[0] = mi[0, 0] + mi[4, 4] + mi[1, 3]


def test_seed_matrices(wp):
    out = wp.zeros(1, dtype=wp.vec2)
    out3 = wp.zeros(3, dtype=wp.vec3h)
    big = wp.zeros(1, dtype=wp.float64)
    wp.launch(seed_matrices, dim=1, inputs=[out, out3, big])
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(out.numpy()[0], np.linalg.inv(m) @ [0.5, 0.3], rtol=1e-5)
    got = out3.numpy().astype(np.float64)
    np.testing.assert_array_equal(got[0], [3.0, 7.0, 11.0])
    np.testing.assert_array_equal(got[1], [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(got[2], [0.0, 0.0, 0.0])
    assert big.numpy()[0] == 2.0


@wp.kernel
def seed_quaternions(out: wp.array(dtype=wp.vec3), outd: wp.array(dtype=wp.float64), outh: wp.array(dtype=wp.float16)):
    # construct a 30 degree rotation around the x-axis
    q = wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), wp.degrees(30.0))

    # rotate an axis by this quaternion
    v = wp.quat_rotate(q, wp.vec3(0.0, 1.0, 0.0))
    out[0] = v

    # create a double precision identity quaternion:
    qd = wp.quat_identity(dtype=wp.float64)
    outd[0] = qd[3]

    # precision defaults to wp.float32 so this creates a single precision identity quaternion:
    qf = wp.quat_identity()
    out[1] = wp.quat_rotate(qf, wp.vec3(1.0, 2.0, 3.0))

    # create a half precision quaternion from components, or a vector/scalar:
    qh = wp.quaternion(wp.float16(0.0),
                       wp.float16(0.0),
                       wp.float16(0.0),
                       wp.float16(1.0))
    outh[0] = qh[3]

    qh = wp.quaternion(
        wp.vector(wp.float16(0.0), wp.float16(0.0), wp.float16(0.0)),
        wp.float16(1.0))
    outh[1] = qh[3]

    # a declared quaternion type
    qq = quatd(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(2.0))
    outd[1] = wp.length(qq)


@wp.kernel
def seed_transforms(out: wp.array(dtype=wp.vec3), outd: wp.array(dtype=wp.float64)):
    # create a transform from a vector/quaternion:
    t = wp.transform(
        wp.vec3(1.0, 2.0, 3.0),
        wp.quat_from_axis_angle(wp.vec3(0.0, 1.0, 0.0), wp.degrees(30.0)))

    # transform a point
    p = wp.transform_point(t, wp.vec3(10.0, 0.5, 1.0))
    out[0] = p

    # transform a vector (ignore translation)
    p = wp.transform_vector(t, wp.vec3(10.0, 0.5, 1.0))
    out[1] = p

    # create double precision identity transform:
    qd = wp.transform_identity(dtype=wp.float64)
    td = transformd(wp.vector(wp.float64(1.0), wp.float64(0.0), wp.float64(0.0)), qd.q)
    outd[0] = wp.transform_point(td, wp.vec3d(wp.float64(1.0), wp.float64(1.0), wp.float64(1.0)))[0]


def _rot_y(a):
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


def test_seed_quaternions_and_transforms(wp):
    out = wp.zeros(2, dtype=wp.vec3)
    outd = wp.zeros(2, dtype=wp.float64)
    outh = wp.zeros(2, dtype=wp.float16)
    wp.launch(seed_quaternions, dim=1, inputs=[out, outd, outh])
    # The seed passes wp.degrees(30.0) (about 1718.9) as the angle, which
    # quat_from_axis_angle takes in radians: so the rotation is by 1718.9 rad.
    a = np.float32(np.degrees(np.float32(30.0)))
    np.testing.assert_allclose(out.numpy()[0], [0.0, np.cos(a), np.sin(a)], atol=1e-3)  # float32 at 1719 rad
    np.testing.assert_allclose(out.numpy()[1], [1.0, 2.0, 3.0], atol=1e-6)
    np.testing.assert_array_equal(outd.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(outh.numpy(), [1.0, 1.0])

    out = wp.zeros(2, dtype=wp.vec3)
    outd = wp.zeros(1, dtype=wp.float64)
    wp.launch(seed_transforms, dim=1, inputs=[out, outd])
    x = np.array([10.0, 0.5, 1.0])
    np.testing.assert_allclose(out.numpy()[0], _rot_y(a) @ x + [1.0, 2.0, 3.0], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(out.numpy()[1], _rot_y(a) @ x, rtol=1e-3, atol=1e-3)
    assert outd.numpy()[0] == 2.0


TYPE_SPHERE = wp.constant(0)
TYPE_CUBE = wp.constant(1)
TYPE_CAPSULE = wp.constant(2)


@wp.kernel
def collide(geometry: wp.array(dtype=int)):

    t = geometry[wp.tid()]

    if (t == TYPE_SPHERE):
        print("sphere")
    if (t == TYPE_CUBE):
        print("cube")
    if (t == TYPE_CAPSULE):
        print("capsule")


def test_seed_constants_and_print(wp, capsys):
    geometry = wp.array([2, 0, 1, 0], dtype=int)
    wp.launch(collide, dim=4, inputs=[geometry])
    wp.synchronize()
    # Output in thread order (warpd sorts a launch's prints by thread id).
    assert capsys.readouterr().out == "capsule\nsphere\ncube\nsphere\n"
