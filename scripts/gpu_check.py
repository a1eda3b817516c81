#!/usr/bin/env python3
"""Runs warpd's generated CUDA kernels on a real GPU and checks their results.

    python3 scripts/gpu_check.py [DIR] [--only CASE[,CASE...]] [--timeout SECONDS]

DIR (default build-gpu-check) is what tools/gpu_check/gpu_check_gen wrote on
the build machine (scripts/gpu-prepare.sh): checks.json, per case a manifest
<case>.json and NVRTC's PTX for compute_90, and the arrays' data. This script
needs only Python 3, numpy and the CUDA driver (libcuda.so.1, through
ctypes): no toolkit, no warpd. For each case it loads the PTX with
cuModuleLoadDataEx (the JIT's error log is printed when that fails), and for
each launch allocates the arrays, writes their 64-byte wp::array_t
descriptors and the other parameters into the argument block (offsets from
the manifest), writes a zeroed 168-byte wp::launch_ctx (no print buffer, no object table) with the launch's
bounds, launches the entry with cuLaunchKernel (the block by value, in
"pieces" parameters for an adjoint entry's forward and adjoint blocks, or its
device address when the manifest says "pointer"), synchronizes, copies
everything back and compares it with the values the generator computed on the
host (docs/launch_abi.md is the contract).

Prints one PASS/FAIL line per check and a summary; a watchdog ends the run
after --timeout seconds (default 240). Exit status: 0 every check
passed; 1 a check failed; 2 bad usage, a missing or malformed DIR, or no
numpy; 3 no CUDA driver or no usable device (libcuda.so.1 cannot be loaded,
lacks an entry point, or cuInit fails). $WARPD_GPU_CHECK_LIBCUDA names
another driver library (the self-test's stand-in, tools/gpu_check/fake_cuda.c).
"""

import ctypes
import gzip
import json
import math
import os
import struct
import sys
import threading
import time
import traceback

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_DRIVER = 0, 1, 2, 3

# wp::launch_ctx (runtime/native/warpd/native/launch.h) and wp::array_t
# (array.h), as this script writes and reads them. checks.json carries the
# generator's view (offsetof in C++); they must agree.
LAUNCH_CTX = {
    "size": 168, "bounds.shape": 0, "bounds.ndim": 16, "bounds.size": 24,
    "fault.flag": 32, "fault.kind": 36, "fault.line": 40, "fault.dim": 44,
    "fault.index": 48, "fault.extent": 56, "fault.array_ndim": 64,
    "fault.shape": 72, "cancel": 104, "output": 112,
}
ARRAY_T = {"size": 64, "data": 0, "shape": 8, "ndim": 24, "strides": 32}
FAULT_BEGIN, FAULT_END = 32, 104  # bytes of wp::fault_info in the context
GUARD_BYTE = 0xA5

CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
CU_MEMHOSTALLOC_PORTABLE = 0x01
CU_MEMHOSTALLOC_DEVICEMAP = 0x02
CUDA_ERROR_NOT_READY = 600
# Errors after which the context is unusable: later checks cannot run.
STICKY_ERRORS = {700, 702, 709, 710, 714, 715, 716, 717, 718, 719}
# Names for when cuGetErrorName itself fails (e.g. the toolkit's stub library).
FALLBACK_NAMES = {
    0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY", 35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE", 100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE", 218: "CUDA_ERROR_INVALID_PTX",
    222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    719: "CUDA_ERROR_LAUNCH_FAILED", 999: "CUDA_ERROR_UNKNOWN",
}

c_int, c_uint, c_size_t, c_void_p, c_char_p, c_uint64 = (
    ctypes.c_int, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64)
P = ctypes.POINTER

