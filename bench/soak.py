"""warpd soak: mixed operations from several clients of two tenants, with
clients SIGKILLed on a schedule, every value checked, and the daemon's RSS,
open file descriptors and threads compared before and after (issue 23).

Starts its own daemon (build/bin/warpd or $WARPD_BIN) with a tenants file of
two tenants, "alpha" (memory quota --alpha-memory, default 256M) and "beta"
(no quota of its own), a short --session-grace (so the sessions of killed
clients are closed quickly), listening on a Unix socket and on loopback TCP,
with metrics on loopback (used to see sessions closed and memory returned).

Each client is this file run with --client: a process of the Python client
(`import warpd as wp`, configured by WARPD_ADDRESS / WARPD_TOKEN) that runs
a seeded random mix of operations until stopped:

  create    arrays of float32 (1-D and 2-D), int32 and vec3 from NumPy,
            wp.zeros or wp.full; now and then one of MiBs
  upload    assign() new NumPy data to a live array
  axpy      y = a*x + y
  reduce    atomic_add of an int32 array into one element
  grid2d    a 2-D kernel g[i, j] = g[i, j]*s + (100 i + j)
  struct    a kernel taking a @wp.struct (scale, vec3 offset, int)
  graph     capture axpy + wp.copy, replay it 1-3 times, free it
  copy      wp.copy between arrays of one dtype and size
  fill      fill_ with a random value
  download  numpy() of a random live array
  persist   persistent save (sometimes durable) / list / load / write through
            the loaded array / delete of a tenant-unique name, then a load of
            the deleted name (NOT_FOUND expected)
  free      del of a random array
  invalid   a request that must fail, with its error type and code checked:
            an out-of-bounds kernel write (KernelError, OUT_OF_RANGE; the
            array must be unchanged), an array of the wrong dtype as a kernel
            argument (TypeError), loading a name never saved (NOT_FOUND),
            saving an invalid name (INVALID_ARGUMENT), saving a taken name
            (ALREADY_EXISTS), and for a tenant with a quota an array past it
            (RESOURCE_EXHAUSTED)

All data are small integers (in float32 too), so every result is exact: each
client keeps a NumPy reference of every array it holds and every value read
back is compared with it exactly. A mismatch is a wrong value (logged with
details); an error that was not expected is an unexpected error. Clients
write their counts to stdout as "SOAK {json}" lines (deltas, at least every
--report-every operations and at once after a failure), so counts survive
a client being killed.

The parent starts the daemon, runs a warm-up (one client per tenant for
--warmup-ops operations each, so that compiled modules and first-use
allocations are in the baseline, then one more client SIGKILLed after
--warmup-kill-after seconds), deletes any persistent names left, waits until
the metrics show no session open and no tenant memory held, and takes the
baseline (VmRSS, entries of /proc/PID/fd, Threads; the smallest of
--samples readings a second apart). It then runs --clients-alpha + --clients-beta
clients (Unix socket and TCP alternating) for --minutes (or --seconds),
SIGKILLs one client every --kill-every seconds (round robin) and starts a
replacement, stops the clients (SIGTERM: each finishes its operation and
exits), deletes leftover persistent names, waits for the sessions to close
and the memory to come back, measures again and stops the daemon (it must
exit 0). It exits 1 when there were wrong values or unexpected errors, a
client died on its own, the daemon died or did not exit cleanly, sessions or
tenant memory were not returned, or fds / threads / RSS grew past
--fd-tolerance / --thread-tolerance / --rss-tolerance-mib (RSS is reported
with a generous tolerance: malloc keeps freed memory). Two things are
allowed for: gRPC core's executor threads ("default-executor"), which gRPC
starts under load up to 2 x cores and keeps, are reported but not counted
as growth; and the daemon closes a finished command connection's
descriptor only when it accepts the next one, so the parent makes one
command-socket connection before each measurement (see
touch_command_socket). When fds or threads changed, the report names them
(threads by name, fds by target: socket addresses, files, memfd).

  .venv/bin/python bench/soak.py                       # 12 minutes, a kill every 2
  .venv/bin/python bench/soak.py --minutes 3 --kill-every 40 --seed 7
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python"))

import numpy as np  # noqa: E402

import warpd as wp  # noqa: E402

KINDS = ("create", "upload", "axpy", "reduce", "grid2d", "struct", "graph", "copy", "fill", "download",
         "persist", "free", "invalid")
WEIGHTS = {"create": 10, "upload": 8, "axpy": 12, "reduce": 8, "grid2d": 8, "struct": 8, "graph": 5,
           "copy": 6, "fill": 6, "download": 12, "persist": 4, "free": 8, "invalid": 3}
MiB = 1 << 20
# gRPC core's executor threads (their name as /proc shows it, cut to 15 characters).
GRPC_EXECUTOR = "default-executo"
# A float array's values are reset once they pass this (exact in float32 below 2^24).
LIMIT = float(1 << 22)

# ---------------------------------------------------------------- kernels


@wp.struct
class Shift:
    scale: float
    offset: wp.vec3
    k: int


@wp.kernel
def soak_axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def soak_reduce(a: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(out, 0, a[i])


@wp.kernel
def soak_grid2d(g: wp.array2d(dtype=float), s: float):
    i, j = wp.tid()
    g[i, j] = g[i, j] * s + float(i * 100 + j)


@wp.kernel
def soak_shift(p: Shift, v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = v[i] * p.scale + p.offset + wp.vec3(float(p.k), 0.0, 0.0)


@wp.kernel
def soak_write_past_end(a: wp.array(dtype=float), k: int):
    i = wp.tid()
    a[i + k] = -1.0


# ----------------------------------------------------------------- client


class WrongValue(Exception):
    pass


class Entry:
    """A live array and the NumPy reference of what it must hold."""
    __slots__ = ("arr", "ref", "kind")

    def __init__(self, arr, ref, kind):
        self.arr, self.ref, self.kind = arr, ref, kind


class Client:
    """One soak client: random operations on its own arrays, every read checked."""

    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.client_seed)
        self.nprng = np.random.default_rng(args.client_seed)
        self.tag = f"{args.tenant}-{args.slot}-{args.generation}-{os.getpid()}"
        self.pool: list[Entry] = []
        # Arrays the current operation uses: never freed to make room during it.
        self.busy: list[Entry] = []
        self.names = 0
        self.stop = False
        self.delta = {"ops": {}, "expected": {}, "wrong": 0, "unexpected": 0, "details": []}
        self.last_emit = time.monotonic()
        self.pending = 0

    # --------------------------------------------------------- reporting

    def emit(self, final=False):
        d = self.delta
        if final:
            d["final"] = True
        sys.stdout.write("SOAK " + json.dumps(d) + "\n")
        sys.stdout.flush()
        self.delta = {"ops": {}, "expected": {}, "wrong": 0, "unexpected": 0, "details": []}
        self.last_emit = time.monotonic()
        self.pending = 0

    def count(self, kind, n=1):
        self.delta["ops"][kind] = self.delta["ops"].get(kind, 0) + n
        self.pending += n

    def expected(self, what):
        self.delta["expected"][what] = self.delta["expected"].get(what, 0) + 1

    def failure(self, field, text):
        self.delta[field] += 1
        self.delta["details"].append(f"[{self.tag}] {text}"[:2000])
        print(f"[{self.tag}] {field}: {text}", file=sys.stderr, flush=True)
        self.emit()

    # ------------------------------------------------------------ checks

    def check(self, entry, op, got=None):
        """Reads `entry` back and compares it with its reference, exactly."""
        if got is None:
            got = entry.arr.numpy()
        ref = entry.ref
        if got.shape != ref.shape or got.dtype != ref.dtype:
            raise WrongValue(f"{op}: {entry.kind} array read back as {got.dtype}{got.shape}, expected "
                             f"{ref.dtype}{ref.shape}")
        if not np.array_equal(got, ref):
            bad = np.argwhere(got != ref)
            first = tuple(int(v) for v in bad[0])
            raise WrongValue(f"{op}: {entry.kind} array of shape {ref.shape}: {len(bad)} wrong element(s), "
                             f"first at {first}: got {got[first]!r}, expected {ref[first]!r}; "
                             f"seed {self.args.client_seed}")

    def renew_if_large(self, entry):
        if entry.kind != "i32" and entry.ref.size and float(np.abs(entry.ref).max()) > LIMIT:
            entry.ref = self.data(entry.kind, entry.ref.shape[:2] if entry.kind == "f2d" else entry.ref.shape[0])
            entry.arr.assign(entry.ref)
            self.count("upload")

    # ------------------------------------------------------------- arrays

    def data(self, kind, shape):
        r = self.nprng
        if kind == "i32":
            return r.integers(-1000, 1000, size=shape, dtype=np.int32)
        if kind == "vec3":
            return r.integers(-100, 100, size=(shape, 3)).astype(np.float32)
        return r.integers(-100, 100, size=shape).astype(np.float32)

    def pool_bytes(self):
        return sum(e.ref.nbytes for e in self.pool)

    def new_shape(self, kind):
        large = self.rng.random() < 0.03
        n = self.rng.randint(65536, 1 << 20) if large else self.rng.randint(1, 4096)
        if kind == "f2d":
            rows = self.rng.randint(1, 64)
            return (rows, max(1, min(n // rows, 1024)))
        if kind == "vec3":
            n = max(1, n // 3)
        return n

    def create(self, kind=None, shape=None):
        kind = kind or self.rng.choice(("f32", "f32", "f2d", "i32", "vec3"))
        shape = shape if shape is not None else self.new_shape(kind)
        while len(self.pool) >= self.args.max_arrays or self.pool_bytes() > self.args.max_pool_mib * MiB:
            if not any(e not in self.busy for e in self.pool):
                break
            self.free()
        dtype = {"f32": wp.float32, "f2d": wp.float32, "i32": wp.int32, "vec3": wp.vec3}[kind]
        how = self.rng.random()
        if how < 0.6:
            ref = self.data(kind, shape)
            arr = wp.array(ref, dtype=dtype)
        elif how < 0.8:
            arr = wp.zeros(shape, dtype=dtype)
            ref = np.zeros(shape if kind != "vec3" else (shape, 3), dtype=np.int32 if kind == "i32" else np.float32)
        else:
            v = self.rng.randint(-50, 50)
            value = wp.vec3(v, v + 1, v + 2) if kind == "vec3" else (v if kind == "i32" else float(v))
            arr = wp.full(shape, value, dtype=dtype)
            if kind == "vec3":
                ref = np.tile(np.array([v, v + 1, v + 2], dtype=np.float32), (shape, 1))
            else:
                ref = np.full(shape, v, dtype=np.int32 if kind == "i32" else np.float32)
        e = Entry(arr, ref, kind)
        self.pool.append(e)
        self.busy.append(e)
        self.count("create")
        if self.rng.random() < 0.3:
            self.check(e, "create")
        return e

    def pick(self, kind, exclude=None, shape=None):
        choices = [e for e in self.pool if e.kind == kind and e is not exclude
                   and (shape is None or e.ref.shape == shape)]
        if choices:
            e = self.rng.choice(choices)
            self.busy.append(e)
            return e
        if shape is not None:
            return self.create(kind, shape if kind != "vec3" else shape[0])
        return self.create(kind)

    def any(self):
        """A random live array (a new one when there is none)."""
        if not self.pool:
            return self.create()
        e = self.rng.choice(self.pool)
        self.busy.append(e)
        return e

    def free(self):
        idle = [i for i, e in enumerate(self.pool) if e not in self.busy]
        if not idle:
            return
        e = self.pool.pop(self.rng.choice(idle))
        del e.arr
        self.count("free")

    # --------------------------------------------------------- operations

    def op_create(self):
        self.create()

    def op_free(self):
        self.free()

    def op_upload(self):
        e = self.any()
        e.ref = self.data(e.kind, e.ref.shape[:2] if e.kind == "f2d" else e.ref.shape[0])
        e.arr.assign(e.ref)
        self.count("upload")
        if self.rng.random() < 0.3:
            self.check(e, "upload")

    def op_axpy(self):
        x = self.pick("f32")
        y = self.pick("f32", exclude=x, shape=x.ref.shape)
        a = float(self.rng.choice((-2, -1, 1, 2, 3)))
        wp.launch(soak_axpy, dim=len(x.ref), inputs=[x.arr, y.arr, a])
        y.ref = (np.float32(a) * x.ref + y.ref).astype(np.float32)
        self.count("axpy")
        if self.rng.random() < 0.4:
            self.check(y, "axpy")
        self.renew_if_large(y)

    def op_reduce(self):
        a = self.pick("i32")
        out = wp.zeros(1, dtype=wp.int32)
        wp.launch(soak_reduce, dim=len(a.ref), inputs=[a.arr, out])
        got = out.numpy()
        want = np.array([int(a.ref.astype(np.int64).sum())], dtype=np.int32)
        if not np.array_equal(got, want):
            raise WrongValue(f"reduce: atomic_add sum of {len(a.ref)} int32 is {got[0]}, expected {want[0]}; "
                             f"seed {self.args.client_seed}")
        self.count("reduce")

    def op_grid2d(self):
        g = self.pick("f2d")
        s = float(self.rng.choice((-1, 1, 2)))
        rows, cols = g.ref.shape
        wp.launch(soak_grid2d, dim=(rows, cols), inputs=[g.arr, s])
        add = (np.arange(rows)[:, None] * 100 + np.arange(cols)[None, :]).astype(np.float32)
        g.ref = (g.ref * np.float32(s) + add).astype(np.float32)
        self.count("grid2d")
        if self.rng.random() < 0.4:
            self.check(g, "grid2d")
        self.renew_if_large(g)

    def op_struct(self):
        v = self.pick("vec3")
        p = Shift()
        p.scale = float(self.rng.choice((-1, 1, 2)))
        off = [self.rng.randint(-20, 20) for _ in range(3)]
        p.offset = wp.vec3(*off)
        p.k = self.rng.randint(-5, 5)
        wp.launch(soak_shift, dim=len(v.ref), inputs=[p, v.arr])
        v.ref = (v.ref * np.float32(p.scale) + np.array(off, dtype=np.float32)
                 + np.array([p.k, 0, 0], dtype=np.float32)).astype(np.float32)
        self.count("struct")
        if self.rng.random() < 0.4:
            self.check(v, "struct")
        self.renew_if_large(v)

    def op_graph(self):
        x = self.pick("f32")
        y = self.pick("f32", exclude=x, shape=x.ref.shape)
        z = self.pick("f32", exclude=y, shape=x.ref.shape)
        if z is x:
            z = self.create("f32", x.ref.shape[0])
        a = float(self.rng.choice((-1, 1, 2)))
        wp.capture_begin()
        try:
            wp.launch(soak_axpy, dim=len(x.ref), inputs=[x.arr, y.arr, a])
            wp.copy(z.arr, y.arr)
        finally:
            graph = wp.capture_end()
        for _ in range(self.rng.randint(1, 3)):
            wp.capture_launch(graph)
            y.ref = (np.float32(a) * x.ref + y.ref).astype(np.float32)
            z.ref = y.ref.copy()
        del graph
        self.count("graph")
        self.check(y, "graph")
        self.check(z, "graph")
        self.renew_if_large(y)
        self.renew_if_large(z)

    def op_copy(self):
        src = self.any()
        dst = self.pick(src.kind, exclude=src, shape=src.ref.shape)
        wp.copy(dst.arr, src.arr)
        dst.ref = src.ref.copy()
        self.count("copy")
        if self.rng.random() < 0.4:
            self.check(dst, "copy")

    def op_fill(self):
        e = self.any()
        v = self.rng.randint(-500, 500)
        if e.kind == "vec3":
            e.arr.fill_(wp.vec3(v, -v, 2 * v))
            e.ref = np.tile(np.array([v, -v, 2 * v], dtype=np.float32), (e.ref.shape[0], 1))
        elif e.kind == "i32":
            e.arr.fill_(v)
            e.ref = np.full(e.ref.shape, v, dtype=np.int32)
        else:
            e.arr.fill_(float(v))
            e.ref = np.full(e.ref.shape, v, dtype=np.float32)
        self.count("fill")
        if self.rng.random() < 0.4:
            self.check(e, "fill")

    def op_download(self):
        e = self.any()
        self.check(e, "download")
        self.count("download")

    def name(self):
        self.names += 1
        return f"soak-{self.tag}-{self.names}"

    def op_persist(self):
        e = self.any()
        name = self.name()
        durable = self.rng.random() < 0.2
        wp.persistent.save(name, e.arr, durable=durable)
        listed = {p.name: p for p in wp.persistent.list()}
        if name not in listed or listed[name].shape != e.arr.shape or listed[name].durable != durable:
            raise WrongValue(f"persist: list() has {listed.get(name)!r} for '{name}' (shape {e.arr.shape}, "
                             f"durable={durable})")
        b = wp.persistent.load(name)
        self.check(Entry(b, e.ref, e.kind), "persist load")
        if self.rng.random() < 0.5:  # a write through the loaded array is seen by the original
            v = self.rng.randint(-300, 300)
            if e.kind == "vec3":
                b.fill_(wp.vec3(v, v, v))
                e.ref = np.full(e.ref.shape, v, dtype=np.float32)
            elif e.kind == "i32":
                b.fill_(v)
                e.ref = np.full(e.ref.shape, v, dtype=np.int32)
            else:
                b.fill_(float(v))
                e.ref = np.full(e.ref.shape, v, dtype=np.float32)
            wp.synchronize()
            self.check(e, "persist write-through")
        del b
        wp.persistent.delete(name)
        self.expect(lambda: wp.persistent.load(name), wp.NotFoundError, "NOT_FOUND", "load deleted")
        self.count("persist")

    def expect(self, fn, cls, code, what):
        """Runs fn, which must raise `cls` (with gRPC status `code` when given)."""
        try:
            fn()
        except cls as err:
            if code is not None and getattr(getattr(err, "code", None), "name", None) != code:
                raise AssertionError(f"{what}: expected {cls.__name__} with code {code}, got code "
                                     f"{getattr(err, 'code', None)}: {err}") from None
            self.expected(what)
            return err
        raise AssertionError(f"{what}: expected {cls.__name__}{' ' + code if code else ''}, got no error")

    def op_invalid(self):
        choices = ["oob", "dtype", "missing", "badname", "duplicate"]
        if self.args.quota_bytes:
            choices.append("quota")
        what = self.rng.choice(choices)
        if what == "oob":
            a = self.pick("f32")
            wp.synchronize()
            wp.launch(soak_write_past_end, dim=len(a.ref), inputs=[a.arr, len(a.ref)])
            err = self.expect(wp.synchronize, wp.KernelError, "OUT_OF_RANGE", "out-of-bounds write")
            if "out of bounds" not in str(err):
                raise AssertionError(f"out-of-bounds write: message does not say so: {err}")
            self.check(a, "after out-of-bounds write")
        elif what == "dtype":
            i = self.pick("i32")
            y = self.pick("f32")
            self.expect(lambda: wp.launch(soak_axpy, dim=1, inputs=[i.arr, y.arr, 1.0]), TypeError, None,
                        "int32 array for a float32 parameter")
        elif what == "missing":
            self.expect(lambda: wp.persistent.load(f"soak-never-saved-{self.tag}"), wp.NotFoundError,
                        "NOT_FOUND", "load of a name never saved")
        elif what == "badname":
            a = self.any()
            self.expect(lambda: wp.persistent.save("../" + self.tag, a.arr), wp.InvalidArgumentError,
                        "INVALID_ARGUMENT", "invalid persistent name")
        elif what == "duplicate":
            a = self.any()
            name = self.name()
            wp.persistent.save(name, a.arr)
            try:
                self.expect(lambda: wp.persistent.save(name, a.arr), wp.WarpdError, "ALREADY_EXISTS",
                            "persistent name taken")
            finally:
                wp.persistent.delete(name)
        else:  # quota
            n = self.args.quota_bytes // 4 + 1024
            self.expect(lambda: wp.zeros(n, dtype=wp.float32), wp.WarpdError, "RESOURCE_EXHAUSTED",
                        "array past the tenant's memory quota")
        self.count("invalid")

    # ----------------------------------------------------------------- run

    def recover(self):
        """After an unexpected error: clear the stream's error and drop every array."""
        try:
            wp.synchronize()
        except Exception:
            pass
        self.pool.clear()

    def run(self):
        ops = {k: getattr(self, "op_" + k) for k in KINDS}
        kinds, weights = list(WEIGHTS), [WEIGHTS[k] for k in WEIGHTS]
        todo = list(KINDS) if self.args.every_kind_first else []
        done = 0
        while not self.stop and (self.args.ops <= 0 or done < self.args.ops):
            kind = todo.pop(0) if todo else self.rng.choices(kinds, weights)[0]
            self.busy = []
            try:
                ops[kind]()
            except WrongValue as e:
                self.failure("wrong", str(e))
                self.recover()
            except (wp.UnavailableError, wp.SessionError) as e:
                self.failure("unexpected", f"{kind}: {type(e).__name__}: {e}")
                self.emit(final=True)
                return 3
            except Exception as e:
                self.failure("unexpected", f"{kind}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}")
                self.recover()
            done += 1
            if self.pending >= self.args.report_every or time.monotonic() - self.last_emit > 0.5:
                self.emit()
        self.pool.clear()
        wp.synchronize()
        self.emit(final=True)
        return 0


