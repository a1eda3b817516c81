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
