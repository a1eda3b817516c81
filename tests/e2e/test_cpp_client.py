"""The C++ client (clients/cpp) as a user gets it: the package installed from
the build to a fresh prefix, its examples built as an outside project with
find_package(warpd), run against real daemons, their numbers checked against
NumPy. Also: a module the Python client saved (wp.save_module) runs in C++,
the IR builder emits the Python front end's IR, TCP clients (token file,
gRPC transfers) and a refused token.

The library comes from $WARPD_CPP_CLIENT_BUILD, else <repo>/build (the
sanitized e2e run uses the same plain client against its daemon;
WARPD_CPP_CLIENT_BUILD=build-asan runs the sanitized client, its examples
built with the same sanitizers)."""

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, Daemon, daemon_binary

import warpd as wp


def _run(cmd, env=None, check=True, timeout=600):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}",
                    pytrace=False)
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(prefix, examples build dir): the package installed and the examples built against it."""
    build = Path(os.environ.get("WARPD_CPP_CLIENT_BUILD", REPO / "build"))
    if not list((build / "clients" / "cpp").glob("libwarpd_client.so*")):
        pytest.fail(f"the C++ client is not built in {build} (scripts/setup.sh builds it)", pytrace=False)
    root = tmp_path_factory.mktemp("cpp_client")
    prefix = root / "prefix"
    _run(["cmake", "--install", build, "--prefix", prefix, "--component", "warpd_client"])
    cxx = os.environ.get("CXX") or shutil.which("clang++-19") or "c++"
    flags = []
    # A sanitized client library (build-asan) needs its sanitizers' runtimes in the programs.
    cache = (build / "CMakeCache.txt").read_text() if (build / "CMakeCache.txt").exists() else ""
    sanitize = re.search(r"^WARPD_SANITIZE:STRING=(.+)$", cache, re.M)
    if sanitize:
        san = f"-fsanitize={sanitize.group(1).strip()} -fno-omit-frame-pointer -fno-sanitize=vptr,function"
        flags = [f"-DCMAKE_CXX_FLAGS={san}", f"-DCMAKE_EXE_LINKER_FLAGS={san}"]
    _run(["cmake", "-S", REPO / "clients" / "cpp" / "examples", "-B", root / "build", "-G", "Ninja",
          f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_CXX_COMPILER={cxx}", *flags])
    _run(["cmake", "--build", root / "build"])
    return prefix, root / "build"


def _example(installed, name, *args, env_extra=None, check=True):
    env = dict(os.environ)
    env.update(env_extra or {})
    return _run([installed[1] / name, *args], env=env, check=check)


def test_installed_package_is_self_contained(installed):
    prefix, _ = installed
    names = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*") if p.is_file() or p.is_symlink())
    assert "include/warpd/client.h" in names and "include/warpd/v1/ir.pb.h" in names, names
    assert "lib/cmake/warpd/warpdConfig.cmake" in names, names
    # Nothing a consumer reads points back into the source or build tree.
    for p in prefix.rglob("*"):
        if p.suffix in (".h", ".cmake"):
            assert str(REPO) not in p.read_text(), f"{p} names {REPO}"
    readelf = _run(["readelf", "-d", prefix / "lib" / "libwarpd_client.so"]).stdout
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\).*\[(.*)\]", readelf)
    assert runpath == ["$ORIGIN"], readelf
    # The examples need nothing but the prefix and the system's libraries.
    ldd = _run(["ldd", installed[1] / "saxpy"]).stdout
    assert "not found" not in ldd, ldd
    assert str(prefix / "lib" / "libwarpd_client.so") in ldd, ldd


def _saxpy_reference(n):
    x = np.arange(n, dtype=np.float32) * np.float32(0.001)
    y = np.ones(n, dtype=np.float32)
    for _ in range(7):  # one launch, then a graph of three launches replayed twice
        y = (np.float32(2.5) * x + y).astype(np.float32)
    return y


def test_saxpy_builder_graph_and_zero_copy(installed, wp, tmp_path):
    out = tmp_path / "y.f32"
    proc = _example(installed, "saxpy", "--out", out)
    assert "local=1" in proc.stdout and "mapped=1" in proc.stdout, proc.stdout
    y = np.fromfile(out, dtype=np.float32)
    np.testing.assert_allclose(y, _saxpy_reference(100000), rtol=2e-6)


def test_builder_emits_the_python_front_ends_ir(installed, wp, tmp_path):
    """saxpy written with the builder is the IR the Python front end makes of the same
    kernel, source positions and derived names aside."""
    from warpd.v1 import ir_pb2

    @wp.kernel(module="unique")
    def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    py, _ = saxpy.module.build()
    dump = tmp_path / "saxpy.pb"
    _example(installed, "saxpy", "--dump-ir", dump)
    cpp = ir_pb2.Module.FromString(dump.read_bytes())

    def canonical(m):
        c = ir_pb2.Module()
        c.CopyFrom(m)
        c.name = ""
        for f in c.functions:
            f.name = f.display_name
        _drop_spans(c)
        return c

    assert canonical(cpp) == canonical(py), f"C++:\n{canonical(cpp)}\nPython:\n{canonical(py)}"
    # The C++ spans name the example's source and lines.
    body = cpp.functions[0].body
    assert body[0].span.file.endswith("saxpy.cc") and body[1].span.line == body[0].span.line + 1


def _drop_spans(msg):
    for fd, value in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        if fd.message_type.name == "SourceSpan":
            msg.ClearField(fd.name)
            continue
        for v in (value if _repeated(fd) else [value]):
            _drop_spans(v)


def _repeated(fd):
    rep = getattr(fd, "is_repeated", None)
    return rep if rep is not None else fd.label == fd.LABEL_REPEATED


@wp.kernel(module="unique")
def wave(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float), k: float, steps: int):
    i = wp.tid()
    s = float(0.0)
    for j in range(steps):
        s += wp.sin(k * wp.length(p[i]) * float(j + 1))
    out[i] = s


def test_module_saved_by_python_runs_in_cpp(installed, wp, tmp_path):
    path = tmp_path / "wave.wpmod"
    wp.save_module(path, module=wave.module)
    from warpd.v1 import runtime_pb2

    saved = runtime_pb2.LoadModuleRequest.FromString(path.read_bytes())
    assert saved.session == "" and not saved.devices and not saved.module.backward
    assert [f.display_name for f in saved.module.functions] == ["wave"]
    out = tmp_path / "out.f32"
    proc = _example(installed, "load_module", path, "--out", out)
    assert "kernel wave_" in proc.stdout, proc.stdout
    got = np.fromfile(out, dtype=np.float32)
    n = 1000
    p = _wave_points(n)
    length = np.linalg.norm(p.astype(np.float64), axis=1)
    reference = sum(np.sin(0.75 * length * (j + 1)) for j in range(5))
    np.testing.assert_allclose(got, reference, atol=5e-5)
    # The Python client's own launch of the kernel agrees.
    pa = wp.array(p, dtype=wp.vec3)
    oa = wp.zeros(n, dtype=float)
    wp.launch(wave, dim=n, inputs=[pa, oa, 0.75, 5])
    np.testing.assert_allclose(got, oa.numpy(), rtol=1e-6, atol=1e-6)


def _wave_points(n):
    return np.stack([np.float32(0.01) * np.arange(n, dtype=np.float32), np.ones(n, np.float32),
                     np.full(n, -0.5, np.float32)], axis=1)


@pytest.mark.parametrize("backward", [False, True])
def test_adjoint_launch_of_python_saved_module(installed, wp, tmp_path, backward):
    """LaunchAdjoint with out.grad = 1 gives d out[i] / d p[i]: the module saved with its
    backward pass, or forward only (the client loads it again with Module.backward)."""
    path = tmp_path / "wave.wpmod"
    wp.save_module(path, module=wave.module, backward=backward)
    grad_out = tmp_path / "pgrad.f32"
    proc = _example(installed, "load_module", path, "--grad", grad_out)
    assert "p.grad[0]=" in proc.stdout, proc.stdout
    n = 1000
    p = _wave_points(n).astype(np.float64)
    length = np.linalg.norm(p, axis=1)
    scale = sum(np.cos(0.75 * length * (j + 1)) * 0.75 * (j + 1) for j in range(5))
    reference = scale[:, None] * p / length[:, None]
    got = np.fromfile(grad_out, dtype=np.float32).reshape(n, 3)
    np.testing.assert_allclose(got, reference, atol=1e-4)


def test_save_module_with_backward_pass(wp, tmp_path):
    path = tmp_path / "wave_b.wpmod"
    wp.save_module(path, module=wave.module, backward=True)
    from warpd.v1 import runtime_pb2

    saved = runtime_pb2.LoadModuleRequest.FromString(path.read_bytes())
    assert saved.module.backward and [f.display_name for f in saved.module.functions] == ["wave"]
    # What is saved is what the client sends: the daemon compiles it.
    from warpd import context

    rt = context.runtime()
    saved.session = rt.session
    saved.devices.append("cpu")
    resp = rt.call("LoadModule", saved)
    assert [k.name for k in resp.kernels] == [saved.module.functions[0].name]


def test_missing_module_file_is_an_error(installed, wp, tmp_path):
    proc = _example(installed, "load_module", tmp_path / "none.wpmod", check=False)
    assert proc.returncode == 1 and "cannot open module file" in proc.stderr, proc.stderr


def test_tape_backward_through_two_kernels(installed, wp, tmp_path):
    out = tmp_path / "grad.f32"
    proc = _example(installed, "tape_backward", "--out", out)
    assert "launches recorded=2" in proc.stdout and "zeroed ok" in proc.stdout, proc.stdout
    x = (np.float32(-1.5) + np.float32(3.0) * np.arange(64, dtype=np.float32) / np.float32(63)).astype(np.float32)
    grad = np.fromfile(out, dtype=np.float32)
    np.testing.assert_allclose(grad, 2 * x * np.cos(x.astype(np.float64) ** 2), atol=2e-6)
    loss = float(re.search(r"loss=([-0-9.]+)", proc.stdout).group(1))
    assert abs(loss - np.sin(x.astype(np.float64) ** 2).sum()) < 1e-4


def test_wrong_token_is_refused_with_help(installed, wp):
    proc = _example(installed, "saxpy", env_extra={"WARPD_TOKEN": "not-a-token"}, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "UNAUTHENTICATED" in proc.stderr and "refused this client" in proc.stderr, proc.stderr
    assert "WARPD_TOKEN" in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def tcp_daemon(tmp_path_factory):
    """(TCP address, token) of a daemon of this test's own that also listens on loopback TCP."""
    d = Daemon(daemon_binary(), tmp_path_factory.mktemp("cpp_tcp"), extra_args=["--listen", "127.0.0.1:0"])
    d.start()
    port = int(re.search(r"listening on .*127\.0\.0\.1:(\d+)", d.log_tail(20000)).group(1))
    token = (d.dir / "warpd.token").read_text().strip()
    yield f"127.0.0.1:{port}", token
    alive = d.alive()
    assert d.stop() == 0 and alive, d.log_tail()