def client_main(args):
    wp.config.quiet = True
    c = Client(args)
    signal.signal(signal.SIGTERM, lambda *_: setattr(c, "stop", True))
    wp.init()
    return c.run()


# ----------------------------------------------------------------- parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def socket_names():
    """{socket inode: "unix PATH" or "tcp LOCAL PORT -> REMOTE PORT STATE"} of this host."""
    names = {}
    try:
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
            f = line.split()
            if len(f) >= 7:
                names[f[6]] = "unix " + (f[7] if len(f) > 7 else "(unnamed)")
    except OSError:
        pass
    for table in ("tcp", "tcp6"):
        try:
            for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
                f = line.split()
                local, remote = int(f[1].split(":")[1], 16), int(f[2].split(":")[1], 16)
                names[f[9]] = f"tcp :{local} -> :{remote} state {f[3]}"
        except OSError:
            pass
    return names


def proc_inventory(pid):
    """{thread name: count} and {fd target: count} of process `pid`, to say what grew
    (sockets named by their address, memory files as one kind)."""
    threads, fds = {}, {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{t}/comm").read_text().strip()
        except OSError:
            continue
        threads[name] = threads.get(name, 0) + 1
    sockets = socket_names()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        m = re.fullmatch(r"socket:\[(\d+)\]", target)
        if m:
            target = "socket " + sockets.get(m.group(1), "(other)")
        elif target.startswith("/memfd:"):
            target = "memfd"
        fds[target] = fds.get(target, 0) + 1
    return threads, fds


def inventory_diff(before, after):
    keys = sorted(set(before) | set(after))
    return ", ".join(f"{k} {before.get(k, 0)}->{after.get(k, 0)}" for k in keys if before.get(k, 0) != after.get(k, 0))


def proc_status(pid):
    """(VmRSS bytes, open fds, threads) of process `pid`."""
    rss = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), threads


