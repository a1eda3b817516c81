"""Start-up and shut-down: many cycles, under load, the self-test, the parent watch.

A private daemon used to abort now and then at start-up (status -6, gRPC's
"Epoll1Poller ... epoll_wait error: Bad file descriptor"): the client forked
with a preexec_fn while its own gRPC threads were busy, gRPC's fork handlers
restarted its poller in the child, and the child's closing of inherited
descriptors closed the poller's epoll fd. These tests start and stop daemons
hundreds of times while this process's gRPC threads are busy.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import grpc
import pytest

from conftest import open_channel, Daemon, daemon_binary, own_daemon, pid_alive

CYCLES = int(os.environ.get("WARPD_TEST_START_CYCLES", "200"))


def _busy_grpc_threads(address, stop, n=2):
    """Threads that keep gRPC calls in flight in this process until `stop` is set."""
    from warpd.v1 import runtime_pb2, runtime_pb2_grpc

    def spin():
        channel = open_channel(address)
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        while not stop.is_set():
            try:
                stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=5)
            except grpc.RpcError:
                pass
        channel.close()

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def test_private_daemon_starts_and_stops_hundreds_of_times(tmp_path, warpd_daemon):
    from warpd.daemon import PrivateDaemon

    stop = threading.Event()
    threads = _busy_grpc_threads(warpd_daemon.address, stop)
    failures = []
    try:
        for i in range(CYCLES):
            d = PrivateDaemon(daemon_binary(), cache_dir=tmp_path / "cache")
            try:
                info = d.start(timeout=60)
                assert "cpu" in [dev.name for dev in info.devices]
            except Exception as e:  # noqa: BLE001 - collected and reported below
                failures.append(f"start {i}: {e}")
            d.stop()
            if d.proc is not None and d.proc.returncode != 0:
                failures.append(f"stop {i}: exit status {d.proc.returncode}")
            if len(failures) >= 3:
                break
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not failures, "\n".join(failures)


def _module_for(kernel):
    from warpd.v1 import ir_pb2

    fn, _ = kernel.build()
    m = ir_pb2.Module(name="startup_load")
    m.functions.append(fn)
    return m


def test_sigterm_under_load_exits_cleanly(tmp_path):
    """Clients upload, compile and launch while the daemon is told to stop."""
    import warpd as wp
    from warpd.v1 import runtime_pb2, runtime_pb2_grpc

    @wp.kernel
    def spin(a: wp.array(dtype=float), n: int):
        i = wp.tid()
        s = float(0.0)
        for k in range(n):
            s = s + wp.sin(float(k))
        a[i] = s

    module = _module_for(spin)
    d = Daemon(daemon_binary(), tmp_path)
    total_launches = 0
    for cycle in range(12):
        d.start()
        stop = threading.Event()
        errors = []
        launches = []

        def client(k):
            channel = open_channel(d.address)
            stub = runtime_pb2_grpc.RuntimeStub(channel)
            try:
                sess = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name=f"load{k}"),
                                        timeout=10).session
                while not stop.is_set():
                    loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(
                        session=sess, module=module, devices=["cpu"]), timeout=30)
                    arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
                        session=sess, device="cpu", shape=[4096],
                        dtype=module.functions[0].params[0].type.array.dtype), timeout=10)
                    stub.Submit(runtime_pb2.SubmitRequest(session=sess, device="cpu", commands=[
                        runtime_pb2.Command(launch=runtime_pb2.Launch(
                            module=loaded.module, kernel=module.functions[0].name, dim=[4096],
                            args=[runtime_pb2.LaunchArg(array=arr.handle),
                                  runtime_pb2.LaunchArg(bytes=(2000).to_bytes(4, "little"))]))],
                        synchronize=True), timeout=30)
                    launches.append(k)
            except grpc.RpcError as e:
                # Expected once the daemon stops; anything else is a bug.
                if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                                    grpc.StatusCode.ABORTED):
                    errors.append(f"client {k}: {e.code()}: {e.details()}")
            finally:
                channel.close()

        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.05 + 0.03 * cycle)
        t0 = time.monotonic()
        code = d.stop(timeout=20)
        took = time.monotonic() - t0
        stop.set()
        for t in threads:
            t.join(30)
        assert code == 0, f"cycle {cycle}: exit status {code}:\n{d.log_tail()}"
        assert took < 15, f"cycle {cycle}: shutdown took {took:.1f} s"
        assert not errors, "\n".join(errors)
        total_launches += len(launches)
    assert total_launches > 0, "the load never ran a kernel"


def test_self_test_failure_stops_the_daemon_with_a_clear_message(tmp_path):
    """A target the compiler rejects: the daemon exits non-zero before serving."""
    sock = tmp_path / "s.sock"
    env = dict(os.environ, WARPD_TEST_CPU_TARGET="not-a-cpu")
    proc = subprocess.run([daemon_binary(), "--listen", f"unix:{sock}", "--cache-dir",
                           str(tmp_path / "cache")], env=env, capture_output=True, text=True,
                          timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "cannot start" in out and "does not work on this host" in out, out
    assert "compiling for not-a-cpu" in out, out           # the chosen target
    assert "unknown target CPU 'not-a-cpu'" in out, out    # the compiler's error
    assert "(CPU '" in out and os.uname().machine in out, out  # the host CPU and triple
    assert not sock.exists(), "it listened before the self-test"


def test_start_up_log_names_the_cpu_target(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    try:
        log = d.log_tail()
    finally:
        assert d.stop() == 0
    assert "CPU kernels: compiling for" in log, log
    assert "LLVM 19" in log, log


def test_without_a_cuda_driver_the_daemon_says_so_and_serves_the_cpu(tmp_path):
    """No libcuda.so.1 (this machine's case; a machine with a driver skips): the
    log says why CUDA is off, ServerInfo lists only the CPU, and it serves."""
    import ctypes

    from warpd.v1 import ir_pb2, runtime_pb2

    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has a CUDA driver (libcuda.so.1 loads)")
    except OSError:
        pass
    with own_daemon(tmp_path, sessions=["no-driver"]) as (d, stub, (session,)):
        info = stub.GetServerInfo(runtime_pb2.GetServerInfoRequest())
        assert [dev.name for dev in info.devices] == ["cpu"]
        assert info.cuda_driver == ""
        log = d.log_tail(100000)
        assert "CUDA disabled: no NVIDIA driver: cannot load libcuda.so.1" in log, log
        assert "serving the CPU device" in log, log
        arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
            session=session, device="cpu", shape=[3], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32)))
        assert arr.handle != 0


def test_daemon_stops_when_the_client_that_started_it_is_killed(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(textwrap.dedent('''
        import time
        import warpd as wp
        from warpd import context
        wp.config.quiet = True
        wp.init()
        print("PID", context.runtime().private.pid, flush=True)
        time.sleep(120)
    '''))
    env = dict(os.environ, WARPD_BIN=daemon_binary(), WARPD_PRIVATE_DAEMON="1")
    env.pop("WARPD_ADDRESS", None)
    client = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env=env)
    try:
        line = client.stdout.readline()
        assert line.startswith("PID "), line
        pid = int(line.split()[1])
        assert pid_alive(pid)
        client.send_signal(signal.SIGKILL)  # no atexit: only the parent-death signal is left
        client.wait(10)
        deadline = time.monotonic() + 15
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(pid), f"the private daemon (pid {pid}) outlived its killed client"
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def test_parent_already_gone_means_no_start(tmp_path):
    # The daemon's parent is this process; any other --parent-pid reads as
    # "the process that started me has already exited".
    bystander = subprocess.Popen(["sleep", "30"])
    other = bystander.pid
    proc = subprocess.run([daemon_binary(), "--listen", f"unix:{tmp_path / 's.sock'}",
                           "--cache-dir", str(tmp_path / "cache"), "--parent-pid", str(other)],
                          capture_output=True, text=True, timeout=30)
    bystander.kill()
    bystander.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"parent process {other} is gone" in proc.stdout + proc.stderr
    assert not (tmp_path / "s.sock").exists()


def test_unix_socket_is_private_whatever_the_umask(tmp_path):
    sock = tmp_path / "s.sock"
    proc = subprocess.Popen(["sh", "-c", f"umask 000; exec {daemon_binary()} --listen unix:{sock} "
                             f"--cache-dir {tmp_path / 'cache'}"])
    try:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sock.exists()
        assert (sock.stat().st_mode & 0o777) == 0o600, oct(sock.stat().st_mode)
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


def _physical_memory():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def test_default_memory_limit_keeps_the_daemon_alive(tmp_path):
    """Arrays beyond half of the machine's memory are refused, not allocated (the
    daemon used to be OOM-killed by two 16 GiB requests on a 24 GiB machine)."""
    from warpd.v1 import ir_pb2, runtime_pb2

    # The per-array limit is lifted, so the default total limit is what refuses.
    with own_daemon(tmp_path, ["mem"], extra_args=["--max-array-bytes", "64T"]) as (d, stub, (session,)):
        rows = int(_physical_memory() * 0.6) >> 20
        for _ in range(2):
            try:
                stub.CreateArray(runtime_pb2.CreateArrayRequest(
                    session=session, device="cpu", shape=[rows, 1 << 20],
                    dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_UINT8)), timeout=60)
                raise AssertionError("an array of 60% of physical memory was allocated")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.details()
                assert "CPU memory limit" in e.details(), e.details()
        assert d.alive()
        assert "CPU array memory limit" in d.log_tail()


def test_memory_limit_counts_all_sessions_and_frees_return(tmp_path):
    from warpd.v1 import ir_pb2, runtime_pb2

    u8 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_UINT8)
    with own_daemon(tmp_path, ["a", "b"], extra_args=["--max-memory", "1M"]) as (d, stub, (a, b)):
        first = stub.CreateArray(runtime_pb2.CreateArrayRequest(session=a, device="cpu", shape=[600 << 10], dtype=u8))
        try:
            stub.CreateArray(runtime_pb2.CreateArrayRequest(session=b, device="cpu", shape=[600 << 10], dtype=u8))
            raise AssertionError("1.2 MiB of arrays under a 1 MiB limit")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.details()
            assert "1048576" in e.details(), e.details()
        stub.FreeArray(runtime_pb2.FreeArrayRequest(session=a, handle=first.handle))
        deadline = time.monotonic() + 5
        while True:  # the memory goes once nothing holds the array
            try:
                stub.CreateArray(runtime_pb2.CreateArrayRequest(session=b, device="cpu", shape=[600 << 10],
                                                                dtype=u8))
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, "freed memory was not returned to the limit"
                time.sleep(0.05)


def _open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_many_small_arrays_share_a_few_fds(tmp_path):
    """A session's small arrays share memory segments (issue 9): 2,000 tiny
    arrays used to cost 2,000 descriptors (one memfd each)."""
    from warpd.v1 import ir_pb2, runtime_pb2

    f32 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32)
    with own_daemon(tmp_path, ["small"]) as (d, stub, (session,)):
        before = _open_fds(d.proc.pid)
        handles = [stub.CreateArray(runtime_pb2.CreateArrayRequest(session=session, device="cpu", shape=[4],
                                                                   dtype=f32)).handle
                   for _ in range(2000)]
        grown = _open_fds(d.proc.pid) - before
        assert grown <= 8, f"2,000 small arrays took {grown} descriptors"
        for h in handles:
            stub.FreeArray(runtime_pb2.FreeArrayRequest(session=session, handle=h))
        deadline = time.monotonic() + 5
        while _open_fds(d.proc.pid) > before:  # the segments go with their last array
            assert time.monotonic() < deadline, "freeing every array did not close the segments"
            time.sleep(0.05)


def test_every_thread_but_the_main_one_blocks_the_daemons_signals(tmp_path):
    # The daemon takes SIGTERM/SIGINT/SIGHUP with sigwait in its main thread; a thread
    # that does not block them (OpenBLAS's workers, started when the library loads, before
    # main() sets the mask) would take a SIGTERM by the default action and kill the
    # process (exit status -15 instead of a clean stop).
    from warpd.daemon import PrivateDaemon

    d = PrivateDaemon(daemon_binary(), cache_dir=tmp_path / "cache")
    try:
        d.start(timeout=60)
        pid = d.proc.pid
        wanted = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGHUP - 1))
        unblocked = []
        for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
            if int(tid) == pid:
                continue  # in sigwait: the kernel shows the waited signals unblocked
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                blocked = int(next(line for line in f if line.startswith("SigBlk:")).split()[1], 16)
            if blocked & wanted != wanted:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    unblocked.append(f"{tid} {f.read().strip()}")
        assert not unblocked, unblocked
    finally:
        d.stop()
    assert d.proc.returncode == 0