def test_tcp_client_uses_token_file_and_grpc_transfers(installed, tcp_daemon, tmp_path):
    """Over loopback TCP the token comes from the token file in $XDG_RUNTIME_DIR (this
    user's, mode 600), arrays are not mapped and data moves by the Upload/Download streams."""
    address, token = tcp_daemon
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    (xdg / "warpd.token").write_text(token + "\n")
    os.chmod(xdg / "warpd.token", stat.S_IRUSR | stat.S_IWUSR)
    env = {"WARPD_ADDRESS": address, "XDG_RUNTIME_DIR": str(xdg), "WARPD_TOKEN": ""}
    out = tmp_path / "y.f32"
    proc = _example(installed, "saxpy", "--out", out, env_extra=env)
    assert "local=0" in proc.stdout and "mapped=0" in proc.stdout, proc.stdout
    np.testing.assert_allclose(np.fromfile(out, dtype=np.float32), _saxpy_reference(100000), rtol=2e-6)
    # A token file others can read is not used: the daemon then refuses the call.
    os.chmod(xdg / "warpd.token", 0o644)
    proc = _example(installed, "saxpy", env_extra=env, check=False)
    assert proc.returncode == 1 and "lets others read it" in proc.stderr, proc.stderr


# A program of the test's own, built as another outside project against the same
# prefix: errors and kernel output as a C++ user meets them. Each check prints
# "<name>: <status code> <message>" (or its result) for the test to assert on.
CHECKS_CMAKE = """
cmake_minimum_required(VERSION 3.20)
project(warpd_checks LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(warpd REQUIRED)
add_executable(checks checks.cc)
target_link_libraries(checks PRIVATE warpd::client)
"""