class Totals:
    """Counts merged from every client's report lines (thread-safe)."""

    def __init__(self, verbose_limit=40):
        self.lock = threading.Lock()
        self.ops: dict[str, int] = {}
        self.ops_by_tenant: dict[str, int] = {}
        self.expected: dict[str, int] = {}
        self.wrong = 0
        self.unexpected = 0
        self.details: list[str] = []
        self.verbose_limit = verbose_limit

    def merge(self, tenant, d):
        with self.lock:
            for k, n in d.get("ops", {}).items():
                self.ops[k] = self.ops.get(k, 0) + n
                self.ops_by_tenant[tenant] = self.ops_by_tenant.get(tenant, 0) + n
            for k, n in d.get("expected", {}).items():
                self.expected[k] = self.expected.get(k, 0) + n
            self.wrong += d.get("wrong", 0)
            self.unexpected += d.get("unexpected", 0)
            for text in d.get("details", []):
                if len(self.details) < self.verbose_limit:
                    print(f"  ! {text}", flush=True)
                self.details.append(text)

    def problem(self, text):
        """An unexpected error seen by the parent (a client that died on its own, a hang)."""
        with self.lock:
            self.unexpected += 1
            self.details.append(text)
        print(f"  ! {text}", flush=True)

    def total(self):
        with self.lock:
            return sum(self.ops.values())


