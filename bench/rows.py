"""The issue's rows and targets (issue 10), from the raw measurements.

``build(raw, plan)`` turns what the sides measured (warpd over the Unix
socket and over TCP, the disk-hit runs, Warp, the native loops; see run.py)
into report.Rows. Each row names what its reference is and how its ratio is
taken; the ratio is oriented so that the target reads as in the issue.
"""

import statistics

from report import Row, Target


class _Failed(Exception):
    pass


def _get(side, key, field):
    """side[key][field]; None when the side was skipped; _Failed when it failed."""
    if side is None:
        return None
    entry = side.get(key)
    if entry is None:
        raise _Failed(f"{key} not measured")
    if "error" in entry:
        raise _Failed(entry["error"])
    return entry[field]


class _Builder:
    def __init__(self, raw):
        self.raw = raw
        self.rows = []

    def add(self, name, unit, value, ref=None, ref_name="", ratio=None, target=None, note="", skip=""):
        """value and ref are thunks (they may raise _Failed); ratio is
        (name, fn(value, ref)) or None."""
        row = Row(name=name, unit=unit, ref_name=ref_name, target=target)
        try:
            row.value = value()
            row.ref = ref() if ref else None
            if row.ref is None:
                row.skip = skip
            if ratio and row.value is not None and row.ref is not None:
                row.ratio_name = ratio[0]
                row.ratio = ratio[1](row.value, row.ref)
            row.note = note() if callable(note) else note
        except _Failed as e:
            row.error = str(e)
        self.rows.append(row.judge())


