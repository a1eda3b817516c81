"""warpctl: look at and operate a warpd daemon.

    warpctl status                      devices, memory, sessions and usage per tenant
    warpctl objects list|inspect|free   persistent arrays
    warpctl cache stats|clear           the kernel cache
    warpctl tenants reload              re-read the tenants file (as SIGHUP)
    warpctl drain                       take no new sessions, let running work finish, exit
    warpctl token new|hash|whoami       tokens for the tenants file, and who you are

It finds the daemon and proves who you are the way ``wp.init()`` does
(``--address``, else ``WARPD_ADDRESS``, else the local default socket, then
127.0.0.1:7788; the token from ``WARPD_TOKEN``, the login socket or the token
file: see ``warpd.auth``), and never starts a daemon. Any tenant sees its own
status and persistent arrays; the daemon's admin (its own user without a
tenants file, else a tenant with ``"admin": true``) sees every tenant's and
may clear the cache, reload the tenants file and drain (docs/operations.md,
"warpctl").

Output is a table for people; ``--json`` prints the daemon's answer as JSON
(protobuf field names) for scripts. Exit status: 0 done, 1 failed, 2 bad
usage, 3 permission denied, 4 daemon not reachable.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import sys
import time

import grpc
from google.protobuf import json_format

from . import auth, daemon as daemon_mod
from .errors import UnavailableError
from .v1 import admin_pb2, admin_pb2_grpc, ir_pb2, runtime_pb2, runtime_pb2_grpc

EXIT_FAILED, EXIT_USAGE, EXIT_DENIED, EXIT_UNREACHABLE = 1, 2, 3, 4


class CtlError(Exception):
    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------ formatting

def _printable(text: str, limit: int = 60) -> str:
    """Client-chosen text (session names) without control characters, cut."""
    out = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return out if len(out) <= limit else out[:limit - 3] + "..."


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _limit(n: int, as_bytes: bool = False) -> str:
    if n == 0:
        return "-"
    return _bytes(n) if as_bytes else str(n)


def _duration(s: float) -> str:
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _table(rows: list[list[str]], header: list[str]) -> str:
    cols = [header] + rows
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def _json(message) -> str:
    return json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True,
                                                always_print_fields_with_no_presence=True), indent=2)


_SCALARS = {v: k[len("SCALAR_"):].lower() for k, v in ir_pb2.ScalarType.items()}


def _dtype(t) -> str:
    kind = t.WhichOneof("kind")
    if kind == "scalar":
        return _SCALARS.get(t.scalar, str(t.scalar))
    return kind or "?"


# ------------------------------------------------------------------ connection

class Connection:
    def __init__(self, address: str, timeout: float):
        self.address = address
        self.timeout = timeout
        try:
            self.token, self.token_source = auth.find_token(address)
        except UnavailableError as e:
            code = EXIT_DENIED if e.code == grpc.StatusCode.PERMISSION_DENIED else EXIT_UNREACHABLE
            raise CtlError(e.message, code) from None
        self.channel = auth.open_channel(address, token=self.token or "")
        self.admin = admin_pb2_grpc.AdminStub(self.channel)
        self.runtime = runtime_pb2_grpc.RuntimeStub(self.channel)

    def call(self, method: str, request, timeout: float | None = None):
        try:
            return getattr(self.admin, method)(request, timeout=timeout or self.timeout)
        except grpc.RpcError as e:
            raise self.error(e) from None

    def error(self, e: grpc.RpcError) -> CtlError:
        code, details = e.code(), e.details() or ""
        if code == grpc.StatusCode.PERMISSION_DENIED:
            return CtlError(f"permission denied: {details}", EXIT_DENIED)
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return CtlError(auth.refusal_help(self.address, details, self.token_source), EXIT_DENIED)
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return CtlError(f"could not reach the warpd daemon at {self.address}: {details}", EXIT_UNREACHABLE)
        if code == grpc.StatusCode.UNIMPLEMENTED:
            return CtlError(f"the warpd daemon at {self.address} does not serve warpctl's requests "
                            f"(an older daemon?): {details}")
        return CtlError(f"{code.name.lower()}: {details}")

    def close(self):
        self.channel.close()


def _find_address(given: str | None) -> str:
    address = given or os.environ.get("WARPD_ADDRESS")
    if address:
        return address
    tried = daemon_mod.default_addresses()
    for a in tried:
        if daemon_mod.probe(a, timeout=1.0) is not None:
            return a
    raise CtlError(f"no warpd daemon answers at {', '.join(tried)}; give its address with --address "
                   f"or WARPD_ADDRESS", EXIT_UNREACHABLE)


# ------------------------------------------------------------------ commands

def cmd_status(conn: Connection, args) -> str:
    st = conn.call("GetStatus", admin_pb2.AdminStatusRequest(tenant=args.tenant or ""))
    if args.json:
        return _json(st)
    out = [f"warpd {st.version} at {conn.address}, up {_duration(st.uptime_seconds)}"
           + (" -- DRAINING (no new sessions)" if st.draining else "")]
    out.append(f"you: tenant '{st.caller}'" + (" (admin)" if st.caller_admin else ""))
    if st.caller_admin:
        out.append(f"memory: {_bytes(st.memory_used_bytes)} used of {_limit(st.memory_limit_bytes, True)}; "
                   f"sessions: {st.sessions_open} open of {_limit(st.sessions_limit)}")
    out.append("")
    out.append(_table([[d.name, d.kind, d.alias[:40], _bytes(d.memory_bytes) if d.memory_bytes else "-",
                        _bytes(d.free_bytes) if d.free_bytes else "-", d.unavailable or "ok"]
                       for d in st.devices],
                      ["DEVICE", "KIND", "MODEL", "MEMORY", "FREE", "STATE"]))
    for t in st.tenants:
        q = {x.resource: x for x in t.usage.quotas}
        out.append("")
        who = []
        if t.admin:
            who.append("admin")
        if st.caller_admin:
            if t.uids:
                who.append("uids " + ",".join(str(u) for u in t.uids))
            who.append(f"{t.token_hashes} token hash(es)")
        out.append(f"tenant '{t.name}' (weight {t.weight}" + "".join(f", {w}" for w in who) + ")")

        def row(name, key, as_bytes=False):
            x = q.get(key)
            if x is None:
                return [name, "?", "?"]
            return [name, _bytes(x.used) if as_bytes else str(x.used), _limit(x.limit, as_bytes)]
        rows = [row("memory", "memory_bytes", True), row("arrays", "arrays"), row("sessions", "sessions"),
                row("compiles", "compiles"), row("queued commands", "queued_commands"),
                row("graph commands", "graph_commands"),
                ["persistent arrays", str(t.persistent_arrays), "-"]]
        out.append(_table(rows, ["  USAGE", "USED", "LIMIT"]).replace("\n", "\n  "))
        if t.sessions:
            out.append(_table([[s.id, _printable(s.client_name), _duration(s.age_seconds),
                                _duration(s.idle_seconds), "yes" if s.held else "no", str(s.arrays),
                                str(s.queued_commands)] for s in t.sessions],
                              ["  SESSION", "CLIENT", "AGE", "IDLE", "HELD", "ARRAYS", "QUEUED"])
                       .replace("\n", "\n  "))
        else:
            out.append("  no open sessions")
    return "\n".join(out)


def cmd_objects(conn: Connection, args) -> str:
    if args.action == "list":
        resp = conn.call("ListPersistent", admin_pb2.AdminListPersistentRequest(tenant=args.tenant or ""))
        if args.json:
            return _json(resp)
        if not resp.arrays:
            return "no persistent arrays"
        return _table([[a.tenant, a.info.name, _dtype(a.info.dtype), "x".join(str(s) for s in a.info.shape) or "()",
                        _bytes(a.info.size_bytes), a.info.device, "yes" if a.info.durable else "no"]
                       for a in resp.arrays],
                      ["TENANT", "NAME", "DTYPE", "SHAPE", "SIZE", "DEVICE", "DURABLE"])
    request = admin_pb2.AdminPersistentRequest(tenant=args.tenant or "", name=args.name)
    if args.action == "inspect":
        a = conn.call("InspectPersistent", request)
        if args.json:
            return _json(a)
        return "\n".join([f"tenant:   {a.tenant}", f"name:     {a.info.name}", f"dtype:    {_dtype(a.info.dtype)}",
                          f"shape:    {list(a.info.shape)}", f"strides:  {list(a.strides)}",
                          f"size:     {_bytes(a.info.size_bytes)} ({a.info.size_bytes} bytes)",
                          f"device:   {a.info.device}", f"durable:  {'yes' if a.info.durable else 'no'}"])
    conn.call("FreePersistent", request)
    if args.json:
        return json.dumps({"freed": args.name, "tenant": args.tenant or ""})
    return f"freed persistent array '{args.name}'"


def cmd_cache(conn: Connection, args) -> str:
    if args.action == "stats":
        s = conn.call("GetCacheStats", admin_pb2.AdminCacheStatsRequest())
        if args.json:
            return _json(s)
        return "\n".join([f"directory: {s.dir}", f"entries:   {s.entries}",
                          f"size:      {_bytes(s.bytes)} of {_limit(s.max_bytes, True)}",
                          f"evictions: {s.evictions}"])
    r = conn.call("ClearCache", admin_pb2.AdminClearCacheRequest())
    return _json(r) if args.json else f"kernel cache cleared: {r.entries_removed} entries removed"


def cmd_tenants(conn: Connection, args) -> str:
    r = conn.call("ReloadTenants", admin_pb2.AdminReloadTenantsRequest())
    if args.json:
        return _json(r)
    return f"tenants file reloaded: {len(r.tenants)} tenant(s): {', '.join(r.tenants)}"


def _daemon_gone(conn: Connection, until: float) -> bool:
    """Waits until the daemon stops answering (its socket goes away)."""
    while time.monotonic() < until:
        path = auth.unix_path(conn.address)
        if path is not None and not os.path.exists(path):
            return True
        try:
            conn.runtime.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=1.0)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNAVAILABLE:
                return True
        time.sleep(0.1)
    return False


def cmd_drain(conn: Connection, args) -> str:
    # The daemon answers once the work is done (or its wait ends), then exits.
    r = conn.call("Drain", admin_pb2.AdminDrainRequest(timeout_seconds=args.timeout),
                  timeout=args.timeout + 60 if args.timeout else 3600 + 60)
    gone = None
    if not args.no_wait:
        gone = _daemon_gone(conn, time.monotonic() + 30)
    if args.json:
        d = json_format.MessageToDict(r, preserving_proto_field_name=True,
                                      always_print_fields_with_no_presence=True)
        if gone is not None:
            d["exited"] = gone
        return json.dumps(d, indent=2)
    lines = [f"drained: {r.sessions} session(s) were open; "
             + ("all their work finished" if r.idle else "work was still running at the timeout (cancelled)")
             + f" after {r.waited_seconds:.1f}s"]
    if gone is True:
        lines.append("the daemon has exited")
    elif gone is False:
        lines.append("the daemon still answers 30 s later (see its log)")
    else:
        lines.append("the daemon is shutting down")
    return "\n".join(lines)


def cmd_token(args) -> str:
    if args.action == "new":
        token = secrets.token_hex(32)
        digest = hashlib.sha256(token.encode()).hexdigest()
        if args.json:
            return json.dumps({"token": token, "sha256": digest})
        return (f"token:  {token}\nsha256: {digest}\n"
                f"Give the token to the tenant (WARPD_TOKEN); put only the sha256 in its \"token_sha256\" "
                f"list in the tenants file, then run `warpctl tenants reload`.")
    if args.action == "hash":
        token = args.token if args.token is not None else sys.stdin.readline()
        token = token.strip()
        if not token:
            raise CtlError("no token given (as an argument or on stdin)", EXIT_USAGE)
        digest = hashlib.sha256(token.encode()).hexdigest()
        return json.dumps({"sha256": digest}) if args.json else digest
    raise AssertionError(args.action)


def cmd_whoami(conn: Connection, args) -> str:
    st = conn.call("GetStatus", admin_pb2.AdminStatusRequest())
    if args.json:
        return json.dumps({"address": conn.address, "tenant": st.caller, "admin": st.caller_admin,
                           "token_source": conn.token_source})
    return (f"tenant '{st.caller}'{' (admin)' if st.caller_admin else ''} at {conn.address}; "
            f"token from {conn.token_source}")


# ------------------------------------------------------------------ main

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="warpctl", description="Look at and operate a warpd daemon.",
                                epilog="docs/operations.md, 'warpctl', says who may do what.")
    p.add_argument("--address", help="the daemon (default: $WARPD_ADDRESS, else the local default socket)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.add_argument("--timeout", type=float, default=30.0, dest="call_timeout",
                   help="seconds to wait for each answer (default 30)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("status", help="devices, memory, sessions and usage per tenant")
    s.add_argument("--tenant", help="only this tenant (others than your own need admin)")

    o = sub.add_parser("objects", help="persistent arrays")
    oa = o.add_subparsers(dest="action", required=True)
    ol = oa.add_parser("list")
    ol.add_argument("--tenant")
    for name in ("inspect", "free"):
        x = oa.add_parser(name)
        x.add_argument("name")
        x.add_argument("--tenant", help="the array's tenant (default: yours; another needs admin)")

    c = sub.add_parser("cache", help="the kernel cache")
    c.add_argument("action", choices=["stats", "clear"])

    t = sub.add_parser("tenants", help="the tenants file")
    t.add_argument("action", choices=["reload"])

    d = sub.add_parser("drain", help="take no new sessions, wait for running work, then exit (admin)")
    d.add_argument("--timeout", type=float, default=0.0,
                   help="seconds to wait for running work (default 60, at most 3600); what still runs "
                        "then is cancelled")
    d.add_argument("--no-wait", action="store_true", help="do not wait for the daemon to exit")

    k = sub.add_parser("token", help="tokens: make one for the tenants file, hash one, or show who you are")
    ka = k.add_subparsers(dest="action", required=True)
    ka.add_parser("new", help="a new random token and its sha256 (nothing is sent to the daemon)")
    kh = ka.add_parser("hash", help="the sha256 of a token (argument or stdin)")
    kh.add_argument("token", nargs="?")
    ka.add_parser("whoami", help="which tenant your token is, and where it came from")
    return p


def run(argv: list[str] | None = None) -> tuple[int, str]:
    args = parser().parse_args(argv)
    if args.command == "token" and args.action in ("new", "hash"):
        return 0, cmd_token(args)
    conn = Connection(_find_address(args.address), args.call_timeout)
    try:
        if args.command == "token":
            return 0, cmd_whoami(conn, args)
        fn = {"status": cmd_status, "objects": cmd_objects, "cache": cmd_cache, "tenants": cmd_tenants,
              "drain": cmd_drain}[args.command]
        return 0, fn(conn, args)
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    try:
        code, text = run(argv)
    except CtlError as e:
        print(f"warpctl: {e}", file=sys.stderr)
        return e.code
    if text:
        print(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