# Every driver entry point used, with its C signature (all return CUresult).
SIGNATURES = {
    "cuInit": [c_uint],
    "cuDriverGetVersion": [P(c_int)],
    "cuDeviceGetCount": [P(c_int)],
    "cuDeviceGet": [P(c_int), c_int],
    "cuDeviceGetName": [c_char_p, c_int, c_int],
    "cuDeviceGetAttribute": [P(c_int), c_int, c_int],
    "cuDeviceTotalMem_v2": [P(c_size_t), c_int],
    "cuDevicePrimaryCtxRetain": [P(c_void_p), c_int],
    "cuDevicePrimaryCtxRelease_v2": [c_int],
    "cuCtxSetCurrent": [c_void_p],
    "cuModuleLoadDataEx": [P(c_void_p), c_char_p, c_uint, P(c_int), P(c_void_p)],
    "cuModuleGetFunction": [P(c_void_p), c_void_p, c_char_p],
    "cuModuleUnload": [c_void_p],
    "cuFuncGetAttribute": [P(c_int), c_int, c_void_p],
    "cuMemAlloc_v2": [P(c_uint64), c_size_t],
    "cuMemFree_v2": [c_uint64],
    "cuMemcpyHtoD_v2": [c_uint64, c_void_p, c_size_t],
    "cuMemcpyDtoH_v2": [c_void_p, c_uint64, c_size_t],
    "cuMemHostAlloc": [P(c_void_p), c_size_t, c_uint],
    "cuMemFreeHost": [c_void_p],
    "cuMemHostGetDevicePointer_v2": [P(c_uint64), c_void_p, c_uint],
    "cuStreamCreate": [P(c_void_p), c_uint],
    "cuStreamDestroy_v2": [c_void_p],
    "cuStreamQuery": [c_void_p],
    "cuStreamSynchronize": [c_void_p],
    "cuLaunchKernel": [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p,
                       P(c_void_p), P(c_void_p)],
    "cuGetErrorName": [c_int, P(c_char_p)],
    "cuGetErrorString": [c_int, P(c_char_p)],
}


class CudaError(Exception):
    def __init__(self, call, code, name, text):
        super().__init__(f"{call} failed: {name} ({text})")
        self.call, self.code, self.name = call, code, name


class Driver:
    """The CUDA driver API through ctypes; every call is checked."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)  # OSError when absent
        self.missing = []
        for name, args in SIGNATURES.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                self.missing.append(name)
                continue
            fn.argtypes = args
            fn.restype = c_int

    def name(self, code):
        s = c_char_p()
        if self.lib.cuGetErrorName(code, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return FALLBACK_NAMES.get(code, f"CUresult {code}")

    def text(self, code):
        s = c_char_p()
        if self.lib.cuGetErrorString(code, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return "no description"

    def call(self, fn, *args):
        code = getattr(self.lib, fn)(*args)
        if code != 0:
            raise CudaError(fn, code, self.name(code), self.text(code))

    # Small helpers over the raw calls.
    def alloc(self, nbytes):
        p = c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(p), max(int(nbytes), 1))
        return p.value

    def htod(self, dptr, data):
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        self.call("cuMemcpyHtoD_v2", dptr, buf, len(data))

    def dtoh(self, dptr, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        self.call("cuMemcpyDtoH_v2", buf, dptr, nbytes)
        return buf.raw

    def attribute(self, attr, dev):
        v = c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(v), attr, dev)
        return v.value


def out(line):
    print(line, flush=True)


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, name, detail, notes=()):
        out(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
        for n in notes:
            out(f"      {n}")
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def read_file(path):
    """The file's bytes (gzip-compressed files, *.gz, uncompressed)."""
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def load_json(path):
    return json.loads(read_file(path).decode("utf-8"))


def descriptor(dptr, shape, strides, flags=0):
    """64 bytes, as Array::WriteDescriptor (runtime/objects/array.cc) fills them;
    `flags` is the reserved word (an adjoint block's gradient flags)."""
    s = list(shape) + [0] * (4 - len(shape))
    st = list(strides) + [0] * (4 - len(strides))
    return struct.pack("<Q4iii4q", dptr, *s, len(shape), flags, *st)


def launch_ctx(dim, cancel):
    size = 1
    for d in dim:
        size *= d
    shape = list(dim) + [0] * (4 - len(dim))
    ctx = struct.pack("<4iiiq", *shape, len(dim), 0, size) + bytes(FAULT_END - FAULT_BEGIN)
    ctx += struct.pack("<ii", 1 if cancel else 0, 0) + bytes(40)  # cancel, reserved, print_buffer (none)
    ctx += bytes(16)  # objects, num_objects (none)
    assert len(ctx) == LAUNCH_CTX["size"]
    return ctx, size


