"""warpd's side of the benchmark (a subprocess of bench/run.py).

    python bench/warpd_side.py MODE PLAN.json OUT.json

Connects to the daemon at $WARPD_ADDRESS (the daemon bench/run.py started;
$BENCH_TOKEN_FILE is its token file, for TCP) and writes its measurements to
OUT.json. MODE:

  local     everything: cold compile (first launches; LoadModule RPCs of
            saxpy and of a transform kernel), cache hits, the kernels,
            launch rates, graph replay, round trips, transfers (Unix socket)
  remote    round trips (launch + sync beside a bare RPC echo), transfers (TCP)
  disk-hit  one LoadModule of a module compiled by an earlier daemon on
            the same cache (the daemon was just restarted)
  geometry  the geometry rows (bench/geometry.py): mesh BVH builds, the
            ray-cast example, HashGrid build + query

A row that raises (an unsupported feature) is written as {"error": ...}.
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python"))
os.environ["BENCH_WP"] = "warpd"

import warpd as wp  # noqa: E402
from warpd.context import runtime  # noqa: E402
from warpd.v1 import ir_pb2, runtime_pb2  # noqa: E402

import kernels as k  # noqa: E402
import workloads as w  # noqa: E402
from timing import measure, median_s, write_json  # noqa: E402


def main():
    mode, plan_path, out_path = sys.argv[1:4]
    with open(plan_path) as f:
        plan = json.load(f)
    wp.config.quiet = True
    if os.environ.get("BENCH_TOKEN_FILE"):
        wp.config.token_file = os.environ["BENCH_TOKEN_FILE"]
    wp.init()
    r = {}
    if mode == "local":
        run_local(plan, r)
    elif mode == "remote":
        run_transport(plan, r)
    elif mode == "disk-hit":
        measure(r, "disk_hit", lambda: disk_hit(plan))
    elif mode == "geometry":
        import geometry

        geometry.run_geometry_rows(wp, plan, r)
    else:
        raise SystemExit(f"warpd_side: unknown mode {mode!r}")
    wp.synchronize()
    write_json(out_path, r)


def run_local(plan, r):
    measure(r, "cold_compile", lambda: w.cold_first_launch(wp, k.saxpy))
    measure(r, "cold_compile_again", lambda: w.cold_first_launch(wp, k.saxpy_again))
    measure(r, "cold_load_module", lambda: cold_load_modules(k.saxpy, plan["compile_trials"]))
    measure(r, "cold_load_module_xform", lambda: cold_load_modules(k.xform, plan["compile_trials"]))
    measure(r, "memory_hit", lambda: memory_hits(plan["hit_repeats"]))
    w.run_kernel_rows(wp, k, plan, r, native_loops(plan))
    w.run_autodiff_rows(wp, k, plan, r)
    measure(r, "graph_replay",
            lambda: graph_replay(plan["graph_launches"], plan["graph_replays"], plan["repeats"]))
    run_transport(plan, r)


def native_loops(plan):
    """The native loops run.py built (plan["native"]), to time in turn with
    the kernels; None when it built none."""
    if not plan.get("native"):
        return None
    import native

    return native.load(plan["native"])


def run_transport(plan, r):
    """What differs between the Unix socket and TCP: round trips and bulk transfers."""
    measure(r, "echo", lambda: {"us": median_s(echo, plan["sync_repeats"], warmup=3) * 1e6})
    measure(r, "launch_sync", lambda: w.launch_sync(wp, k, plan["sync_repeats"], echo))
    measure(r, "small_numpy", lambda: small_numpy(plan["sync_repeats"]))
    measure(r, "transfer", lambda: transfers(plan["transfer_bytes"], plan["transfer_repeats"]))


def echo():
    runtime().stub.GetServerInfo(runtime_pb2.GetServerInfoRequest())


def small_numpy(repeats: int) -> dict:
    """numpy() of a 1-element array (a submit and a download), in us."""
    x = wp.zeros(1, dtype=float, device="cpu")
    return {"us": median_s(x.numpy, repeats, warmup=3) * 1e6}


def graph_replay(launches: int, replays: int, repeats: int) -> dict:
    """us per captured launch: `launches` dim=1 launches captured once, the
    graph replayed `replays` times, then one synchronize."""
    x = wp.zeros(1, dtype=float, device="cpu")
    with wp.ScopedCapture(device="cpu") as capture:
        for _ in range(launches):
            wp.launch(k.tiny, dim=1, inputs=[x], device="cpu")

    runs = 0

    def run():
        nonlocal runs
        for _ in range(replays):
            wp.capture_launch(capture.graph)
        wp.synchronize()
        runs += 1

    t = median_s(run, repeats)
    w.check(x.numpy()[:1], [float(launches * replays * runs)], "graph replay", rel=0)
    return {"us_per_launch": t / (launches * replays) * 1e6}


def transfers(nbytes: int, repeats: int) -> dict:
    """GB/s of wp.array(numpy) + synchronize, of numpy(), and of np.copyto of the same size."""
    src = np.arange(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    held = []

    def upload():
        held.clear()  # the previous array is freed before the next is made
        held.append(wp.array(src, dtype=float, device="cpu"))
        wp.synchronize()

    t_up = median_s(upload, repeats)
    a = held[0]
    t_down = median_s(a.numpy, repeats)
    w.check(a.numpy()[[0, -1]], src[[0, -1]], "transfer", rel=0)
    t_copy = median_s(lambda: np.copyto(dst, src), repeats)
    gb = src.nbytes / 1e9
    return {"bytes": src.nbytes, "upload_gbs": gb / t_up, "download_gbs": gb / t_down,
            "memcpy_gbs": gb / t_copy}


def single_kernel_module(kernel) -> ir_pb2.Module:
    """The IR module the client sends for `kernel` alone (it calls no functions)."""
    ir, _ = kernel.build()
    m = ir_pb2.Module(name="bench")
    m.functions.append(ir)
    return m


def module_variant(base: ir_pb2.Module, key: int) -> ir_pb2.Module:
    """`base` with one extra statement, so its content (and cache key) is new."""
    m = ir_pb2.Module()
    m.CopyFrom(base)
    kern = m.functions[-1]
    stmt = kern.body.add()
    stmt.span.CopyFrom(kern.span)
    stmt.assign.target.name.id = "bench_unique"
    stmt.assign.value.constant.int_value = key
    return m


def load(session: str, module: ir_pb2.Module):
    """(client ms, LoadModuleResponse) of one LoadModule RPC."""
    rt = runtime()
    t0 = time.perf_counter()
    resp = rt.stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=module, devices=["cpu"]))
    return (time.perf_counter() - t0) * 1e3, resp


def cold_load_modules(kernel, trials: int) -> dict:
    """LoadModule RPCs of new variants of `kernel`'s module: the compile without the
    client's translation (saxpy's variant 0 is what the disk-hit runs load later)."""
    base = single_kernel_module(kernel)
    client, server = [], []
    for key in range(trials):
        ms, resp = load(runtime().session, module_variant(base, key))
        if resp.cache_hit:
            raise AssertionError("a new module was a cache hit")
        client.append(ms)
        server.append(resp.compile_ms)
    return {"ms": float(np.median(client)), "server_compile_ms": float(np.median(server))}


def memory_hits(repeats: int) -> dict:
    """LoadModule of saxpy's module (variant 0) by another session: memory-cache hits."""
    rt = runtime()
    module = module_variant(single_kernel_module(k.saxpy), 0)
    times, server = [], []
    for _ in range(repeats):
        sess = rt.stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="bench-hit")).session
        ms, resp = load(sess, module)
        rt.stub.CloseSession(runtime_pb2.CloseSessionRequest(session=sess))
        if not resp.cache_hit:
            raise AssertionError("a module loaded before was not a cache hit")
        times.append(ms)
        server.append(resp.server_ms)
    return {"ms": float(np.median(times)), "server_ms": float(np.median(server))}


def disk_hit(plan) -> dict:
    ms, resp = load(runtime().session, module_variant(single_kernel_module(k.saxpy), 0))
    if not resp.cache_hit:
        raise AssertionError("the module compiled by the previous daemon was not a disk-cache hit")
    return {"ms": ms, "server_compile_ms": resp.compile_ms}


if __name__ == "__main__":
    main()