class ClientProc:
    def __init__(self, soak, slot, tenant, generation, transport, ops=0, every_kind_first=False):
        self.slot, self.tenant, self.generation, self.transport = slot, tenant, generation, transport
        seed = int.from_bytes(hashlib.sha256(f"{soak.seed}/{slot}/{generation}".encode()).digest()[:4], "little")
        self.seed = seed
        env = dict(os.environ, WARPD_ADDRESS=soak.addresses[transport], WARPD_TOKEN=soak.tokens[tenant])
        cmd = [sys.executable, str(Path(__file__).resolve()), "--client", "--tenant", tenant, "--slot", str(slot),
               "--generation", str(generation), "--client-seed", str(seed), "--ops", str(ops),
               "--report-every", str(soak.args.report_every), "--max-arrays", str(soak.args.max_arrays),
               "--max-pool-mib", str(soak.args.max_pool_mib),
               "--quota-bytes", str(soak.quota_bytes if tenant == "alpha" else 0)]
        if every_kind_first:
            cmd.append("--every-kind-first")
        self.log = open(soak.dir / f"client-{tenant}-{slot}-{generation}.log", "wb")
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=self.log,
                                     stdin=subprocess.DEVNULL, text=True)
        self.killed = False
        self.final = False
        self.reader = threading.Thread(target=self.read, args=(soak.totals,), daemon=True)
        self.reader.start()

    def read(self, totals):
        for line in self.proc.stdout:
            if line.startswith("SOAK "):
                try:
                    d = json.loads(line[5:])
                except ValueError:
                    continue
                totals.merge(self.tenant, d)
                if d.get("final"):
                    self.final = True

    def name(self):
        return f"client {self.tenant}/{self.slot} gen {self.generation} ({self.transport}, seed {self.seed})"

    def finish(self):
        self.reader.join(timeout=10)
        self.log.close()