def parse_fault(ctx):
    flag, kind, line, dim, index, extent, array_ndim, _ = struct.unpack_from("<iiiiqqii", ctx, FAULT_BEGIN)
    shape = list(struct.unpack_from("<4q", ctx, LAUNCH_CTX["fault.shape"]))
    return {"flag": flag, "kind": kind, "line": line, "dim": dim, "index": index, "extent": extent,
            "array_ndim": array_ndim, "shape": shape}


# kReference tolerances, relative to 1 + |expect| (floats; other scalars exactly).
REFERENCE_TOLERANCE = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-12}


def field_values(np, data, elem, offset, scalar, count):
    """The components of one field of every element, as float64 (bfloat16 by
    its bits) or int64/uint64 for integers."""
    n = len(data) // elem
    raw = np.frombuffer(data, dtype=np.uint8).reshape(n, elem)
    width = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2,
             "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}[scalar]
    cols = raw[:, offset:offset + width * count].copy().reshape(-1)
    if scalar == "bfloat16":
        bits = cols.view("<u2").astype(np.uint32) << 16
        return bits.view("<f4").astype(np.float64)
    if scalar == "bool":
        return cols.view(np.uint8).astype(np.int64)
    dtype = np.dtype(scalar).newbyteorder("<")
    values = cols.view(dtype)
    return values.astype(np.float64) if dtype.kind == "f" else values


def compare_reference(np, spec, param, got_bytes, expect_bytes):
    """kReference: every field of every element as the CPU entry left it."""
    elem = param["elem_bytes"]
    name = spec["param"]
    problems, checked = [], 0
    for offset, scalar, count in param["fields"]:
        got = field_values(np, got_bytes, elem, offset, scalar, count)
        want = field_values(np, expect_bytes, elem, offset, scalar, count)
        checked += got.size
        if scalar in REFERENCE_TOLERANCE:
            tol = max(REFERENCE_TOLERANCE[scalar], spec.get("rtol", 0))
            nan_got, nan_want = np.isnan(got), np.isnan(want)
            with np.errstate(invalid="ignore"):
                same_inf = np.isinf(want) & (got == want)
                diff = np.abs(got - want)
                close = (diff <= tol * (1 + np.abs(want))) & ~np.isinf(want) & ~np.isinf(got)
            bad = ~((nan_got & nan_want) | same_inf | close)
        else:
            bad = got != want
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            problems.append(f"{int(bad.sum())} {scalar} components differ from the CPU's at field offset {offset}, "
                            f"first element {i // count} component {i % count}: got {got[i].item()!r}, "
                            f"CPU {want[i].item()!r}")
    return problems, f"{name} as the CPU ({checked} components)"


def compare(np, spec, param, got_bytes, init_bytes, expect_bytes):
    """(ok, summary, problems) for one array after a launch: its values by
    the manifest's rule, and the guard elements after it untouched."""
    if spec["rule"] == "reference":
        body, tail = got_bytes[:len(init_bytes)], got_bytes[len(init_bytes):]
        problems, summary = compare_reference(np, spec, param, body, expect_bytes)
        if tail != bytes([GUARD_BYTE]) * (spec["guard_elems"] * param["elem_bytes"]):
            problems.append("bytes written past the array's end")
        return not problems, summary, [f"{spec['param']}: {p}" for p in problems]
    dtype = np.dtype(param["scalar"]).newbyteorder("<")
    elem = param["elem_bytes"]
    count = len(init_bytes) // elem
    guard = spec["guard_elems"] * elem
    body, tail = got_bytes[:len(init_bytes)], got_bytes[len(init_bytes):]
    name = spec["param"]
    problems = []
    if tail != bytes([GUARD_BYTE]) * guard:
        changed = sum(1 for b in tail if b != GUARD_BYTE)
        problems.append(f"{changed} bytes written past the array's end (guard of {spec['guard_elems']} elements)")
    got = np.frombuffer(body, dtype=dtype)
    init = np.frombuffer(init_bytes, dtype=dtype)
    rule = spec["rule"]
    per_elem = max(param["components"], 1)

    def first_bad(mask, want):
        i = int(np.flatnonzero(mask)[0])
        return (f"{int(mask.sum())} of {got.size} values wrong, first at element {i // per_elem}"
                f" (value {i}): got {got[i].item()!r}, want {want[i].item()!r}")

    if rule == "unchanged":
        bad = got != init
        if bad.any():
            problems.append(first_bad(bad, init))
        summary = f"{name} unchanged"
    else:
        want = np.frombuffer(expect_bytes, dtype=dtype)
        if rule == "exact":
            bad = got != want
            err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
            summary = f"{name} exact ({count} elements, max abs err {err:.3g})"
        elif rule == "close":
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            tol = spec["atol"] + spec["rtol"] * np.abs(want.astype(np.float64))
            bad = ~(diff <= tol)  # NaN counts as bad
            err = float(np.max(diff)) if got.size else 0.0
            summary = (f"{name} max abs err {err:.3g} over {count} elements"
                       f" (allowed {spec['atol']:g} + {spec['rtol']:g}*|want|)")
        elif rule == "expected_or_initial":
            bad = (got != want) & (got != init)
            written = int(np.sum((got == want) & (got != init)))
            should = int(np.sum(want != init))
            summary = f"{name}: {written} of {should} stores done, every value right or untouched"
        else:
            raise ValueError(f"unknown rule {rule!r}")
        if bad.any():
            problems.append(first_bad(bad, want))
    return not problems, summary, [f"{name}: {p}" for p in problems]


