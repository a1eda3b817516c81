"""warpd fairness benchmark through a real daemon: one tenant's small requests
alone vs while another tenant floods the daemon, side by side in one run.

The daemon gets a tenants file with two tenants, "flood" and "victim" (equal
weights). The flood is the one from issue 9: the flood tenant's session F
launches a long kernel (about --flood-seconds) and then makes 10 uploads at
once to arrays of its own (each must wait for F's stream), plus
--flood-sessions more sessions of that tenant each queueing long kernels.
Meanwhile the victim tenant's session V measures:

  CreateArray      a 16-element array (runs on the daemon's RPC pool)
  launch + sync    a dim=1 kernel submitted with synchronize=true

Reports each median (and max) alone and under the flood, and their ratio.
Run it against two daemons to compare builds:

  WARPD_BIN=build/bin/warpd .venv/bin/python bench/fairness_bench.py
"""

import argparse
import hashlib
import json
import os
import secrets
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python"))

import warpd as wp  # noqa: E402
from warpd import types as wt  # noqa: E402
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc  # noqa: E402


@wp.kernel
def slow(a: wp.array(dtype=float), iters: int):
    i = wp.tid()
    x = a[i]
    for k in range(iters):
        x = x * 0.999999 + 0.5
    a[i] = x


@wp.kernel
def tiny(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


class Tenant:
    """One session, spoken to with raw stubs (any number of threads)."""

    def __init__(self, stub, token, name):
        # Every call carries the tenant's token.
        md = [("authorization", "Bearer " + token)]

        class Authorized:
            def __getattr__(self, method):
                fn = getattr(stub, method)
                return lambda request, **kw: fn(request, metadata=md, **kw)

        self.stub = Authorized()
        self.session = self.stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name=name)).session
        self.modules = {}

    def array(self, n):
        return self.stub.CreateArray(runtime_pb2.CreateArrayRequest(
            session=self.session, device="cpu", dtype=wt.to_typeref(wp.float32), shape=[n],
            init=runtime_pb2.ARRAY_INIT_ZEROS)).handle

    def module(self, kernel):
        if kernel not in self.modules:
            ir, _ = kernel.build()
            m = ir_pb2.Module(name="bench")
            m.functions.append(ir)
            resp = self.stub.LoadModule(runtime_pb2.LoadModuleRequest(
                session=self.session, module=m, devices=["cpu"]))
            self.modules[kernel] = (resp.module, resp.kernels[0].name)
        return self.modules[kernel]

    def launch(self, kernel, dim, args, synchronize=False):
        cmd = runtime_pb2.Command()
        cmd.launch.module, cmd.launch.kernel = self.module(kernel)
        cmd.launch.dim.append(dim)
        for a in args:
            if isinstance(a, tuple):  # ("array", handle)
                cmd.launch.args.add().array = a[1]
            else:
                cmd.launch.args.add().bytes = a
        return self.stub.Submit(runtime_pb2.SubmitRequest(
            session=self.session, device="cpu", commands=[cmd], synchronize=synchronize))

    def upload(self, handle, data: bytes):
        self.stub.Upload(iter([runtime_pb2.UploadChunk(session=self.session, handle=handle, offset=0,
                                                        data=data)]))


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def victim_samples(v, arr, n, deadline=None):
    create, launch = [], []
    for _ in range(n):
        if deadline is not None and time.monotonic() > deadline:
            break
        create.append(timed(lambda: v.array(16)))
        launch.append(timed(lambda: v.launch(tiny, 1, [("array", arr)], synchronize=True)))
        time.sleep(0.01)
    return create, launch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flood-seconds", type=float, default=4.0)
    ap.add_argument("--flood-sessions", type=int, default=4)
    ap.add_argument("--samples", type=int, default=20)
    args = ap.parse_args()
    binary = os.environ.get("WARPD_BIN") or str(REPO / "build" / "bin" / "warpd")
    tokens = {"flood": secrets.token_hex(32), "victim": secrets.token_hex(32)}
    with tempfile.TemporaryDirectory(prefix="warpd-fair-") as tmp:
        address = f"unix:{tmp}/warpd.sock"
        with open(f"{tmp}/tenants.json", "w") as f:
            json.dump({"tenants": [{"name": n, "token_sha256": [hashlib.sha256(t.encode()).hexdigest()]}
                                   for n, t in tokens.items()]}, f)
        proc = subprocess.Popen([binary, "--listen", address, "--cache-dir", f"{tmp}/cache",
                                 "--tenants", f"{tmp}/tenants.json", "--state-dir", f"{tmp}/state",
                                 "--log-level", "warn"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(address))
            md = [("authorization", "Bearer " + tokens["victim"])]
            stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=60, wait_for_ready=True, metadata=md)
            run(stub, tokens, args, binary)
        finally:
            proc.terminate()
            proc.wait(timeout=60)


