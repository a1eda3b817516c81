"""What a client sends or does costs the daemon's log a bounded amount (issue 23, item 3).

Client text in a log line is escaped and cut to a few hundred bytes, and the
lines a tenant can cause at will (a session opened or closed, a failed call)
are limited to 10 per kind per tenant in 10 s; the rest are reported as one
"suppressed N similar lines" line.
"""

import re

from warpd.v1 import runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary, open_channel

SESSIONS = 200


def test_client_names_and_session_floods_keep_the_log_small(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    start = d.log_path.stat().st_size
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    # A 4 MiB name of 2-byte characters: escaped in full it would be 16 MiB.
    huge = "\u00e9" * (2 << 20)
    s = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name=huge), timeout=60).session
    stub.CloseSession(runtime_pb2.CloseSessionRequest(session=s), timeout=60)
    for i in range(SESSIONS):
        s = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name=f"flood {i}"), timeout=60).session
        stub.CloseSession(runtime_pb2.CloseSessionRequest(session=s), timeout=60)
    # The daemon still serves.
    assert stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=10).version
    channel.close()
    assert d.stop() == 0, d.log_tail()

    raw = d.log_path.read_bytes()[start:]
    assert len(raw) < 64 << 10, f"{len(raw)} bytes of log for {SESSIONS + 1} sessions"
    log = raw.decode("utf-8")  # escaped: valid text whatever the client sent
    lines = log.splitlines()
    # The huge name: its first bytes, escaped, and how much was left out.
    big = [line for line in lines if "session opened for '\\xc3\\xa9" in line]
    assert len(big) == 1, log[:4000]
    assert len(big[0]) < 600, big[0][:1000]
    assert re.search(r"session opened for '(\\xc3\\xa9)+\.\.\.\(\+\d+ bytes\)'", big[0]), big[0][:1000]
    shown = int(re.search(r"\.\.\.\(\+(\d+) bytes\)", big[0]).group(1))
    assert len(huge.encode()) - shown == 50, shown  # 200 escaped bytes: 50 input bytes kept

    # Every event is either logged or counted in a summary, and at most 10 of
    # a kind are logged per 10 s (the loop takes a few seconds at most, so
    # nearly all of it falls in the first window).
    for kind, pattern in (("session opened", "session opened for '"), ("session closed", "] session closed (")):
        logged = sum(pattern in line for line in lines)
        summaries = [int(m.group(1)) for m in
                     re.finditer(rf"tenant '[^']*': suppressed (\d+) similar lines \({kind}\) in 10s", log)]
        assert summaries, f"no summary for {kind}:\n{log[-3000:]}"
        assert logged + sum(summaries) == SESSIONS + 1, (kind, logged, summaries)
        assert logged <= 10 * len(summaries) + 10, (kind, logged, summaries)
