"""How much memory one tenant can make a daemon hold with commands (issue 23).

Replays the hostile-client probe of issue 23 against a daemon binary: a
tenant with a 64 MiB memory quota
  1. captures 9 graphs of 110 launches, each launch carrying eight 64 KiB
     struct arguments (a 512 KiB argument block the graph keeps), and
  2. queues 800 such launches behind a kernel that runs until cancelled,
and reports, for each probe, how many were accepted, the tenant's counted
memory, the first refusal, and the daemon's RSS growth. On main before
issue 23 the probe raised RSS by 520 MiB (graphs) and 610 MiB (queue) while
the tenant's usage showed 128 KiB; with charged commands each stays near the
quota.

  WARPD_BIN=build/bin/warpd .venv/bin/python bench/held_memory.py
"""

import hashlib
import os
import secrets
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python"))

import warpd as wp  # noqa: E402
import warpd.types as wt  # noqa: E402
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc  # noqa: E402

V64 = wp.types.vector(length=64, dtype=wp.float32)
Big = wp.struct(type("Big", (), {"__annotations__": {f"m{i}": V64 for i in range(256)}}))
MiB = 1 << 20


@wp.kernel
def hold8(s0: Big, s1: Big, s2: Big, s3: Big, s4: Big, s5: Big, s6: Big, s7: Big, out: wp.array(dtype=float)):
    out[0] = s0.m0[0] + s7.m255[63]


@wp.kernel
def spin(iters: int, a: wp.array(dtype=float)):
    x = float(0.0)
    for k in range(iters):
        x = x * 0.999999 + 0.5
    a[0] = x


def rss(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Client:
    def __init__(self, address, token):
        self.md = [("authorization", "Bearer " + token)]
        self.stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(address))
        self.session = self.call("OpenSession", runtime_pb2.OpenSessionRequest(client_name="probe")).session
        self.out = self.call("CreateArray", runtime_pb2.CreateArrayRequest(
            session=self.session, device="cpu", dtype=wt.to_typeref(wp.float32), shape=[1])).handle
        self.loaded = {}

    def call(self, method, request):
        return getattr(self.stub, method)(request, metadata=self.md, timeout=300)

    def launch(self, kernel, values):
        if kernel not in self.loaded:
            ir, _ = kernel.build()
            m = ir_pb2.Module(name="probe")
            m.functions.append(ir)
            r = self.call("LoadModule", runtime_pb2.LoadModuleRequest(session=self.session, module=m, devices=["cpu"]))
            self.loaded[kernel] = (r.module, r.kernels[0])
        module, info = self.loaded[kernel]
        cmd = runtime_pb2.Command()
        cmd.launch.module, cmd.launch.kernel = module, info.name
        cmd.launch.dim.append(1)
        for v in values(info):
            cmd.launch.args.add().bytes = v
        cmd.launch.args.add().array = self.out
        return cmd

    def big(self):
        return self.launch(hold8, lambda info: [bytes(p.size) for p in info.params[:8]])

    def memory(self):
        u = self.call("GetUsage", runtime_pb2.GetUsageRequest(session=self.session))
        return {q.resource: q.used for q in u.quotas}["memory_bytes"]


def probe(name, daemon_pid, client, steps):
    """Runs `steps` (callables) until one is refused; prints the figures."""
    base_rss, base_mem = rss(daemon_pid), client.memory()
    accepted, refusal = 0, "none"
    for step in steps:
        try:
            accepted += step()
        except grpc.RpcError as e:
            refusal = f"{e.code().name}: {e.details()[:160]}"
            break
    time.sleep(0.2)
    print(f"{name}: {accepted} launches of 512 KiB accepted; tenant usage +{(client.memory() - base_mem) / MiB:.1f} "
          f"MiB; daemon RSS +{(rss(daemon_pid) - base_rss) / MiB:.1f} MiB; refusal: {refusal}")


def main():
    binary = os.environ.get("WARPD_BIN", str(REPO / "build" / "bin" / "warpd"))
    token = secrets.token_hex(32)
    with tempfile.TemporaryDirectory() as tmp:
        tenants = Path(tmp) / "tenants.json"
        tenants.write_text('{"tenants": [{"name": "a", "token_sha256": ["%s"], "limits": {"memory": "64M"}}]}'
                           % hashlib.sha256(token.encode()).hexdigest())
        sock = Path(tmp) / "warpd.sock"
        proc = subprocess.Popen([binary, "--listen", f"unix:{sock}", "--cache-dir", str(Path(tmp) / "cache"),
                                 "--tenants", str(tenants), "--token-file", str(Path(tmp) / "token"),
                                 "--state-dir", str(Path(tmp) / "state"), "--log-level", "warn"])
        try:
            while not Path(str(sock) + ".login").exists():
                time.sleep(0.05)
            time.sleep(0.2)
            print(f"daemon RSS at start: {rss(proc.pid) / MiB:.1f} MiB")
            graphs = Client(f"unix:{sock}", token)
            cmds = [graphs.big() for _ in range(110)]

            def graph():
                graphs.call("CreateGraph", runtime_pb2.CreateGraphRequest(session=graphs.session, device="cpu",
                                                                         commands=cmds))
                return 110

            probe("9 graphs of 110 launches", proc.pid, graphs, [graph] * 9)
            graphs.call("CloseSession", runtime_pb2.CloseSessionRequest(session=graphs.session))

            queue = Client(f"unix:{sock}", token)
            forever = queue.launch(spin, lambda info: [struct.pack("<i", 2**31 - 1)])
            one = queue.big()
            queue.call("Submit", runtime_pb2.SubmitRequest(session=queue.session, device="cpu", commands=[forever]))

            def queued():
                queue.call("Submit", runtime_pb2.SubmitRequest(session=queue.session, device="cpu",
                                                               commands=[one] * 50))
                return 50

            probe("800 queued launches", proc.pid, queue, [queued] * 16)
            queue.call("CloseSession", runtime_pb2.CloseSessionRequest(session=queue.session))
            time.sleep(0.5)
            print(f"daemon RSS after both sessions closed: {rss(proc.pid) / MiB:.1f} MiB")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