def _pow2(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def build(raw: dict, plan: dict) -> list[Row]:
    b = _Builder(raw)
    wd, rem, warp, nat = raw["warpd"], raw.get("warpd_remote"), raw.get("warp"), raw.get("native")
    no_warp, no_native = raw["skips"].get("warp", ""), raw["skips"].get("native", "")
    faster = ("ref/warpd", lambda v, r: r / v)     # times: > 1 means warpd is faster
    slower = ("warpd/ref", lambda v, r: v / r)

    def native_ref(key, nat_key):
        """The native loop's time: the one taken in turn with warpd's kernel
        (run.py hands warpd's side the loops), else the separate run."""
        entry = (wd or {}).get(key) or {}
        if "native_ms" in entry:
            return lambda: entry["native_ms"]
        return lambda: _get(nat, nat_key, "ms")

    def native_note(key):
        entry = (wd or {}).get(key) or {}
        return "" if "native_ms" in entry else "the native loop timed on its own, before warpd's run"

    for n in plan["sizes"]:
        for kern in ("saxpy", "vec3"):
            key = f"{kern}_{n}"
            b.add(f"{kern} {_pow2(n)}, launch + sync", "ms", lambda: _get(wd, key, "ms"),
                  native_ref(key, key), "native", ("native/warpd", faster[1]),
                  Target("ratio", ">=", 0.8), skip=no_native, note=native_note(key))
            b.add(f"{kern} {_pow2(n)} vs Warp", "ms", lambda: _get(wd, key, "ms"),
                  lambda: _get(warp, key, "ms"), "Warp", ("Warp/warpd", faster[1]), skip=no_warp)

    sc = f"sincos {_pow2(plan['sincos_threads'])} x {plan['sincos_iters']}"
    b.add(f"{sc} vs Warp", "ms", lambda: _get(wd, "sincos", "ms"), lambda: _get(warp, "sincos", "ms"),
          "Warp", ("Warp/warpd", faster[1]), Target("ratio", ">=", 3), skip=no_warp)
    b.add(f"{sc} vs native vector math", "ms", lambda: _get(wd, "sincos", "ms"),
          native_ref("sincos", "sincos_simd"), "native libmvec", ("native/warpd", faster[1]),
          Target("ratio", ">=", 0.8), skip=no_native, note=native_note("sincos"))
    b.add(f"{sc} vs native scalar libm", "ms", lambda: _get(wd, "sincos", "ms"),
          lambda: _get(nat, "sincos_scalar", "ms"), "native libm", ("native/warpd", faster[1]),
          skip=no_native)

    # Autodiff (issue 25): the adjoint launch beside the forward one, in the same process.
    for which, label in (("elementwise", "elementwise"), ("vec3_mat33", "vec3/mat33"), ("loop", "dynamic loop x32")):
        key = f"autodiff_{which}"
        size = _pow2(plan.get("autodiff_size", 0) or 1)
        b.add(f"backward / forward, {label} {size}", "ms", lambda key=key: _get(wd, key, "backward_ms"),
              lambda key=key: _get(wd, key, "forward_ms"), "warpd forward", ("backward/forward", slower[1]),
              Target("ratio", "<=", 2.5),
              note=lambda key=key: f"Warp: {_get(warp, key, 'ratio'):.2f}x" if warp else "")
        b.add(f"backward {label} {size} vs Warp", "ms", lambda key=key: _get(wd, key, "backward_ms"),
              lambda key=key: _get(warp, key, "backward_ms"), "Warp backward", ("Warp/warpd", faster[1]),
              skip=no_warp)
        b.add(f"first adjoint launch (compile), {label}", "ms", lambda key=key: _get(wd, key, "first_backward_ms"),
              lambda key=key: _get(wd, key, "first_forward_ms"), "first forward launch (compile)",
              ("backward/forward", slower[1]),
              note="warpd compiles a kernel's adjoint at its first adjoint launch (a module of its own)")

    up = ("warpd/ref", lambda v, r: v / r)       # rates: > 1 means warpd is faster
    b.add(f"queued dim=1 launches ({plan['launches']} + 1 sync)", "/s",
          lambda: _get(wd, "queued_launches", "per_s"), lambda: _get(warp, "queued_launches", "per_s"),
          "Warp", ("warpd/Warp", up[1]), Target("value", ">=", 400_000), skip=no_warp)
    b.add(f"wp.Launch re-launches ({plan['launches']} + 1 sync)", "/s",
          lambda: _get(wd, "recorded_launches", "per_s"),
          lambda: _get(warp, "recorded_launches", "per_s"), "Warp", ("warpd/Warp", up[1]),
          Target("value", ">=", 1_000_000), skip=no_warp)
    b.add(f"graph replay ({plan['graph_launches']} captured launches)", "us/launch",
          lambda: _get(wd, "graph_replay", "us_per_launch"),
          lambda: _get(wd, "queued_launches", "us_per_launch"), "queued launch", ("warpd/ref", slower[1]),
          Target("value", "<=", 2),
          note="Warp captures graphs on CUDA only; the reference is warpd's own queued launch")

    b.add("local launch + sync (Unix socket)", "us", lambda: _get(wd, "launch_sync", "us"),
          lambda: _get(warp, "launch_sync", "us"), "Warp, in process", ("warpd/Warp", slower[1]),
          Target("value", "<=", 25), skip=no_warp,
          note=lambda: f"bare GetServerInfo round trip on the same channel: "
                       f"{_get(wd, 'echo', 'us'):.1f} us")
    b.add("local numpy() of a 1-element array", "us", lambda: _get(wd, "small_numpy", "us"),
          lambda: _get(wd, "echo", "us"), "GetServerInfo echo", ("warpd/echo", slower[1]))
    b.add("remote launch + sync (TCP) vs echo", "us", lambda: _get(rem, "launch_sync", "us"),
          lambda: _get(rem, "launch_sync", "echo_us"), "GetServerInfo echo, in turns",
          ("warpd/echo", slower[1]),
          Target("ratio", "<=", 1.2), skip="no TCP run")

    mb = plan["transfer_bytes"] / 2**20
    for where, side, target in (("local", wd, Target("ratio", ">=", 0.8)),
                                ("remote", rem, Target("value", ">=", 1.5))):
        for what, field in (("upload wp.array(numpy)", "upload_gbs"), ("numpy()", "download_gbs")):
            b.add(f"{where} {what}, {mb:.0f} MiB", "GB/s", lambda: _get(side, "transfer", field),
                  lambda: _get(side, "transfer", "memcpy_gbs"), "np.copyto", ("warpd/memcpy", up[1]),
                  target)

    b.add("cold compile: saxpy, first module of the process", "ms",
          lambda: _get(wd, "cold_compile", "ms"), lambda: _warp_cold(raw), "Warp, fresh cache",
          ("warpd/Warp", slower[1]), Target("ratio", "<=", 0.5), skip=no_warp,
          note=lambda: _cold_note(raw))
    b.add("cold compile: saxpy again as its own module", "ms",
          lambda: _get(wd, "cold_compile_again", "ms"), lambda: _get(warp, "cold_compile_again", "ms"),
          "Warp, fresh cache", ("warpd/Warp", slower[1]), Target("ratio", "<=", 0.5), skip=no_warp,
          note="first launch + sync of a second module in the same process (Warp's compiler "
               "already loaded; warpd's daemon always is)")
    b.add("cold LoadModule RPC: transform kernel", "ms", lambda: _get(wd, "cold_load_module_xform", "ms"),
          lambda: _get(wd, "cold_load_module", "ms"), "saxpy", ("warpd/ref", slower[1]),
          note=lambda: "a new module's compile alone (no client translation), also mat.h, quat.h, "
                       f"transform.h; server compile_ms "
                       f"{_get(wd, 'cold_load_module_xform', 'server_compile_ms'):.1f}")
    b.add("disk-cache hit (daemon restarted)", "ms", lambda: _disk_hit(raw),
          lambda: _get(wd, "cold_load_module", "ms"), "cold LoadModule", ("warpd/ref", slower[1]),
          Target("value", "<=", 10),
          note="client-side LoadModule RPC after a restart on the same cache, median of "
               f"{len(raw.get('warpd_disk_hit', []))} restarts")
    b.add("memory-cache hit (another session), server side", "ms", lambda: _get(wd, "memory_hit", "server_ms"),
          lambda: _get(wd, "memory_hit", "ms"), "client-side RPC", ("warpd/ref", slower[1]),
          Target("value", "<=", 0.2),
          note=lambda: "the daemon's time for the LoadModule (LoadModuleResponse.server_ms: request read, "
                       "module translated, key computed and found); the client-side RPC adds one round trip "
                       f"(GetServerInfo echo {_get(wd, 'echo', 'us') / 1e3:.3f} ms)")
    return b.rows


def _warp_cold(raw):
    runs = raw.get("warp_cold")
    if runs is None:
        return None
    ok = [r["ms"] for r in runs if "error" not in r]
    if not ok:
        raise _Failed(runs[0]["error"] if runs else "no Warp cold-compile run")
    return statistics.median(ok)


def _disk_hit(raw):
    runs = raw.get("warpd_disk_hit", [])
    ok = [r["ms"] for r in runs if "error" not in r]
    if not ok:
        raise _Failed(runs[0]["error"] if runs else "not measured")
    return statistics.median(ok)


def _cold_note(raw):
    wd = raw["warpd"]
    text = "first launch + sync of saxpy with a fresh kernel cache, arrays made beforehand"
    runs = raw.get("warp_cold")
    if runs:
        text += f"; Warp: median of {len(runs)} fresh processes"
    try:
        text += (f"; warpd LoadModule RPC of a new module alone: {_get(wd, 'cold_load_module', 'ms'):.1f} ms "
                 f"(server compile_ms {_get(wd, 'cold_load_module', 'server_compile_ms'):.1f})")
    except _Failed:
        pass
    return text


def _round_median(rounds, key, field):
    """The median over rounds of side[key][field] (bench/run.py's geometry rounds);
    None when the side was skipped; _Failed when every round failed."""
    if rounds is None:
        return None
    values, errors = [], []
    for r in rounds:
        if "error" in r and key not in r:
            errors.append(r["error"])
            continue
        try:
            values.append(_get(r, key, field))
        except _Failed as e:
            errors.append(str(e))
    if not values:
        raise _Failed(errors[0] if errors else f"{key} not measured")
    return statistics.median(values)


def geometry(raw: dict, plan: dict) -> list[Row]:
    """The geometry rows (issue 27): mesh BVH builds, the ray-cast example's rays/s and
    HashGrid build + query, warpd beside Warp's CPU backend in alternating rounds."""
    geo = raw.get("geometry")
    if geo is None:
        return []
    b = _Builder(raw)
    wd, warp = geo["warpd"], geo["warp"]
    no_warp = raw["skips"].get("warp", "")
    faster = ("Warp/warpd", lambda v, r: r / v)   # times: > 1 means warpd is faster
    up = ("warpd/Warp", lambda v, r: v / r)       # rates
    rounds = f"median of {len(wd)} rounds"

    def tris(key):
        return lambda: f"{int(_round_median(wd, key, 'triangles')):,} triangles; {rounds}"

    for detail in plan["mesh_details"]:
        key = f"mesh_build_{detail}"
        b.add(f"wp.Mesh BVH build (SAH), example mesh at detail {detail}", "ms",
              lambda key=key: _round_median(wd, key, "ms"), lambda key=key: _round_median(warp, key, "ms"),
              "Warp", faster, Target("ratio", ">=", 1.5), skip=no_warp,
              note=lambda key=key: tris(key)() + "; wp.Mesh(points, indices) + synchronize")
        b.add(f"wp.Mesh BVH build CPU time, detail {detail}", "cpu-ms",
              lambda key=key: _round_median(wd, key, "cpu_ms"), lambda key=key: _round_median(warp, key, "cpu_ms"),
              "Warp", faster, skip=no_warp, note=_CPU_NOTE if detail == plan["mesh_details"][0] else "")
        b.add(f"wp.Mesh refit, detail {detail}", "ms", lambda key=key: _round_median(wd, key, "refit_ms"),
              lambda key=key: _round_median(warp, key, "refit_ms"), "Warp", faster, skip=no_warp)
    size = plan["raycast_size"]
    b.add(f"ray cast (examples/raycast.py), {size}x{size} rays", "rays/s",
          lambda: _round_median(wd, "raycast", "rays_per_s"), lambda: _round_median(warp, "raycast", "rays_per_s"),
          "Warp", up, Target("ratio", ">=", 1.5), skip=no_warp, note=lambda: _raycast_note(wd, warp, rounds))
    b.add(f"ray cast CPU time per {size}x{size} launch", "cpu-ms", lambda: _round_median(wd, "raycast", "cpu_ms"),
          lambda: _round_median(warp, "raycast", "cpu_ms"), "Warp", faster, skip=no_warp)
    n = _pow2(plan["hash_points"])
    b.add(f"HashGrid build, {n} points", "ms", lambda: _round_median(wd, "hash_grid", "build_ms"),
          lambda: _round_median(warp, "hash_grid", "build_ms"), "Warp", faster, skip=no_warp,
          note=f"128^3 cells, cell width {plan['hash_radius']}; {rounds}")
    b.add(f"HashGrid query (neighbours within radius), {n} points", "ms",
          lambda: _round_median(wd, "hash_grid", "query_ms"), lambda: _round_median(warp, "hash_grid", "query_ms"),
          "Warp", faster, skip=no_warp,
          note=lambda: f"{_round_median(wd, 'hash_grid', 'mean_neighbors'):.1f} neighbours per point on average; "
                       "counts checked against brute force for 64 points")
    for what in ("build", "query"):
        b.add(f"HashGrid {what} CPU time, {n} points", "cpu-ms",
              lambda what=what: _round_median(wd, "hash_grid", f"{what}_cpu_ms"),
              lambda what=what: _round_median(warp, "hash_grid", f"{what}_cpu_ms"), "Warp", faster, skip=no_warp)
    return b.rows


_CPU_NOTE = ("the CPU time rows: CPU seconds of the work (warpd: the daemon's and the client's; Warp: its "
             "process's), mean per call: the work done, whatever share of the cores each side got on a busy machine")


def _raycast_note(wd, warp, rounds):
    hits = _round_median(wd, "raycast", "hits")
    text = f"{int(_round_median(wd, 'raycast', 'triangles')):,} triangles, {int(hits):,} hits; {rounds}"
    if warp is not None:
        same = (_round_median(warp, "raycast", "hits") == hits and
                abs(_round_median(warp, "raycast", "depth_sum") - _round_median(wd, "raycast", "depth_sum"))
                <= 1e-6 * abs(_round_median(wd, "raycast", "depth_sum")))
        text += "; the same hits and depths as Warp" if same else "; hits or depths DIFFER from Warp's"
    return text