def run(stub, tokens, args, binary):
    n = 1 << 14
    # Calibrate the long kernel to about --flood-seconds.
    cal = Tenant(stub, tokens["flood"], "calibrate")
    a = cal.array(n)
    it = 2000
    cal.module(slow)  # compile outside the timing
    ms = timed(lambda: cal.launch(slow, n, [("array", a), struct.pack("<i", it)], synchronize=True))
    iters = max(1, int(it * args.flood_seconds * 1e3 / max(ms, 1e-3)))

    v = Tenant(stub, tokens["victim"], "victim")
    varr = v.array(16)
    v.launch(tiny, 1, [("array", varr)], synchronize=True)  # compile outside the timing
    alone_c, alone_l = victim_samples(v, varr, args.samples)

    flood = Tenant(stub, tokens["flood"], "flood")
    fa = flood.array(n)
    small = [flood.array(1 << 16) for _ in range(10)]
    others = [Tenant(stub, tokens["flood"], f"flood-{i}") for i in range(args.flood_sessions)]
    other_arrays = [o.array(n) for o in others]
    for o in others:
        o.module(slow)
    flood.module(slow)
    t0 = time.monotonic()
    flood.launch(slow, n, [("array", fa), struct.pack("<i", iters)])
    for o, arr in zip(others, other_arrays):
        for _ in range(2):
            o.launch(slow, n, [("array", arr), struct.pack("<i", iters)])
    payload = np.ones(1 << 16, dtype=np.float32).tobytes()
    uploads = [threading.Thread(target=flood.upload, args=(h, payload)) for h in small]
    for u in uploads:
        u.start()
    time.sleep(0.2)  # the uploads reach the daemon
    flood_c, flood_l = victim_samples(v, varr, args.samples, deadline=t0 + args.flood_seconds * 0.8)
    for u in uploads:
        u.join()
    upload_s = time.monotonic() - t0
    flood.stub.Synchronize(runtime_pb2.SynchronizeRequest(session=flood.session))

    print(f"daemon {binary}")
    print(f"flood: session F runs a {ms * iters / it / 1e3:.1f} s kernel + 10 uploads "
          f"(done after {upload_s:.1f} s); {args.flood_sessions} more sessions queue 2 such kernels each")
    for name, alone, under in (("CreateArray", alone_c, flood_c), ("launch + sync", alone_l, flood_l)):
        if not under:
            print(f"  {name:14s} alone median {statistics.median(alone):8.2f} ms; under flood: no sample "
                  f"finished within the flood")
            continue
        ma, mu = statistics.median(alone), statistics.median(under)
        print(f"  {name:14s} alone median {ma:8.2f} ms (max {max(alone):8.2f}) | under flood median "
              f"{mu:8.2f} ms (max {max(under):8.2f}, {len(under)} samples) | ratio {mu / ma:7.1f}x")


if __name__ == "__main__":
    main()
