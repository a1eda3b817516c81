"""warpd's figures on a real GPU (issue 26), for scripts/gpu-check.sh.

Starts a private daemon from BINARY (the lean CUDA-only build, which opens
every GPU; a full build needs --cuda-execution, passed with --cuda-execution)
and measures on cuda:0, through the Python client as a user would:
  - launch + synchronize latency of a dim=1 kernel (median of 200);
  - queued launches per second (2,000 dim=1 launches, then one synchronize);
  - graph replay cost per launch (a captured graph of 2,000 dim=1 launches,
    replayed as one CUDA graph 20 times);
  - saxpy on 2^26 floats: effective bandwidth (12 bytes per element) vs
    ideal, and the result checked against numpy;
  - wp.matmul of two 4096 x 4096 float32 matrices through cuBLAS, GFLOP/s,
    64 rows checked against numpy;
  - upload and download of 256 MiB (host <-> device through the daemon's
    pinned staging; over the local socket's shared memory when the client
    maps it), GB/s.
Writes JSON to --out (and prints it), and the daemon's log beside it
(gpu-daemon-bench.daemon.log for gpu-daemon-bench.json). Exit status 1 when a checked value is
wrong, 2 when no CUDA device runs work.

Usage: python3 bench/gpu_daemon.py BINARY [--out FILE] [--cuda-execution] [--quick]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "clients" / "python"))

from daemon import Daemon  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--out")
    ap.add_argument("--cuda-execution", action="store_true")
    ap.add_argument("--quick", action="store_true", help="small sizes (a dry run on the stand-in driver)")
    args = ap.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="warpd-gpu-bench-"))
    d = Daemon(args.binary, workdir, extra_args=["--cuda-execution"] if args.cuda_execution else [])
    d.start()
    result = {"binary": args.binary}
    status = 0
    try:
        os.environ["WARPD_ADDRESS"] = d.unix_address
        os.environ.pop("WARPD_TOKEN", None)
        import numpy as np

        import warpd as wp

        wp.config.token_file = str(d.token_file)
        wp.init()
        gpus = wp.get_cuda_devices()
        if not gpus:
            print("gpu_daemon: no CUDA device runs work on this daemon", file=sys.stderr)
            return 2
        gpu = gpus[0]
        result["device"] = {"name": gpu.name, "alias": gpu.alias, "arch": f"sm_{gpu.arch}",
                            "memory_gib": round(gpu.total_memory / 2**30, 1)}

        @wp.kernel(module="gpu_bench")
        def nothing(a: wp.array(dtype=float)):
            a[wp.tid()] = 1.0

        @wp.kernel(module="gpu_bench")
        def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
            i = wp.tid()
            out[i] = a * x[i] + y[i]

        one = wp.zeros(1, dtype=float, device=gpu)
        t0 = time.perf_counter()
        wp.launch(nothing, dim=1, inputs=[one], device=gpu)
        wp.synchronize_device(gpu)
        result["first_launch_s"] = round(time.perf_counter() - t0, 3)  # compile + module load included

        times = []
        for _ in range(200):
            t0 = time.perf_counter()
            wp.launch(nothing, dim=1, inputs=[one], device=gpu)
            wp.synchronize_device(gpu)
            times.append(time.perf_counter() - t0)
        result["launch_sync_us"] = round(statistics.median(times) * 1e6, 1)

        launches = 2000
        t0 = time.perf_counter()
        for _ in range(launches):
            wp.launch(nothing, dim=1, inputs=[one], device=gpu)
        wp.synchronize_device(gpu)
        result["queued_launches_per_s"] = round(launches / (time.perf_counter() - t0))

        # A captured graph of dim=1 launches, replayed as one CUDA graph: cost per launch.
        per_graph = 200 if args.quick else 2000
        wp.capture_begin(device=gpu)
        for _ in range(per_graph):
            wp.launch(nothing, dim=1, inputs=[one], device=gpu)
        graph = wp.capture_end(device=gpu)
        wp.capture_launch(graph)  # the first replay records the CUDA graph
        wp.synchronize_device(gpu)
        replays = 5 if args.quick else 20
        t0 = time.perf_counter()
        for _ in range(replays):
            wp.capture_launch(graph)
        wp.synchronize_device(gpu)
        result["graph_replay_us_per_launch"] = round((time.perf_counter() - t0) / (replays * per_graph) * 1e6, 3)

        n = 1 << (20 if args.quick else 26)
        rng = np.random.default_rng(0)
        xs = rng.standard_normal(n).astype(np.float32)
        ys = rng.standard_normal(n).astype(np.float32)
        x, y = wp.array(xs, device=gpu), wp.array(ys, device=gpu)
        out = wp.empty(n, dtype=float, device=gpu)
        wp.launch(saxpy, dim=n, inputs=[2.0, x, y, out], device=gpu)
        wp.synchronize_device(gpu)
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            wp.launch(saxpy, dim=n, inputs=[2.0, x, y, out], device=gpu)
            wp.synchronize_device(gpu)
            times.append(time.perf_counter() - t0)
        best = min(times)
        result["saxpy_elements"] = n
        result["saxpy_ms"] = round(best * 1e3, 3)
        result["saxpy_gb_per_s"] = round(12 * n / best / 1e9, 1)  # with one launch's overhead in it
        ok = np.allclose(out.numpy(), np.float32(2.0) * xs + ys, rtol=1e-6, atol=1e-6)
        result["saxpy_correct"] = bool(ok)
        if not ok:
            status = 1

        # wp.matmul through cuBLAS: float32 GFLOP/s (k = m = n), checked against numpy.
        dim = 256 if args.quick else 4096
        am = rng.standard_normal((dim, dim)).astype(np.float32)
        bm = rng.standard_normal((dim, dim)).astype(np.float32)
        a_dev, b_dev = wp.array(am, device=gpu), wp.array(bm, device=gpu)
        d_dev = wp.zeros((dim, dim), dtype=float, device=gpu)
        try:
            wp.matmul(a_dev, b_dev, d_dev, d_dev)
            wp.synchronize_device(gpu)
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                wp.matmul(a_dev, b_dev, d_dev, d_dev)
                wp.synchronize_device(gpu)
                times.append(time.perf_counter() - t0)
            result["matmul_dim"] = dim
            result["matmul_gflop_per_s"] = round(2 * dim**3 / min(times) / 1e9, 1)
            probe = rng.integers(0, dim, 64)
            want = (am[probe].astype(np.float64) @ bm.astype(np.float64))
            mm_ok = bool(np.allclose(d_dev.numpy()[probe], want, rtol=1e-3, atol=1e-2 * np.sqrt(dim)))
            result["matmul_correct"] = mm_ok
            if not mm_ok:
                status = 1
        except Exception as err:  # no cuBLAS on the machine: say so, keep the other rows
            result["matmul_error"] = f"{type(err).__name__}: {err}"

        size = (16 if args.quick else 256) << 20
        host = rng.integers(0, 255, size, dtype=np.uint8)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            dev = wp.array(host, dtype=wp.uint8, device=gpu)
            wp.synchronize_device(gpu)
            times.append(time.perf_counter() - t0)
        result["upload_gb_per_s"] = round(size / min(times) / 1e9, 2)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            back = dev.numpy()
            times.append(time.perf_counter() - t0)
        result["download_gb_per_s"] = round(size / min(times) / 1e9, 2)
        result["transfer_bytes"] = size
        round_trip_ok = bool(np.array_equal(back, host))
        result["transfer_correct"] = round_trip_ok
        if not round_trip_ok:
            status = 1
    finally:
        d.stop()
        if args.out:  # the daemon's log beside the figures, for what went wrong
            shutil.copyfile(workdir / "daemon.log", Path(args.out).with_suffix(".daemon.log"))
        shutil.rmtree(workdir, ignore_errors=True)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
