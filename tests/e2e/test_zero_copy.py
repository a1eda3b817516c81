"""Zero-copy CPU arrays for a client on the daemon's host (issue 10, item 4):
the share socket hands the session's own array memory to its client
(server/local/share_socket.h, clients/python/warpd/local_map.py).

numpy() after a sync is a view that aliases the array (as Warp's CPU arrays
do) and keeps it alive; uploads are one copy into the mapping; the memory
file cannot be resized by the client; a freed array's memory file comes back
only to its own session, and its pages are released when it expires; only the owning session's authenticated client gets a
descriptor; bad requests get errors and the daemon keeps serving; a client
without the share socket (TCP) falls back to transfers."""

import gc
import mmap
import os
import socket
import time

import numpy as np
import pytest

import warpd as wpd
from warpd import local_map
from warpd.v1 import ir_pb2, runtime_pb2


@wpd.kernel
def add_one(a: wpd.array(dtype=float)):
    i = wpd.tid()
    a[i] = a[i] + 1.0


N = 1 << 16  # 256 KiB of float32: mapped


def rt():
    from warpd import context

    return context.runtime()


def ask(line: bytes, timeout=5.0):
    """One raw share request: (reply line, fd or -1)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(rt().share_path)
        if line:
            s.sendall(line)
        data, fds, _, _ = socket.recv_fds(s, 1024, 1)
        return data.decode(), (fds[0] if fds else -1)


def test_numpy_is_a_view_that_follows_the_array(wp):
    x = np.arange(N, dtype=np.float32)
    a = wp.array(x, dtype=float)
    assert a._mapping, "a local client maps arrays of 64 KiB and more"
    v = a.numpy()
    np.testing.assert_array_equal(v, x)
    wp.launch(add_one, dim=N, inputs=[a])
    w = a.numpy()  # waits for the launch
    assert np.shares_memory(v, w)
    np.testing.assert_array_equal(v, x + 1)  # the earlier view sees it too
    v[7] = 100.0  # writes reach the array, as with Warp's CPU arrays
    wp.launch(add_one, dim=N, inputs=[a])
    assert a.numpy()[7] == 101.0


def test_a_view_keeps_its_array_alive(wp):
    x = np.arange(N, dtype=np.float32) * 2
    a = wp.array(x, dtype=float)
    v = a.numpy()
    del a
    gc.collect()
    others = [wp.array(np.full(N, 9.0, dtype=np.float32), dtype=float) for _ in range(4)]
    wp.synchronize()
    np.testing.assert_array_equal(v, x)
    assert all(o.numpy()[0] == 9.0 for o in others)


def test_upload_into_an_array_with_queued_work(wp):
    a = wp.zeros(N, dtype=float)
    wp.launch(add_one, dim=N, inputs=[a])
    a.assign(np.arange(N, dtype=np.float32))  # after the queued launch, not before
    np.testing.assert_array_equal(a.numpy(), np.arange(N, dtype=np.float32))


def test_the_memory_file_cannot_be_resized(wp):
    a = wp.zeros(N, dtype=float)
    r = rt()
    reply, fd = ask(f"{r.token} {r.session} {a.handle}\n".encode())
    try:
        assert reply.startswith("ok ") and fd >= 0, reply
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 1 << 40)
    finally:
        if fd >= 0:
            os.close(fd)
    wp.launch(add_one, dim=N, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), np.ones(N, dtype=np.float32))


def test_a_freed_arrays_memory_comes_back_only_to_its_own_session(wp, raw):
    """A freed large array's memory file is kept a while for this session's
    next array of its size (segment_pool.h): another session never gets it,
    a new wp.empty here is the same pages (and the same client mapping),
    wp.zeros gets them zeroed, and once the cache lifetime passes the pages
    are released."""
    stub, _ = raw
    n = 1 << 20  # 4 MiB: a memory file of its own
    r = rt()
    a = wp.array(np.full(n, 7.0, dtype=np.float32), dtype=float)
    mapped = a._mapping.mm
    reply, fd = ask(f"{r.token} {r.session} {a.handle}\n".encode())
    assert reply.startswith("ok ") and fd >= 0, reply
    try:
        offset, size, segment = map(int, reply.split()[1:4])
        del a
        gc.collect()
        wp.synchronize()  # the free runs in stream order

        other = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
        try:
            theirs = stub.CreateArray(runtime_pb2.CreateArrayRequest(
                session=other, device="cpu", shape=[n], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32),
                init=runtime_pb2.ARRAY_INIT_EMPTY)).handle
            their_reply, their_fd = ask(f"{r.token} {other} {theirs}\n".encode())
            assert their_reply.startswith("ok ") and their_fd >= 0, their_reply
            try:
                assert os.fstat(their_fd).st_ino != os.fstat(fd).st_ino
                m = mmap.mmap(their_fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
                assert not np.frombuffer(m, dtype=np.uint8).any(), "another session's new array is zeros"
                m.close()
            finally:
                os.close(their_fd)
        finally:
            stub.CloseSession(runtime_pb2.CloseSessionRequest(session=other))

        b = wp.empty(n, dtype=float)  # uninitialized, as in Warp: here, the old pages as they were
        b_reply, b_fd = ask(f"{r.token} {r.session} {b.handle}\n".encode())
        os.close(b_fd)
        assert b_reply.split()[1:4] == [str(offset), str(size), str(segment)], b_reply
        np.testing.assert_array_equal(b.numpy(), np.full(n, 7.0, dtype=np.float32))
        assert b._mapping.mm is mapped, "the client took back its mapping of the file"
        del b
        gc.collect()
        wp.synchronize()  # the free reaches the daemon before the next array
        c = wp.zeros(n, dtype=float)  # the same file again, zeroed
        assert not c.numpy().any()
        assert c._mapping.mm is mapped
        c.fill_(7.0)
        del c
        gc.collect()
        wp.synchronize()
        time.sleep(2.5)  # past the cache lifetime; any large allocation expires it
        d = wp.zeros(n + 1024, dtype=float)
        wp.synchronize()
        after = mmap.mmap(fd, offset + size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        assert not np.frombuffer(after, dtype=np.uint8).any(), "the expired pages were released"
        after.close()
        del d
    finally:
        os.close(fd)


def test_a_persisted_arrays_memory_never_comes_back_as_it_is(wp):
    """Once an array is persistent other sessions may write it, so when it is
    freed its memory file is released, not kept for this session's next
    array (which could show their data)."""
    n = 1 << 20
    r = rt()
    a = wp.array(np.full(n, 3.0, dtype=np.float32), dtype=float)
    reply, fd = ask(f"{r.token} {r.session} {a.handle}\n".encode())
    os.close(fd)
    segment = reply.split()[3]
    wp.persistent.save("zero-copy-persisted", a)
    wp.persistent.delete("zero-copy-persisted")
    del a
    gc.collect()
    wp.synchronize()
    b = wp.empty(n, dtype=float)
    b_reply, b_fd = ask(f"{r.token} {r.session} {b.handle}\n".encode())
    os.close(b_fd)
    assert b_reply.split()[3] != segment, b_reply
    assert not b.numpy().any()


def test_only_the_owning_session_gets_a_descriptor(wp, serving):
    a = wp.zeros(N, dtype=float)
    r = rt()
    cases = {
        f"{r.token} {r.session} 999999\n": "NOT_FOUND",
        f"{r.token} not-a-session {a.handle}\n": "UNAUTHENTICATED",
        f"wrong-token {r.session} {a.handle}\n": "UNAUTHENTICATED",
        f"{r.token} {r.session} -1\n": "INVALID_ARGUMENT",
        f"{r.token} {r.session}\n": "INVALID_ARGUMENT",
        "\n": "INVALID_ARGUMENT",
        "x" * 600: "INVALID_ARGUMENT",
        "\x00\xff garbage \x01\n": "INVALID_ARGUMENT",
    }
    for line, code in cases.items():
        reply, fd = ask(line.encode("latin-1"))
        assert fd == -1 and reply.startswith(f"error {code}"), (line[:40], reply)
    # Silent peers are dropped at the deadline; the socket keeps answering others meanwhile.
    silent = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(3)]
    for s in silent:
        s.connect(rt().share_path)
    reply, fd = ask(f"{r.token} {r.session} {a.handle}\n".encode())
    assert reply.startswith("ok ") and fd >= 0, reply
    os.close(fd)
    t = time.monotonic()
    assert silent[0].recv(1024).startswith(b"error DEADLINE_EXCEEDED")
    assert time.monotonic() - t < 5
    for s in silent:
        s.close()
    assert serving()


def test_without_the_share_socket_arrays_are_copied(wp, monkeypatch):
    assert local_map.share_path("127.0.0.1:7788") is None
    assert local_map.share_path("dns:localhost:7788") is None
    monkeypatch.setattr(rt(), "share_path", None)  # what a TCP client has
    x = np.arange(N, dtype=np.float32)
    a = wp.array(x, dtype=float)
    wp.launch(add_one, dim=N, inputs=[a])
    v = a.numpy()
    np.testing.assert_array_equal(v, x + 1)
    wp.launch(add_one, dim=N, inputs=[a])
    np.testing.assert_array_equal(v, x + 1)  # a copy: unchanged
    np.testing.assert_array_equal(a.numpy(), x + 2)


def test_one_user_cannot_hold_every_share_slot(wp):
    # At most 8 silent connections per uid wait; the next one is refused at once.
    silent = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(8)]
    try:
        for s in silent:
            s.connect(rt().share_path)
        reply, fd = ask(b"", timeout=1.5)
        assert fd == -1 and reply.startswith("error RESOURCE_EXHAUSTED"), reply
    finally:
        for s in silent:
            s.close()
    time.sleep(0.2)
    r = rt()
    a = wp.zeros(N, dtype=float)
    reply, fd = ask(f"{r.token} {r.session} {a.handle}\n".encode())
    assert reply.startswith("ok ") and fd >= 0, reply
    os.close(fd)
