"""warpd multi-tenant load test: many clients, two tenants, one daemon.

Starts a daemon (build/bin/warpd or $WARPD_BIN) with a tenants file of two
tenants, "heavy" (weight 2) and "light" (weight 1), and runs N client
processes split between them (default 32: 16 each). Every client makes its
own array, then sends 1,000 launches of a kernel that adds 1 to every
element, in batches (one Submit + Synchronize per batch), timing each batch,
and at the end checks that every element equals the number of launches (the
results are verified, not assumed).

Reports, from this one run:
  throughput          launches/s over all clients, and per tenant
  batch latency       p50 / p99 of one batch round trip, per tenant
  fairness            each tenant's launch rate divided by its weight, and
                      Jain's index over the clients (1.0: perfectly even)
and writes the numbers as JSON (--json PATH).

Usage: .venv/bin/python bench/load_test.py [--clients 32] [--launches 1000]
       [--batch 50] [--elements 4096] [--json out.json]
"""

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python"))


def _kernel():
    import warpd as wp

    @wp.kernel
    def add_one(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] + 1.0

    return add_one


def client(tenant, address, token, launches, batch, elements, start_at, out):
    os.environ["WARPD_ADDRESS"] = address
    os.environ["WARPD_TOKEN"] = token
    import numpy as np
    import warpd as wp

    wp.config.quiet = True
    add_one = _kernel()
    a = wp.zeros(elements, dtype=float)
    wp.launch(add_one, dim=elements, inputs=[a])  # compile and warm up outside the timing
    wp.synchronize()
    while time.time() < start_at:
        time.sleep(0.001)
    latencies = []
    t0 = time.perf_counter()
    done = 1
    while done < launches + 1:
        n = min(batch, launches + 1 - done)
        b0 = time.perf_counter()
        for _ in range(n):
            wp.launch(add_one, dim=elements, inputs=[a])
        wp.synchronize()
        latencies.append(time.perf_counter() - b0)
        done += n
    elapsed = time.perf_counter() - t0
    values = a.numpy()
    ok = bool(np.all(values == float(launches + 1)))
    out.put({"tenant": tenant, "launches": launches, "elapsed": elapsed, "latencies": latencies, "ok": ok,
             "first_bad": None if ok else float(values[np.argmax(values != launches + 1)])})


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--elements", type=int, default=4096)
    ap.add_argument("--json", type=str, default="")
    args = ap.parse_args()

    binary = os.environ.get("WARPD_BIN") or str(REPO / "build" / "bin" / "warpd")
    work = Path(tempfile.mkdtemp(prefix="warpd-load-"))
    tokens = {"heavy": secrets.token_hex(32), "light": secrets.token_hex(32)}
    weights = {"heavy": 2, "light": 1}
    (work / "tenants.json").write_text(json.dumps({"tenants": [
        {"name": n, "token_sha256": [hashlib.sha256(t.encode()).hexdigest()], "weight": weights[n],
         "limits": {"sessions": args.clients}} for n, t in tokens.items()]}))
    sock = work / "warpd.sock"
    log = open(work / "warpd.log", "wb")
    daemon = subprocess.Popen([binary, "--listen", f"unix:{sock}", "--tenants", str(work / "tenants.json"),
                               "--cache-dir", str(work / "cache"), "--state-dir", str(work / "state"),
                               "--log-level", "warn"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while not Path(str(sock) + ".login").exists():
            if daemon.poll() is not None or time.time() > deadline:
                raise SystemExit(f"daemon did not start: see {work / 'warpd.log'}")
            time.sleep(0.05)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        start_at = time.time() + 5.0 + 0.25 * args.clients  # every client ready and warmed up
        procs, tenant_of = [], []
        for i in range(args.clients):
            tenant = "heavy" if i % 2 == 0 else "light"
            p = ctx.Process(target=client, args=(tenant, f"unix:{sock}", tokens[tenant], args.launches, args.batch,
                                                 args.elements, start_at, out))
            p.start()
            procs.append(p)
            tenant_of.append(tenant)
        results = [out.get(timeout=900) for _ in procs]
        for p in procs:
            p.join()
    finally:
        daemon.terminate()
        daemon.wait(30)
    bad = [r for r in results if not r["ok"]]
    if bad:
        raise SystemExit(f"{len(bad)} client(s) read wrong results (e.g. {bad[0]['first_bad']} "
                         f"instead of {args.launches + 1})")
    report = {"clients": args.clients, "launches_per_client": args.launches, "batch": args.batch,
              "elements": args.elements, "tenants": {}}
    wall = max(r["elapsed"] for r in results)
    total = sum(r["launches"] for r in results)
    report["throughput_launches_per_s"] = total / wall
    rates = [r["launches"] / r["elapsed"] for r in results]
    report["jain_index"] = sum(rates) ** 2 / (len(rates) * sum(x * x for x in rates))
    print(f"{args.clients} clients x {args.launches} launches ({args.elements} elements, batches of "
          f"{args.batch}), every result verified")
    print(f"  all: {total / wall:,.0f} launches/s over {wall:.2f} s; Jain's index over clients "
          f"{report['jain_index']:.3f}")
    print(f"  {'tenant':<8} {'weight':>6} {'clients':>7} {'launches/s':>11} {'per weight':>10} "
          f"{'p50 batch ms':>12} {'p99 batch ms':>12}")
    for name in ("heavy", "light"):
        rs = [r for r in results if r["tenant"] == name]
        if not rs:
            continue
        rate = sum(r["launches"] / r["elapsed"] for r in rs)
        lat = [x for r in rs for x in r["latencies"]]
        t = {"weight": weights[name], "clients": len(rs), "launches_per_s": rate,
             "launches_per_s_per_weight": rate / weights[name],
             "batch_p50_ms": 1e3 * percentile(lat, 50), "batch_p99_ms": 1e3 * percentile(lat, 99)}
        report["tenants"][name] = t
        print(f"  {name:<8} {t['weight']:>6} {t['clients']:>7} {rate:>11,.0f} {t['launches_per_s_per_weight']:>10,.0f} "
              f"{t['batch_p50_ms']:>12.2f} {t['batch_p99_ms']:>12.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