class Soak:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed if args.seed is not None else secrets.randbelow(1 << 31)
        self.totals = Totals()
        self.kills = 0
        self.restarts = 0
        self.quota_bytes = parse_size(args.alpha_memory)
        self.problems: list[str] = []

    # ------------------------------------------------------------ daemon

    def start_daemon(self):
        a = self.args
        self.tokens = {"alpha": secrets.token_hex(32), "beta": secrets.token_hex(32)}
        tenants = [{"name": "alpha", "token_sha256": [hashlib.sha256(self.tokens["alpha"].encode()).hexdigest()],
                    "limits": {"memory": a.alpha_memory}},
                   {"name": "beta", "token_sha256": [hashlib.sha256(self.tokens["beta"].encode()).hexdigest()]}]
        (self.dir / "tenants.json").write_text(json.dumps({"tenants": tenants}))
        sock = self.dir / "warpd.sock"
        port, self.metrics_port = free_port(), free_port()
        self.addresses = {"unix": f"unix:{sock}", "tcp": f"127.0.0.1:{port}"}
        binary = os.environ.get("WARPD_BIN") or str(REPO / "build" / "bin" / "warpd")
        self.binary = binary
        log = open(self.dir / "daemon.log", "wb")
        self.daemon = subprocess.Popen(
            [binary, "--listen", self.addresses["unix"], "--listen", self.addresses["tcp"],
             "--tenants", str(self.dir / "tenants.json"), "--cache-dir", str(self.dir / "cache"),
             "--state-dir", str(self.dir / "state"), "--token-file", str(self.dir / "token"),
             "--session-grace", f"{a.grace}s", "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
             "--log-level", "warn"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 60
        while True:
            if self.daemon.poll() is not None:
                raise SystemExit(f"warpd exited with status {self.daemon.returncode} at start-up:\n"
                                 f"{self.log_tail()}")
            try:
                self.metrics()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"warpd did not answer within 60 s:\n{self.log_tail()}") from None
                time.sleep(0.1)

    def log_tail(self, n=3000):
        try:
            return (self.dir / "daemon.log").read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def metrics(self):
        """{(metric, tenant): value} of the daemon's per-tenant gauges."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for m in re.finditer(r'^(warpd_sessions_open|warpd_tenant_memory_bytes)\{tenant="([^"]+)"\} (\S+)$',
                             text, re.M):
            out[(m.group(1), m.group(2))] = float(m.group(3))
        return out

    def settle(self, what):
        """Waits until no session is open and no tenant holds memory; returns a problem or None."""
        deadline = time.monotonic() + self.args.grace + 30
        m = {}
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                return f"{what}: the daemon exited with status {self.daemon.returncode}"
            m = self.metrics()
            if m and all(v == 0 for v in m.values()):
                time.sleep(3)  # segments kept for reuse go after 2 s
                return None
            time.sleep(0.25)
        held = ", ".join(f"{k[0]}{{{k[1]}}}={v:.0f}" for k, v in sorted(m.items()) if v)
        return f"{what}: {self.args.grace + 30:.0f} s after the clients stopped, still {held}"

    def touch_command_socket(self):
        """Connects to the command socket and hangs up at once.

        The daemon closes a finished command connection's descriptor when it
        accepts the next connection (CommandSocket::ReapLocked), so after the
        last local client leaves, the descriptors of those that finished
        since the previous accept stay open. One connection made (and
        abandoned) before each measurement leaves exactly one such descriptor
        at the baseline and at the end, so they compare like with like."""
        path = self.addresses["unix"][len("unix:"):] + ".cmd"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
        time.sleep(0.5)

    def sample(self):
        """The smallest (RSS, fds, threads) over a few readings a second apart."""
        self.touch_command_socket()
        best = None
        for _ in range(self.args.samples):
            s = proc_status(self.daemon.pid)
            best = s if best is None else tuple(min(x, y) for x, y in zip(best, s))
            time.sleep(1)
        return best

    # ----------------------------------------------------------- clients

    def start_client(self, slot, tenant, generation, **kw):
        transport = ("unix", "tcp")[(slot + generation) % 2]
        return ClientProc(self, slot, tenant, generation, transport, **kw)

    def stop_client(self, c: ClientProc, timeout=30):
        if c.proc.poll() is None:
            c.proc.send_signal(signal.SIGTERM)
            try:
                c.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.totals.problem(f"{c.name()} did not stop within {timeout} s of SIGTERM (a hung call?)")
                c.proc.kill()
                c.proc.wait()
        c.finish()
        if c.proc.returncode != 0 and not c.killed and not c.final:
            self.totals.problem(f"{c.name()} exited with status {c.proc.returncode}; see its log in {self.dir}")

    def cleanup_names(self):
        """Deletes the persistent names killed clients left (over gRPC, a session per
        tenant); returns how many there were."""
        import grpc

        from warpd.v1 import runtime_pb2, runtime_pb2_grpc

        left = 0
        for tenant, token in self.tokens.items():
            md = [("authorization", "Bearer " + token)]
            with grpc.insecure_channel(self.addresses["unix"]) as channel:
                stub = runtime_pb2_grpc.RuntimeStub(channel)
                try:
                    session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="soak-cleanup"),
                                               metadata=md, timeout=30).session
                    names = stub.ListPersistent(runtime_pb2.ListPersistentRequest(session=session),
                                                metadata=md, timeout=30).arrays
                    for info in names:
                        stub.DeletePersistent(runtime_pb2.DeletePersistentRequest(session=session, name=info.name),
                                              metadata=md, timeout=30)
                    left += len(names)
                    stub.CloseSession(runtime_pb2.CloseSessionRequest(session=session), metadata=md, timeout=30)
                except grpc.RpcError as e:
                    self.totals.problem(f"deleting {tenant}'s leftover persistent names: {e.code().name}: "
                                        f"{e.details()}")
        return left

    def warm_up(self):
        a = self.args
        cs = [self.start_client(100, "alpha", 0, ops=a.warmup_ops, every_kind_first=True),
              self.start_client(101, "beta", 0, ops=a.warmup_ops, every_kind_first=True)]
        for c in cs:
            try:
                c.proc.wait(300)
            except subprocess.TimeoutExpired:
                self.totals.problem(f"warm-up {c.name()} did not finish within 300 s")
            self.stop_client(c)
        # One killed client, so that closing a lapsed session is in the baseline too.
        c = self.start_client(102, "alpha", 1)
        time.sleep(a.warmup_kill_after)
        c.killed = True
        c.proc.kill()
        c.proc.wait()
        c.finish()

    def run(self):
        a = self.args
        duration = a.seconds if a.seconds is not None else a.minutes * 60
        print(f"soak: seed {self.seed}, {duration:.0f} s, clients alpha x{a.clients_alpha} + beta x{a.clients_beta}, "
              f"a kill every {a.kill_every:g} s, session grace {a.grace:g} s, daemon {self.binary}", flush=True)
        print(f"  work dir {self.dir} (daemon.log, client-*.log)", flush=True)

        t0 = time.monotonic()
        self.warm_up()
        left = self.cleanup_names()
        problem = self.settle("after the warm-up")
        if problem:
            raise SystemExit(f"soak: {problem}")
        warm_ops = self.totals.total()
        base = self.sample()
        base_inventory = proc_inventory(self.daemon.pid)
        print(f"warm-up: {warm_ops} operations in {time.monotonic() - t0:.1f} s ({left} persistent names left "
              f"by the killed client); baseline RSS {base[0] / MiB:.1f} MiB, {base[1]} fds, {base[2]} threads",
              flush=True)

        slots = [("alpha", i) for i in range(a.clients_alpha)] + [("beta", i) for i in range(a.clients_beta)]
        generation = [1] * len(slots)
        clients = [self.start_client(i, t, 1) for i, (t, _) in enumerate(slots)]
        start = time.monotonic()
        end = start + duration
        next_kill = start + a.kill_every
        next_status = start + a.status_every
        victim = 0
        daemon_died = False
        while time.monotonic() < end:
            time.sleep(0.1)
            if self.daemon.poll() is not None:
                self.totals.problem(f"the daemon exited with status {self.daemon.returncode}:\n{self.log_tail()}")
                daemon_died = True
                break
            now = time.monotonic()
            for i, c in enumerate(clients):  # a client that ended on its own is a failure
                if c.proc.poll() is not None:
                    self.stop_client(c)
                    if c.proc.returncode == 0:
                        self.totals.problem(f"{c.name()} stopped before it was asked to")
                    generation[i] += 1
                    self.restarts += 1
                    if self.restarts > a.max_restarts:
                        break
                    clients[i] = self.start_client(i, slots[i][0], generation[i])
            if self.restarts > a.max_restarts:
                self.totals.problem(f"more than {a.max_restarts} clients ended on their own: stopping")
                break
            if now >= next_kill and now < end:
                c = clients[victim]
                c.killed = True
                c.proc.kill()
                c.proc.wait()
                c.finish()
                self.kills += 1
                generation[victim] += 1
                clients[victim] = self.start_client(victim, slots[victim][0], generation[victim])
                victim = (victim + 1) % len(clients)
                next_kill += a.kill_every
            if now >= next_status:
                next_status += a.status_every
                rss, fds, threads = proc_status(self.daemon.pid)
                print(f"  {now - start:6.0f} s: {self.totals.total() - warm_ops} operations, {self.kills} kills, "
                      f"{self.totals.wrong} wrong, {self.totals.unexpected} unexpected; daemon RSS "
                      f"{rss / MiB:.1f} MiB, {fds} fds, {threads} threads", flush=True)
        elapsed = time.monotonic() - start
        for c in clients:
            self.stop_client(c)

        end_sample = None
        failures = []
        if not daemon_died:
            left = self.cleanup_names()
            problem = self.settle("at the end")
            if problem:
                failures.append(problem)
            end_sample = self.sample()
            end_inventory = proc_inventory(self.daemon.pid)
            self.daemon.send_signal(signal.SIGTERM)
            try:
                status = self.daemon.wait(60)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                status = "none (killed after 60 s)"
            if status != 0:
                failures.append(f"the daemon's exit status after SIGTERM was {status}:\n{self.log_tail()}")
        else:
            failures.append("the daemon died")

        t = self.totals
        ops = t.total() - warm_ops
        print(f"\nsoak: {elapsed:.0f} s, {ops} operations ({ops / max(elapsed, 1e-9):.0f}/s; {warm_ops} more in the "
              f"warm-up), {self.kills} kills, {self.restarts} unplanned restarts, seed {self.seed}")
        print("  by kind (warm-up included): " + ", ".join(f"{k} {t.ops.get(k, 0)}" for k in KINDS))
        print("  by tenant (warm-up included): " + ", ".join(f"{k} {v}" for k, v in sorted(t.ops_by_tenant.items())))
        print("  expected errors seen: " + (", ".join(f"{k} {v}" for k, v in sorted(t.expected.items())) or "none"))
        print(f"  wrong values: {t.wrong}; unexpected errors: {t.unexpected}")
        if not daemon_died:
            print(f"  persistent names left by killed clients (deleted): {left}")
        report = {"seed": self.seed, "seconds": elapsed, "operations": ops, "warmup_operations": warm_ops,
                  "by_kind": t.ops, "by_tenant": t.ops_by_tenant, "expected_errors": t.expected,
                  "wrong_values": t.wrong, "unexpected_errors": t.unexpected, "kills": self.kills,
                  "restarts": self.restarts, "details": t.details[:100],
                  "baseline": {"rss": base[0], "fds": base[1], "threads": base[2]}}
        if end_sample is not None:
            rss_d, fd_d, th_d = (end_sample[0] - base[0]), end_sample[1] - base[1], end_sample[2] - base[2]
            # gRPC core's executor starts threads under load, up to 2 x cores, and
            # keeps them until shutdown: bounded, so not counted as growth.
            pool_b, pool_e = base_inventory[0].get(GRPC_EXECUTOR, 0), end_inventory[0].get(GRPC_EXECUTOR, 0)
            pool_d = max(0, pool_e - pool_b) if pool_e <= 2 * (os.cpu_count() or 1) else 0
            note = f"; {pool_d} of them gRPC's {GRPC_EXECUTOR}r pool, not counted" if pool_d else ""
            th_d -= pool_d
            print(f"  daemon RSS {base[0] / MiB:.1f} -> {end_sample[0] / MiB:.1f} MiB ({rss_d / MiB:+.1f}), "
                  f"fds {base[1]} -> {end_sample[1]} ({fd_d:+d}), threads {base[2]} -> {end_sample[2]} "
                  f"({end_sample[2] - base[2]:+d}{note})")
            report["end"] = {"rss": end_sample[0], "fds": end_sample[1], "threads": end_sample[2]}
            for what, b, e in (("threads", base_inventory[0], end_inventory[0]),
                               ("fds", base_inventory[1], end_inventory[1])):
                if b != e:
                    print(f"  {what} that changed (by name): {inventory_diff(b, e)}")
            if fd_d > a.fd_tolerance:
                failures.append(f"open fds grew by {fd_d} (tolerance {a.fd_tolerance})")
            if th_d > a.thread_tolerance:
                failures.append(f"threads grew by {th_d} (tolerance {a.thread_tolerance})")
            if rss_d > a.rss_tolerance_mib * MiB:
                failures.append(f"RSS grew by {rss_d / MiB:.1f} MiB (tolerance {a.rss_tolerance_mib} MiB)")
        if t.wrong:
            failures.append(f"{t.wrong} wrong value(s)")
        if t.unexpected:
            failures.append(f"{t.unexpected} unexpected error(s)")
        report["failures"] = failures
        if a.json:
            Path(a.json).write_text(json.dumps(report, indent=2))
        if failures:
            print("FAIL: " + "; ".join(f.splitlines()[0] for f in failures))
            return 1
        print("PASS")
        return 0


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)", text.strip().upper())
    if not m:
        raise SystemExit(f"--alpha-memory: expected a size like 256M, got {text!r}")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2) or " "))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=12.0)
    ap.add_argument("--seconds", type=float, default=None, help="run time in seconds (overrides --minutes)")
    ap.add_argument("--kill-every", type=float, default=120.0, help="SIGKILL one client this often (s)")
    ap.add_argument("--clients-alpha", type=int, default=2)
    ap.add_argument("--clients-beta", type=int, default=1)
    ap.add_argument("--alpha-memory", default="256M", help="tenant alpha's memory quota")
    ap.add_argument("--grace", type=float, default=2.0, help="the daemon's --session-grace (s)")
    ap.add_argument("--seed", type=int, default=None, help="seed of every client's operation mix (default random)")
    ap.add_argument("--warmup-ops", type=int, default=300, help="operations of each warm-up client")
    ap.add_argument("--warmup-kill-after", type=float, default=1.5,
                    help="seconds the killed warm-up client runs")
    ap.add_argument("--report-every", type=int, default=25, help="a client reports at least this often (ops)")
    ap.add_argument("--max-arrays", type=int, default=32, help="arrays one client holds at most")
    ap.add_argument("--max-pool-mib", type=int, default=48, help="array MiB one client holds at most")
    ap.add_argument("--status-every", type=float, default=30.0, help="a progress line this often (s)")
    ap.add_argument("--samples", type=int, default=3, help="readings of RSS/fds/threads (min taken)")
    ap.add_argument("--rss-tolerance-mib", type=float, default=64.0)
    ap.add_argument("--fd-tolerance", type=int, default=4)
    ap.add_argument("--thread-tolerance", type=int, default=2)
    ap.add_argument("--max-restarts", type=int, default=10,
                    help="stop when more clients than this ended on their own")
    ap.add_argument("--json", default="", help="write the figures as JSON to this path")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs) after a pass")
    # A client process (run by the parent).
    ap.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tenant", default="alpha", help=argparse.SUPPRESS)
    ap.add_argument("--slot", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--generation", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--client-seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--ops", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--quota-bytes", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--every-kind-first", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.client:
        return client_main(args)

    work = Path(tempfile.mkdtemp(prefix="warpd-soak-"))
    soak = Soak(args)
    soak.dir = work
    soak.start_daemon()
    status = 1
    try:
        status = soak.run()
    finally:
        if soak.daemon.poll() is None:
            soak.daemon.kill()
            soak.daemon.wait()
    if status == 0 and not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"logs kept in {work}")
    return status


if __name__ == "__main__":
    sys.exit(main())