CHECKS_CC = r"""
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "warpd/client.h"

namespace ir = warpd::ir;

static void Report(const char* name, const absl::Status& st) {
  std::printf("%s: %s\n", name, st.ToString().c_str());
}

// "lease": the session outlives an idle spell longer than the daemon's grace (the
// client's HoldSession stream holds it).
static int Lease() {
  auto client = warpd::Client::Connect();
  if (!client.ok()) { Report("connect", client.status()); return 1; }
  auto a = (*client)->CreateArray(ir::Float32(), {4});
  Report("fill", (*client)->FillValue(*a, 3.0f));
  Report("sync", (*client)->Synchronize());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  auto back = (*client)->Download<float>(*a);
  Report("after_idle", back.status());
  if (back.ok()) std::printf("value: %g\n", (*back)[0]);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "lease") return Lease();
  std::string printed;
  warpd::ConnectOptions options;
  options.output = [&](std::string_view text) { printed.append(text); };
  auto client = warpd::Client::Connect(options);
  if (!client.ok()) { Report("connect", client.status()); return 1; }
  warpd::Client& c = **client;

  // A compile error names this file and the builder call's line.
  ir::KernelBuilder bad("bad");
  ir::Expr out = bad.Param("out", ir::ArrayOf(ir::Float32()));
  bad.Assign(out[0], ir::Call("no_such_builtin", {1.0}));  // LINE_BAD
  Report("compile_error", c.LoadModule(ir::ModuleBuilder("bad").Add(bad).Build()).status());

  // An index out of bounds is a kernel fault reported by the next sync point.
  ir::KernelBuilder oob("oob");
  ir::Expr a = oob.Param("a", ir::ArrayOf(ir::Float32()));
  ir::Expr i = oob.Let("i", ir::Tid());
  oob.Assign(a[i + 10], 1.0);  // LINE_OOB
  // Kernel output comes back through ConnectOptions::output.
  ir::KernelBuilder hello("hello");
  ir::Expr v = hello.Param("v", ir::Int32());
  hello.Eval(ir::Call("print", {v * 2}));
  auto m = c.LoadModule(ir::ModuleBuilder("checks").Add(oob).Add(hello).Build());
  if (!m.ok()) { Report("load", m.status()); return 1; }
  auto arr = c.CreateArray(ir::Float32(), {4});
  Report("oob_launch", c.Launch(*m->kernel("oob"), {4}, {*arr}));
  Report("oob_sync", c.Synchronize());
  Report("after_fault_sync", c.Synchronize());
  Report("hello_launch", c.Launch(*m->kernel("hello"), {1}, {21}));
  Report("hello_sync", c.Synchronize());
  std::string escaped;
  for (char ch : printed) escaped += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  std::printf("printed: [%s]\n", escaped.c_str());

  // Launches from several threads (the client serializes them): 4 x 250 atomic adds.
  ir::KernelBuilder count("count");
  ir::Expr total = count.Param("total", ir::ArrayOf(ir::Int32()));
  count.Eval(ir::Call("atomic_add", {total, 0, 1}));
  auto cm = c.LoadModule(ir::ModuleBuilder("count").Add(count).Build());
  auto totals = c.CreateArray(ir::Int32(), {1});
  std::vector<std::thread> threads;
  std::vector<absl::Status> statuses(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 250 && statuses[t].ok(); ++r) statuses[t] = c.Launch(*cm->kernel("count"), {1}, {*totals});
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& st : statuses) Report("thread_launch", st);
  auto counted = c.Download<int32_t>(*totals);
  std::printf("counted: %d\n", counted.ok() ? (*counted)[0] : -1);

  // Client-side argument checks.
  Report("wrong_count", c.Launch(*m->kernel("hello"), {1}, {}));
  Report("float_for_int", c.Launch(*m->kernel("hello"), {1}, {1.5}));
  auto ints = c.CreateArray(ir::Int32(), {4});
  Report("wrong_dtype", c.Launch(*m->kernel("oob"), {4}, {*ints}));
  Report("bad_dim", c.Launch(*m->kernel("hello"), {1, 1, 1, 1, 1}, {1}));
  Report("no_kernel", m->kernel("missing").status());
  std::vector<float> three(3);
  Report("upload_size", c.Upload(*arr, three.data(), 12));
  // The daemon's own checks come back as its gRPC codes.
  Report("bad_shape", c.CreateArray(ir::Float32(), {1, 1, 1, 1, 1}).status());
  Report("bad_device", c.CreateArray(ir::Float32(), {4}, warpd::Init::kZeros, "cuda:7").status());
  // A small array is mapped only when asked (transfers do not use it); both agree.
  auto small = c.CreateArray(ir::Float32(), {4});
  Report("fill", c.FillValue(*small, 2.5f));
  auto mapped = c.Map(*small);
  Report("map_small", mapped.status());
  if (mapped.ok()) {
    Report("map_sync", c.Synchronize());
    mapped->as<float>()[3] = 7.0f;  // written through the mapping
    auto back = c.Download<float>(*small);
    std::printf("small: %g %g %g %g\n", (*back)[0], (*back)[1], (*back)[2], (*back)[3]);
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def checks(installed, tmp_path_factory):
    src = tmp_path_factory.mktemp("cpp_checks")
    (src / "CMakeLists.txt").write_text(CHECKS_CMAKE)
    (src / "checks.cc").write_text(CHECKS_CC)
    cxx = os.environ.get("CXX") or shutil.which("clang++-19") or "c++"
    cache = _run(["cmake", "-LA", "-N", installed[1]]).stdout
    flags = [f"-D{name}={value}" for name, value in re.findall(r"^(CMAKE_(?:CXX|EXE_LINKER)_FLAGS):STRING=(.*)$",
                                                               cache, re.M)]
    _run(["cmake", "-S", src, "-B", src / "build", "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={installed[0]}",
          f"-DCMAKE_CXX_COMPILER={cxx}", *flags])
    _run(["cmake", "--build", src / "build"])
    out = _run([src / "build" / "checks"]).stdout
    return (dict(line.split(": ", 1) for line in out.splitlines() if ": " in line), CHECKS_CC.splitlines(),
            src / "build" / "checks")


def _line_of(lines, marker):
    return next(n for n, text in enumerate(lines, 1) if marker in text)


def test_compile_error_names_the_cpp_line(checks, wp):
    results, lines, _ = checks
    msg = results["compile_error"]
    assert msg.startswith("INVALID_ARGUMENT"), msg
    assert f"checks.cc:{_line_of(lines, 'LINE_BAD')}:" in msg and "no_such_builtin" in msg, msg


def test_kernel_fault_and_output(checks, wp):
    results, lines, _ = checks
    assert results["oob_launch"] == "OK"
    fault = results["oob_sync"]
    assert fault.startswith("OUT_OF_RANGE") and "oob" in fault, fault
    assert f"checks.cc:{_line_of(lines, 'LINE_OOB')}" in fault, fault
    assert results["after_fault_sync"] == "OK"  # reported once, then cleared
    assert results["hello_launch"] == "OK" and results["hello_sync"] == "OK"
    assert results["printed"] == "[42\\n]", results["printed"]


def test_launches_from_several_threads(checks, wp):
    results, _, _ = checks
    assert results["thread_launch"] == "OK" and results["counted"] == "1000", results


def test_argument_and_request_errors(checks, wp):
    results, _, _ = checks
    assert results["wrong_count"].startswith("INVALID_ARGUMENT") and "takes 1 arguments (v)" in results["wrong_count"]
    assert results["float_for_int"].startswith("INVALID_ARGUMENT") and "integer" in results["float_for_int"]
    assert results["wrong_dtype"].startswith("INVALID_ARGUMENT") and "dtype" in results["wrong_dtype"]
    assert results["bad_dim"].startswith("INVALID_ARGUMENT") and "1 to 4" in results["bad_dim"]
    assert results["no_kernel"].startswith("NOT_FOUND") and "it has: oob, hello" in results["no_kernel"]
    assert results["upload_size"].startswith("INVALID_ARGUMENT")
    assert results["bad_shape"].startswith("INVALID_ARGUMENT"), results["bad_shape"]
    assert results["bad_device"].split(":")[0] in ("NOT_FOUND", "INVALID_ARGUMENT"), results["bad_device"]


def test_small_array_mapped_on_request(checks, wp):
    results, _, _ = checks
    assert results["map_small"] == "OK" and results["map_sync"] == "OK"
    # The download of a small array goes over gRPC and sees the write made through the mapping.
    assert results["small"] == "2.5 2.5 2.5 7", results["small"]


def test_a_daemon_of_another_version_is_refused(checks, tmp_path):
    """A stand-in daemon answering GetServerInfo with another protocol's version
    (tests/e2e/test_versions.py does the same for the Python client)."""
    from concurrent import futures

    import grpc
    from warpd.v1 import runtime_pb2, runtime_pb2_grpc

    class OtherVersion(runtime_pb2_grpc.RuntimeServicer):
        def GetServerInfo(self, request, context):
            return runtime_pb2.ServerInfo(version="7.3.0", devices=[runtime_pb2.DeviceInfo(name="cpu", kind="cpu")])

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    runtime_pb2_grpc.add_RuntimeServicer_to_server(OtherVersion(), server)
    sock = tmp_path / "other.sock"
    server.add_insecure_port(f"unix:{sock}")
    server.start()
    try:
        env = dict(os.environ, WARPD_ADDRESS=f"unix:{sock}", WARPD_TOKEN="wpd_" + "0" * 43)
        proc = _run([checks[2]], env=env, check=False)
    finally:
        server.stop(None)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("connect: FAILED_PRECONDITION"), proc.stdout
    assert "is version 7.3.0" in proc.stdout and "speak different protocols" in proc.stdout, proc.stdout


def test_lease_holds_an_idle_session(checks, tmp_path):
    """With a 1 s session grace, a client idle for 3 s keeps its session (and arrays):
    its HoldSession stream holds the lease."""
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--session-grace", "1s"])
    d.start()
    try:
        proc = _run([checks[2], "lease"], env=dict(os.environ, WARPD_ADDRESS=d.address), check=False)
    finally:
        alive = d.alive()
        code = d.stop()
    assert alive and code == 0, d.log_tail()
    assert "after_idle: OK" in proc.stdout and "value: 3" in proc.stdout, proc.stdout + proc.stderr
