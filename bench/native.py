"""The native reference loops (bench/native_ref.c), built with gcc at run time.

``build(workdir)`` compiles native_ref.c twice (vector math and scalar libm,
see the file) and returns a ``Native``, or raises ``NativeUnavailable`` with
the reason (no gcc, a failed compile): the runner then skips the native
columns. The loops run on numpy buffers in this process, on all cores
(OpenMP), and are timed like the kernels: median of repeated calls after a
warm-up; their results are checked against numpy.
"""

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np

from timing import median_s

SOURCE = Path(__file__).with_name("native_ref.c")
FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]
SIMD_FLAGS = ["-DBENCH_SIMD", "-fno-math-errno", "-fno-builtin-sinf", "-fno-builtin-cosf"]


class NativeUnavailable(Exception):
    pass


def _compile(gcc: str, out: Path, extra: list, libs: list) -> ctypes.CDLL:
    cmd = [gcc, *FLAGS, *extra, "-o", str(out), str(SOURCE), *libs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NativeUnavailable(f"{' '.join(cmd)} failed: {proc.stderr.strip()[:500]}")
    lib = ctypes.CDLL(str(out))
    lib.bench_saxpy.argtypes = [ctypes.c_long, ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p]
    lib.bench_vec3.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.bench_sincos.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p]
    for f in (lib.bench_saxpy, lib.bench_vec3, lib.bench_sincos):
        f.restype = None
    return lib


def build(workdir: Path) -> "Native":
    gcc = shutil.which("gcc")
    if gcc is None:
        raise NativeUnavailable("gcc not found")
    version = subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    simd = _compile(gcc, workdir / "native_simd.so", SIMD_FLAGS, ["-lmvec", "-lm"])
    scalar = _compile(gcc, workdir / "native_scalar.so", [], ["-lm"])
    return Native(version, simd, scalar)


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class Native:
    def __init__(self, version: str, simd: ctypes.CDLL, scalar: ctypes.CDLL):
        self.version, self.simd, self.scalar = version, simd, scalar

    def saxpy(self, n: int, repeats: int) -> dict:
        x = np.random.default_rng(1).random(n, dtype=np.float32)
        y = np.zeros(n, dtype=np.float32)
        calls = 0

        def run():
            nonlocal calls
            self.simd.bench_saxpy(n, 2.0, _ptr(x), _ptr(y))
            calls += 1

        t = median_s(run, repeats)
        if not np.allclose(y[:16], 2.0 * calls * x[:16], rtol=1e-4):
            raise AssertionError("native saxpy: wrong result")
        return {"ms": t * 1e3}

    def vec3(self, n: int, repeats: int) -> dict:
        rng = np.random.default_rng(2)
        a = rng.random((n, 3), dtype=np.float32)
        b = rng.random((n, 3), dtype=np.float32)
        c = np.zeros(n, dtype=np.float32)
        t = median_s(lambda: self.simd.bench_vec3(n, _ptr(a), _ptr(b), _ptr(c)), repeats)
        want = (a[:16] * b[:16]).sum(axis=1) + np.linalg.norm(a[:16], axis=1)
        if not np.allclose(c[:16], want, rtol=1e-5):
            raise AssertionError("native vec3: wrong result")
        return {"ms": t * 1e3}

    def sincos(self, n: int, iters: int, repeats: int, scalar: bool) -> dict:
        from workloads import sincos_reference

        lib = self.scalar if scalar else self.simd
        x0 = np.random.default_rng(3).random(n, dtype=np.float32)
        x = x0.copy()
        lib.bench_sincos(n, iters, _ptr(x))
        if not np.allclose(x[:64], sincos_reference(x0[:64], iters), rtol=1e-4, atol=1e-4):
            raise AssertionError("native sincos: wrong result")
        return {"ms": median_s(lambda: lib.bench_sincos(n, iters, _ptr(x)), repeats, warmup=0) * 1e3}
