"""warpd runtime benchmarks, measured side by side in one run.

Starts a private daemon (build/bin/warpd or $WARPD_BIN) with an empty kernel
cache on a Unix socket and reports, each as a median of repeated trials:

  rpc floor        GetServerInfo round trip (the cost of any RPC here)
  cold compile     LoadModule of a one-kernel module never seen before: axpy
                   (runtime/native/builtin.h only) and a transform kernel (also
                   mat.h, quat.h, transform.h); then the same with the headers
                   parsed in every compile (--no-compile-pch), for comparison
  memory hit       LoadModule of the same module from another session
  disk hit         LoadModule after restarting the daemon on the same cache
  launch + sync    wp.launch(dim=1) followed by wp.synchronize()
  batched launch   per-launch cost of 1000 launches and one synchronize
  numpy (4 B)      a.numpy() of a 1-element array (submit + download)
  axpy             a 1M-element kernel + sync, beside numpy doing the same in process

Ratios are to the RPC floor measured in the same run, so they are comparable
across noisy machines. Usage: .venv/bin/python bench/bench_runtime.py [--quick]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python"))

import warpd as wp  # noqa: E402
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc  # noqa: E402


@wp.kernel
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def xform(t: wp.array(dtype=wp.transform), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = wp.transform_point(t[i], v[i])


@wp.kernel
def tiny(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


class Daemon:
    def __init__(self, binary, workdir, *flags):
        self.binary, self.dir, self.flags = binary, Path(workdir), list(flags)
        self.address = f"unix:{self.dir / 'warpd.sock'}"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([self.binary, "--listen", self.address, "--cache-dir",
                                      str(self.dir / "cache"), "--log-level", "warn"] + self.flags,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(self.address))
        stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=30, wait_for_ready=True)
        return stub

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def median_us(fn, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def module_variant(base: ir_pb2.Module, k: int) -> ir_pb2.Module:
    """`base` with one extra statement, so its content (and cache key) is new."""
    m = ir_pb2.Module()
    m.CopyFrom(base)
    kern = m.functions[-1]
    stmt = kern.body.add()
    stmt.span.CopyFrom(kern.span)
    stmt.assign.target.name.id = "bench_unique"
    stmt.assign.value.constant.int_value = k
    return m


def session(stub):
    return stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="bench")).session


def cold_compiles(stub, base, trials, first):
    """Medians of (client ms, server compile_ms) over LoadModules of new variants of `base`."""
    sess = session(stub)
    cold, server_ms = [], []
    for k in range(first, first + trials):
        ms, resp = load(stub, sess, module_variant(base, k))
        assert not resp.cache_hit
        cold.append(ms)
        server_ms.append(resp.compile_ms)
    return statistics.median(cold), statistics.median(server_ms)


def load(stub, sess, module):
    t0 = time.perf_counter()
    resp = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=sess, module=module, devices=["cpu"]))
    return (time.perf_counter() - t0) * 1e3, resp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer trials")
    args = ap.parse_args()
    trials = 3 if args.quick else 7
    binary = os.environ.get("WARPD_BIN") or str(REPO / "build" / "bin" / "warpd")
    rows = []
    with tempfile.TemporaryDirectory(prefix="warpd-bench-") as tmp:
        d = Daemon(binary, tmp)
        stub = d.start()
        floor = median_us(lambda: stub.GetServerInfo(runtime_pb2.GetServerInfoRequest()), 300)
        rows.append(("rpc floor (GetServerInfo)", floor, ""))

        base = single_kernel_module(axpy)
        ms, server = cold_compiles(stub, base, trials, 0)
        rows.append(("cold compile, one kernel", ms * 1e3, f"server compile_ms {server:.1f}"))
        xbase = single_kernel_module(xform)
        ms, server = cold_compiles(stub, xbase, trials, 0)
        rows.append(("cold compile, one transform kernel", ms * 1e3, f"server compile_ms {server:.1f}"))
        hits = []
        for _ in range(20):
            ms, resp = load(stub, session(stub), module_variant(base, 0))
            assert resp.cache_hit
            hits.append(ms)
        rows.append(("memory-cache hit", statistics.median(hits) * 1e3, ""))
        d.stop()

        disk = []
        for _ in range(trials):
            stub = d.start()
            ms, resp = load(stub, session(stub), module_variant(base, 1))
            assert resp.cache_hit
            disk.append(ms)
            d.stop()
        rows.append(("disk-cache hit (restarted daemon)", statistics.median(disk) * 1e3, ""))

        plain = Daemon(binary, Path(tmp) / "plain", "--no-compile-pch")
        plain.dir.mkdir()
        stub = plain.start()
        ms, server = cold_compiles(stub, base, trials, 1000)
        rows.append(("cold compile, one kernel, --no-compile-pch", ms * 1e3, f"server compile_ms {server:.1f}"))
        ms, server = cold_compiles(stub, xbase, trials, 1000)
        rows.append(("cold compile, one transform kernel, --no-compile-pch", ms * 1e3,
                     f"server compile_ms {server:.1f}"))
        plain.stop()

        stub = d.start()
        os.environ["WARPD_ADDRESS"] = d.address
        wp.config.quiet = True
        wp.init()
        x = wp.zeros(1, dtype=float)
        wp.launch(tiny, dim=1, inputs=[x])
        wp.synchronize()

        def launch_sync():
            wp.launch(tiny, dim=1, inputs=[x])
            wp.synchronize()

        rows.append(("launch + synchronize", median_us(launch_sync, 300), ""))

        def batch():
            for _ in range(1000):
                wp.launch(tiny, dim=1, inputs=[x])
            wp.synchronize()

        per_launch = median_us(batch, trials) / 1000
        rows.append(("batched launch (1000 + 1 sync), per launch", per_launch, ""))
        rows.append(("numpy() of a 1-element array", median_us(lambda: x.numpy(), 300), ""))
        n = 1 << 20
        xs = wp.array(np.ones(n, dtype=np.float32), dtype=float)
        ys = wp.zeros(n, dtype=float)

        def big():
            wp.launch(axpy, dim=n, inputs=[xs, ys, 2.0])
            wp.synchronize()

        big()
        t = median_us(big, 20)
        rows.append((f"axpy over {n} floats + sync", t, f"{3 * 4 * n / t / 1e3:.2f} GB/s effective"))
        xn = np.ones(n, dtype=np.float32)
        yn = np.zeros(n, dtype=np.float32)

        def numpy_axpy():
            yn[:] = np.float32(2.0) * xn + yn

        t_np = median_us(numpy_axpy, 20)
        rows.append((f"  same axpy in numpy, in-process (reference)", t_np,
                     f"warpd/numpy {t / t_np:.2f}x"))
        expect = 2.0 * (20 + 1)
        assert abs(float(ys.numpy()[0]) - expect) < 1e-3
        wp.shutdown()
        d.stop()

    print(f"{'measurement':52s} {'median':>12s} {'x rpc floor':>12s}")
    for name, us, note in rows:
        print(f"{name:52s} {us:10.1f} us {us / floor:11.2f}x  {note}")


def single_kernel_module(kernel) -> ir_pb2.Module:
    """The IR module the client would send for `kernel` alone (it calls no functions)."""
    ir, _ = kernel.build()
    m = ir_pb2.Module(name="bench")
    m.functions.append(ir)
    return m


if __name__ == "__main__":
    main()
