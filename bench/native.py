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


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.bench_saxpy.argtypes = [ctypes.c_long, ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p]
    lib.bench_vec3.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.bench_sincos.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p]
    for f in (lib.bench_saxpy, lib.bench_vec3, lib.bench_sincos):
        f.restype = None
    return lib


def _compile(gcc: str, out: Path, extra: list, libs: list) -> Path:
    cmd = [gcc, *FLAGS, *extra, "-o", str(out), str(SOURCE), *libs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NativeUnavailable(f"{' '.join(cmd)} failed: {proc.stderr.strip()[:500]}")
    return out


def build(workdir: Path) -> "Native":
    gcc = shutil.which("gcc")
    if gcc is None:
        raise NativeUnavailable("gcc not found")
    version = subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    simd = _compile(gcc, workdir / "native_simd.so", SIMD_FLAGS, ["-lmvec", "-lm"])
    scalar = _compile(gcc, workdir / "native_scalar.so", [], ["-lm"])
    return load({"version": version, "simd": str(simd), "scalar": str(scalar)})


def load(built: dict) -> "Native":
    """The libraries build() made (its Native's ``built``), in this process:
    another side of the runner loads them to interleave them with its own."""
    return Native(built, _load(Path(built["simd"])), _load(Path(built["scalar"])))


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class Native:
    """Each loop comes as a runner, (run, verify): run() is one call of the
    loop on buffers made once; verify() raises when the buffers do not hold
    what that many calls compute. saxpy() and the others time a runner
    alone; bench/workloads.py interleaves one with warpd's launches."""

    def __init__(self, built: dict, simd: ctypes.CDLL, scalar: ctypes.CDLL):
        self.built, self.version, self.simd, self.scalar = built, built["version"], simd, scalar

    def saxpy_runner(self, n: int):
        x = np.random.default_rng(1).random(n, dtype=np.float32)
        y = np.zeros(n, dtype=np.float32)
        calls = 0

        def run():
            nonlocal calls
            self.simd.bench_saxpy(n, 2.0, _ptr(x), _ptr(y))
            calls += 1

        def verify():
            if not np.allclose(y[:16], 2.0 * calls * x[:16], rtol=1e-4):
                raise AssertionError("native saxpy: wrong result")

        return run, verify

    def vec3_runner(self, n: int):
        rng = np.random.default_rng(2)
        a = rng.random((n, 3), dtype=np.float32)
        b = rng.random((n, 3), dtype=np.float32)
        c = np.zeros(n, dtype=np.float32)

        def verify():
            want = (a[:16] * b[:16]).sum(axis=1) + np.linalg.norm(a[:16], axis=1)
            if not np.allclose(c[:16], want, rtol=1e-5):
                raise AssertionError("native vec3: wrong result")

        return (lambda: self.simd.bench_vec3(n, _ptr(a), _ptr(b), _ptr(c))), verify

    def sincos_runner(self, n: int, iters: int, scalar: bool):
        """The first call is checked against numpy at once (later calls
        iterate on its output, which numpy cannot follow cheaply)."""
        from workloads import sincos_reference

        lib = self.scalar if scalar else self.simd
        x0 = np.random.default_rng(3).random(n, dtype=np.float32)
        x = x0.copy()
        lib.bench_sincos(n, iters, _ptr(x))
        if not np.allclose(x[:64], sincos_reference(x0[:64], iters), rtol=1e-4, atol=1e-4):
            raise AssertionError("native sincos: wrong result")
        return (lambda: lib.bench_sincos(n, iters, _ptr(x))), (lambda: None)

    def saxpy(self, n: int, repeats: int) -> dict:
        return _time(self.saxpy_runner(n), repeats)

    def vec3(self, n: int, repeats: int) -> dict:
        return _time(self.vec3_runner(n), repeats)

    def sincos(self, n: int, iters: int, repeats: int, scalar: bool) -> dict:
        return _time(self.sincos_runner(n, iters, scalar), repeats, warmup=0)


def _time(runner, repeats: int, warmup: int = 2) -> dict:
    run, verify = runner
    t = median_s(run, repeats, warmup)
    verify()
    return {"ms": t * 1e3}