class Runner:
    def __init__(self, drv, np, root, report):
        self.drv, self.np, self.root = drv, np, root
        self.report = report
        self.context_lost = False

    def path(self, rel):
        return os.path.join(self.root, rel)

    def load_module(self, case):
        """(module, how) or (None, None); reports the load as a check."""
        drv = self.drv
        name = case["name"]
        image = read_file(self.path(case["ptx"])) + b"\0"
        log_size = 1 << 16
        error_log = ctypes.create_string_buffer(log_size)
        info_log = ctypes.create_string_buffer(log_size)
        opts = (c_int * 4)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
        vals = (c_void_p * 4)(ctypes.cast(error_log, c_void_p).value, log_size,
                              ctypes.cast(info_log, c_void_p).value, log_size)
        module = c_void_p()
        t0 = time.perf_counter()
        code = drv.lib.cuModuleLoadDataEx(ctypes.byref(module), image, 4, opts, vals)
        ms = (time.perf_counter() - t0) * 1e3
        if code == 0:
            info = info_log.value.decode(errors="replace").strip()
            self.report.check(True, f"{name}/load", f"{case['ptx']} JIT-compiled by the driver ({ms:.0f} ms)",
                              ["JIT info log: " + l for l in info.splitlines()])
            return module, "ptx"
        log = error_log.value.decode(errors="replace").strip() or "(the JIT error log is empty)"
        self.report.check(False, f"{name}/load", f"cuModuleLoadDataEx({case['ptx']}) failed: {drv.name(code)} "
                          f"({drv.text(code)})", ["JIT error log:"] + ["  " + l for l in log.splitlines()])
        cubin = self.path(case["ptx"].split(".ptx")[0] + f".sm_{case['arch']}.cubin")
        if os.path.exists(cubin):
            with open(cubin, "rb") as f:
                data = f.read()
            code = drv.lib.cuModuleLoadDataEx(ctypes.byref(module), data, 0, None, None)
            if code == 0:
                out(f"      running {name} from {os.path.basename(cubin)} (ptxas on the build machine) instead")
                return module, "cubin"
            out(f"      {os.path.basename(cubin)} does not load either: {drv.name(code)}")
        return None, None

    def run_case(self, case):
        drv = self.drv
        name = case["name"]
        args = case["args"]
        # By value, the block is `pieces` parameters of equal size (an adjoint
        # entry takes the forward block and the adjoint block); by address, one.
        pieces = args.get("pieces", 1)
        if args["passing"] == "value":
            want_ptx = [8] + [args["size"] // pieces] * pieces
        else:
            want_ptx = [8, 8]
        if args["ptx_param_bytes"] != want_ptx or args["size"] % pieces:
            self.report.check(False, f"{name}/abi", f"PTX entry parameters {args['ptx_param_bytes']} "
                              f"do not match passing {args['passing']!r} of a {args['size']}-byte block "
                              f"in {pieces} parameter(s)")
            return
        module, _ = self.load_module(case)
        if module is None:
            return
        try:
            functions = {}  # entry -> (function, resources, max threads)
            for launch in case["launches"]:
                if self.context_lost:
                    return
                # A launch may run another kernel of the module (its own entry, block and parameters).
                view = dict(case)
                for key in ("entry", "args", "params"):
                    if key in launch:
                        view[key] = launch[key]
                entry = view["entry"]
                if entry not in functions:
                    fn = c_void_p()
                    try:
                        drv.call("cuModuleGetFunction", ctypes.byref(fn), module, entry.encode())
                    except CudaError as e:
                        self.report.check(False, f"{name}/{launch['name']}/entry", str(e))
                        continue
                    regs, max_threads, local = c_int(), c_int(), c_int()
                    drv.call("cuFuncGetAttribute", ctypes.byref(regs), CU_FUNC_ATTRIBUTE_NUM_REGS, fn)
                    drv.call("cuFuncGetAttribute", ctypes.byref(max_threads),
                             CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn)
                    drv.call("cuFuncGetAttribute", ctypes.byref(local), CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn)
                    functions[entry] = (fn, f"{regs.value} regs, {local.value} B local memory per thread",
                                        max_threads.value)
                fn, resources, max_threads = functions[entry]
                self.run_launch(view, fn, launch, resources, max_threads)
        finally:
            if not self.context_lost:
                drv.call("cuModuleUnload", module)

    def run_launch(self, case, fn, launch, resources, max_threads):
        drv, np = self.drv, self.np
        label = f"{case['name']}/{launch['name']}"
        params = {p["name"]: p for p in case["params"]}
        device_allocs, host_allocs, stream = [], [], c_void_p()
        try:
            block = bytearray(case["args"]["size"])
            filled = set()
            arrays = []  # (spec, param, dptr, total bytes, init bytes, expect bytes)
            for spec in launch["arrays"]:
                p = params[spec["param"]]
                with open(self.path(spec["init"]), "rb") as f:
                    init = f.read()
                expect = None
                if spec["expect"]:
                    with open(self.path(spec["expect"]), "rb") as f:
                        expect = f.read()
                count = math.prod(spec["shape"])
                if len(init) != count * p["elem_bytes"]:
                    raise ValueError(f"{spec['init']}: {len(init)} bytes for {count} elements")
                host = init + bytes([GUARD_BYTE]) * (spec["guard_elems"] * p["elem_bytes"])
                dptr = drv.alloc(len(host))
                device_allocs.append(dptr)
                drv.htod(dptr, host)
                block[p["offset"]:p["offset"] + ARRAY_T["size"]] = descriptor(dptr, spec["shape"], spec["strides"],
                                                                              spec.get("flags", 0))
                filled.add(p["name"])
                arrays.append((spec, p, dptr, len(host), init, expect))
            for spec in launch["scalars"]:
                p = params[spec["param"]]
                value = bytes.fromhex(spec["bytes_hex"])
                if len(value) != p["size"]:
                    raise ValueError(f"{p['name']}: {len(value)} bytes for a {p['size']}-byte parameter")
                block[p["offset"]:p["offset"] + p["size"]] = value
                # Arrays the value refers to (array members of a struct): allocated, not compared.
                for ref in spec.get("refs", []):
                    with open(self.path(ref["init"]), "rb") as f:
                        data = f.read()
                    dptr = drv.alloc(max(len(data), 1))
                    device_allocs.append(dptr)
                    if data:
                        drv.htod(dptr, data)
                    at = p["offset"] + ref["at"]
                    block[at:at + ARRAY_T["size"]] = descriptor(dptr, ref["shape"], ref["strides"])
                filled.add(p["name"])
            if filled != set(params):
                raise ValueError(f"launch leaves parameters unset: {sorted(set(params) - filled)}")

            ctx_bytes, size = launch_ctx(launch["dim"], launch["cancel_before"])
            cancel_after = launch["cancel_after_s"]
            host_ctx = None
            if cancel_after > 0:
                # In host-mapped memory, so the host can set cancel while the kernel runs.
                hp = c_void_p()
                drv.call("cuMemHostAlloc", ctypes.byref(hp), len(ctx_bytes),
                         CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)
                host_allocs.append(hp.value)
                host_ctx = hp.value
                ctypes.memmove(host_ctx, ctx_bytes, len(ctx_bytes))
                dctx = c_uint64()
                drv.call("cuMemHostGetDevicePointer_v2", ctypes.byref(dctx), c_void_p(host_ctx), 0)
                ctx_ptr = dctx.value
            else:
                ctx_ptr = drv.alloc(len(ctx_bytes))
                device_allocs.append(ctx_ptr)
                drv.htod(ctx_ptr, ctx_bytes)

            ctx_arg = c_uint64(ctx_ptr)
            if case["args"]["passing"] == "pointer":
                dargs = drv.alloc(len(block))
                device_allocs.append(dargs)
                drv.htod(dargs, block)
                block_arg = c_uint64(dargs)
                passing = f"args by address ({len(block)} B block in device memory)"
                block_args = [block_arg]
            else:
                pieces = case["args"].get("pieces", 1)
                piece = len(block) // pieces
                block_args = [(ctypes.c_char * piece).from_buffer(block, k * piece) for k in range(pieces)]
                passing = (f"args by value ({len(block)} B" +
                           (f" in {pieces} parameters)" if pieces > 1 else ")"))
            kernel_params = (c_void_p * (1 + len(block_args)))(
                ctypes.addressof(ctx_arg), *[ctypes.addressof(b) for b in block_args])

            threads = min(launch["threads_per_block"], max_threads) if max_threads > 0 else launch["threads_per_block"]
            blocks = max(1, -(-size // threads))
            if launch["max_blocks"] > 0:
                blocks = min(blocks, launch["max_blocks"])
            drv.call("cuStreamCreate", ctypes.byref(stream), 0)
            t0 = time.perf_counter()
            drv.call("cuLaunchKernel", fn, blocks, 1, 1, threads, 1, 1, 0, stream, kernel_params, None)
            notes = []
            if cancel_after > 0:
                ok, timing = self.cancel_while_running(stream, host_ctx, t0, cancel_after, launch["deadline_s"])
                if not ok:
                    self.report.check(False, label, timing)
                    return
            else:
                try:
                    drv.call("cuStreamSynchronize", stream)
                except CudaError as e:
                    if e.code in STICKY_ERRORS:
                        self.context_lost = True
                    raise
                timing = f"{(time.perf_counter() - t0) * 1e3:.2f} ms"

            ctx_after = ctypes.string_at(host_ctx, len(ctx_bytes)) if host_ctx else drv.dtoh(ctx_ptr, len(ctx_bytes))
            ok = True
            parts = []
            for spec, p, dptr, total, init, expect in arrays:
                good, summary, problems = compare(np, spec, p, drv.dtoh(dptr, total), init, expect)
                ok &= good
                parts.append(summary)
                notes += problems
            # The kernel may write only the fault record (and cancel is the runner's).
            want_ctx = bytearray(ctx_bytes)
            if cancel_after > 0:
                want_ctx[LAUNCH_CTX["cancel"]:LAUNCH_CTX["cancel"] + 4] = struct.pack("<i", 1)
            got_ctx = bytearray(ctx_after)
            if got_ctx[:FAULT_BEGIN] + got_ctx[FAULT_END:] != want_ctx[:FAULT_BEGIN] + want_ctx[FAULT_END:]:
                ok = False
                notes.append("launch_ctx: bytes outside the fault record changed (bounds, cancel or print buffer)")
            fault, want = parse_fault(ctx_after), launch["fault"]
            if want["flag"] == 0:
                if any(ctx_after[FAULT_BEGIN:FAULT_END]):
                    ok = False
                    notes.append(f"fault: none expected, got {fault}")
                else:
                    parts.append("no fault")
            else:
                diffs = [f"{k} {fault[k]} (want {want[k]})" for k in want if fault[k] != want[k]]
                if diffs:
                    ok = False
                    notes.append("fault record: " + ", ".join(diffs))
                else:
                    parts.append(f"fault recorded (kind {fault['kind']}, line {fault['line']}, dim {fault['dim']}, "
                                 f"index {fault['index']}, extent {fault['extent']}, shape {fault['shape'][:fault['array_ndim']]})")
            detail = (f"{'; '.join(parts)} [{blocks}x{threads} threads for {size} ids, {passing}, {resources}, {timing}]")
            self.report.check(ok, label, detail, notes)
        except CudaError as e:
            lost = " (the context is lost: the remaining checks cannot run)" if self.context_lost else ""
            self.report.check(False, label, f"{e}{lost}")
        except Exception as e:  # a bug here or a malformed manifest: report it, go on
            self.report.check(False, label, f"runner error: {e!r}", traceback.format_exc().splitlines()[-3:])
        finally:
            if not self.context_lost:
                if stream.value:
                    drv.call("cuStreamDestroy_v2", stream)
                for p in device_allocs:
                    drv.call("cuMemFree_v2", p)
                for p in host_allocs:
                    drv.call("cuMemFreeHost", c_void_p(p))

    def cancel_while_running(self, stream, host_ctx, t0, cancel_after, deadline):
        """Sets launch_ctx.cancel while the kernel runs; (ok, text)."""
        drv = self.drv
        while time.perf_counter() - t0 < cancel_after:
            time.sleep(0.01)
        code = drv.lib.cuStreamQuery(stream)
        if code == 0:
            return False, (f"the kernel ended {cancel_after} s after launch, before the cancel: "
                           f"the loop is too short to test a cancel")
        if code != CUDA_ERROR_NOT_READY:
            if code in STICKY_ERRORS:
                self.context_lost = True
            return False, f"cuStreamQuery failed: {drv.name(code)} ({drv.text(code)})"
        ctypes.c_int32.from_address(host_ctx + LAUNCH_CTX["cancel"]).value = 1
        t_cancel = time.perf_counter()
        while True:
            code = drv.lib.cuStreamQuery(stream)
            if code == 0:
                break
            if code != CUDA_ERROR_NOT_READY:
                if code in STICKY_ERRORS:
                    self.context_lost = True
                return False, f"cuStreamQuery failed after the cancel: {drv.name(code)} ({drv.text(code)})"
            if time.perf_counter() - t_cancel > deadline:
                self.context_lost = True  # it still runs: nothing else can be trusted to run
                return False, f"the kernel is still running {deadline} s after cancel was set"
            time.sleep(0.001)
        late = time.perf_counter() - t_cancel
        if late > deadline:  # it ended, but later than the deadline (checked even at the first query)
            return False, f"the kernel ended {late * 1e3:.1f} ms after cancel was set, past its {deadline} s deadline"
        return True, f"ran {cancel_after:.2f} s, ended {late * 1e3:.1f} ms after the cancel"


USAGE = "usage: gpu_check.py [DIR] [--only CASE[,CASE...]] [--timeout SECONDS]"


def start_watchdog(seconds, report):
    """Ends the process when the whole run takes longer than `seconds` (a
    kernel or driver call that never returns would otherwise hold the lent
    machine); the driver's calls release the GIL, so this thread runs."""
    def fire():
        out(f"FAIL  watchdog: the run took over {seconds:g} s (a kernel or a driver call does not return); "
            f"{report.passed} passed, {report.failed} failed before it")
        os._exit(EXIT_FAILED)
    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()


def main(argv):
    args = list(argv[1:])
    options = {"--only": None, "--timeout": "240"}
    for opt in options:
        if opt in args:
            i = args.index(opt)
            if i + 1 >= len(args):
                out(USAGE)
                return EXIT_USAGE
            options[opt] = args[i + 1]
            del args[i:i + 2]
    only = options["--only"]
    try:
        timeout = float(options["--timeout"])
    except ValueError:
        timeout = 0
    if len(args) > 1 or any(a.startswith("-") for a in args) or timeout <= 0:
        out(USAGE)
        return EXIT_USAGE
    root = args[0] if args else "build-gpu-check"
    index_path = os.path.join(root, "checks.json")
    if not os.path.isfile(index_path):
        out(f"gpu_check: {index_path} not found: run scripts/gpu-prepare.sh on the build machine and copy "
            f"{root}/ here (it is git-ignored)")
        return EXIT_USAGE
    try:
        index = load_json(index_path)
        cases = [load_json(os.path.join(root, c)) for c in index["cases"]]
    except (OSError, ValueError, KeyError) as e:
        out(f"gpu_check: cannot read the manifests in {root}: {e}")
        return EXIT_USAGE
    layouts = index.get("layouts", {})
    if layouts.get("launch_ctx") != LAUNCH_CTX or layouts.get("array_t") != ARRAY_T:
        out("gpu_check: the generator's launch_ctx/array_t layouts differ from this script's "
            f"(generator: {layouts}); update LAUNCH_CTX/ARRAY_T here to match runtime/native/warpd/native")
        return EXIT_USAGE
    if only is not None:
        wanted = only.split(",")
        unknown = sorted(set(wanted) - {c["name"] for c in cases})
        if unknown:
            out(f"gpu_check: no case {', '.join(unknown)} in {index_path}")
            return EXIT_USAGE
        cases = [c for c in cases if c["name"] in wanted]

    lib = os.environ.get("WARPD_GPU_CHECK_LIBCUDA", "libcuda.so.1")
    try:
        drv = Driver(lib)
    except OSError as e:
        out(f"gpu_check: no CUDA driver: cannot load {lib} ({e}). This check needs a machine with an NVIDIA "
            "GPU and its driver; nothing was run.")
        return EXIT_NO_DRIVER
    if drv.missing:
        out(f"gpu_check: no usable CUDA driver: {lib} lacks {', '.join(drv.missing)}")
        return EXIT_NO_DRIVER
    code = drv.lib.cuInit(0)
    if code != 0:
        out(f"gpu_check: no usable CUDA driver or device: cuInit failed: {drv.name(code)} ({drv.text(code)}); "
            "nothing was run.")
        return EXIT_NO_DRIVER
    try:
        import numpy as np
    except ImportError:
        out("gpu_check: numpy is missing (python3 -m pip install numpy)")
        return EXIT_USAGE

    try:
        version, count, dev = c_int(), c_int(), c_int()
        drv.call("cuDriverGetVersion", ctypes.byref(version))
        drv.call("cuDeviceGetCount", ctypes.byref(count))
        if count.value < 1:
            out("gpu_check: the driver reports no CUDA device; nothing was run.")
            return EXIT_NO_DRIVER
        drv.call("cuDeviceGet", ctypes.byref(dev), 0)
        name = ctypes.create_string_buffer(256)
        drv.call("cuDeviceGetName", name, 256, dev)
        major = drv.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        minor = drv.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        sms = drv.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
        mem = c_size_t()
        drv.call("cuDeviceTotalMem_v2", ctypes.byref(mem), dev)
        ctx = c_void_p()
        drv.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        drv.call("cuCtxSetCurrent", ctx)
    except CudaError as e:
        out(f"gpu_check: FAIL setting up device 0: {e}")
        return EXIT_FAILED
    info = (f"{name.value.decode(errors='replace')}, compute capability {major}.{minor}, {sms} SMs, "
            f"{mem.value / 2**30:.1f} GiB, driver API {version.value // 1000}.{version.value % 1000 // 10}")
    out(f"gpu_check: device 0: {info}")
    out(f"gpu_check: {len(cases)} cases from {root} (label {index.get('label') or '-'}, "
        f"NVRTC {index.get('nvrtc')}, PTX for compute_{index.get('arch')})")
    if major * 10 + minor < index.get("arch", 0):
        out(f"gpu_check: note: compute_{index.get('arch')} PTX cannot run on a {major}.{minor} device")

    report = Report()
    start_watchdog(timeout, report)
    runner = Runner(drv, np, root, report)
    for case in cases:
        if runner.context_lost:
            break
        try:
            runner.run_case(case)
        except CudaError as e:
            runner.report.check(False, f"{case['name']}", str(e))
    r = runner.report
    if runner.context_lost:
        out("gpu_check: the CUDA context was lost (sticky error or a kernel that does not end); "
            "the checks after it did not run")
    out(f"gpu_check: {r.passed} passed, {r.failed} failed on {info}")
    status = EXIT_OK if r.failed == 0 and not runner.context_lost else EXIT_FAILED
    if runner.context_lost:
        os._exit(status)  # a kernel may still run: do not wait for it in the driver's teardown
    try:
        drv.call("cuDevicePrimaryCtxRelease_v2", dev)
    except CudaError as e:
        out(f"gpu_check: releasing the context: {e}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
