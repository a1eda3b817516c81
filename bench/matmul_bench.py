"""wp.matmul against NumPy in the same run: an n x n float32 (and float64) GEMM.

    .venv/bin/python bench/matmul_bench.py [n] [repeats]

Needs a running daemon (WARPD_ADDRESS, or the client's autostart). warpd's time is one
wp.matmul plus wp.synchronize() (the daemon's OpenBLAS on its worker pool, and one round
trip); NumPy's is a @ b in this process (its own BLAS, with its own threads). The result is
checked against NumPy's before anything is timed.
"""

import sys
from pathlib import Path

import numpy as np

import warpd as wp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import median_s  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    wp.config.quiet = True
    wp.init()
    rng = np.random.default_rng(0)
    for dtype, npt in ((wp.float32, np.float32), (wp.float64, np.float64)):
        av, bv = rng.standard_normal((n, n)).astype(npt), rng.standard_normal((n, n)).astype(npt)
        a, b = wp.array(av, dtype=dtype), wp.array(bv, dtype=dtype)
        c = wp.zeros((n, n), dtype=dtype)
        d = wp.zeros((n, n), dtype=dtype)
        wp.matmul(a, b, c, d)
        np.testing.assert_allclose(d.numpy(), av @ bv, rtol=1e-3 if npt is np.float32 else 1e-10,
                                   atol=1e-3 if npt is np.float32 else 1e-10)

        def warpd_gemm():
            wp.matmul(a, b, c, d)
            wp.synchronize()

        t_warpd = median_s(warpd_gemm, repeats) * 1e3
        t_numpy = median_s(lambda: av @ bv, repeats) * 1e3
        gflops = 2.0 * n ** 3 / 1e9
        print(f"{n}x{n} {dtype.__name__} GEMM: warpd {t_warpd:.2f} ms ({gflops / t_warpd * 1e3:.1f} GFLOP/s), "
              f"numpy {t_numpy:.2f} ms ({gflops / t_numpy * 1e3:.1f} GFLOP/s), warpd/numpy time "
              f"{t_warpd / t_numpy:.2f}")


if __name__ == "__main__":
    main()
