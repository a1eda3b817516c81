"""A client the daemon refuses: it was reached, so the error is an
AuthenticationError that says where a token comes from, not "could not reach"
(issue 28). Each test runs its own daemon on loopback TCP (or its Unix socket).
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import Daemon, daemon_binary, write_tenants_file


def _tcp_daemon(tmp_path, *args):
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--listen", "127.0.0.1:0", *args])
    d.start()
    port = int(re.search(r"listening on .*127\.0\.0\.1:(\d+)", d.log_tail(20000)).group(1))
    return d, f"127.0.0.1:{port}"


def _connect(address, **config):
    """Connects a Runtime of its own to `address` (the process's wp runtime is
    left alone) with wp.config's `config` set for the call; returns it."""
    import warpd
    from warpd import context

    saved = {k: getattr(warpd.config, k) for k in config}
    try:
        for k, v in config.items():
            setattr(warpd.config, k, v)
        rt = context.Runtime(address)
        rt.connect(timeout=10)
        return rt
    finally:
        for k, v in saved.items():
            setattr(warpd.config, k, v)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WARPD_")}
    env.update(extra)
    return env


SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import warpd as wp
    wp.config.quiet = True
    wp.config.token_file = sys.argv[1]

    @wp.kernel
    def triple(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * 3.0

    try:
        a = wp.array(np.arange(4, dtype=np.float32), dtype=float)
    except wp.AuthenticationError as e:
        print("AuthenticationError", type(e).__mro__[1:3], e)
        sys.exit(0)
    wp.launch(triple, dim=4, inputs=[a])
    print("VALUES", a.numpy().tolist())
''')


def test_tcp_client_without_a_token_is_told_what_to_do(tmp_path):
    d, address = _tcp_daemon(tmp_path)
    try:
        script = tmp_path / "client.py"
        script.write_text(SCRIPT)
        missing = tmp_path / "no-such-dir" / "warpd.token"
        proc = subprocess.run([sys.executable, str(script), str(missing)], capture_output=True, text=True,
                              env=_env(WARPD_ADDRESS=address), timeout=120)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        assert out.startswith("AuthenticationError (<class 'warpd.errors.WarpdError'>, <class 'RuntimeError'>)"), out
        assert "could not reach" not in out and "UnavailableError" not in out, out
        assert f"the warpd daemon at {address} was reached, but it refused this client" in out, out
        assert f"the token file {missing}: no such file" in out, out
        assert "Set WARPD_TOKEN (or wp.config.token)" in out, out
        assert "$XDG_RUNTIME_DIR/warpd.token" in out and "/tmp/warpd-<uid>.token" in out, out
        assert "--token-file" in out and "docs/operations.md" in out, out

        # Doing what it says (the daemon's token file, here its --token-file) works.
        token = (tmp_path / "warpd.token").read_text().strip()
        proc = subprocess.run([sys.executable, str(script), str(missing)], capture_output=True, text=True,
                              env=_env(WARPD_ADDRESS=address, WARPD_TOKEN=token), timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "VALUES [0.0, 3.0, 6.0, 9.0]", proc.stdout
    finally:
        assert d.stop() == 0, d.log_tail()


def test_wrong_token_and_unusable_token_file(tmp_path):
    import warpd

    d, address = _tcp_daemon(tmp_path)
    try:
        with pytest.raises(warpd.AuthenticationError) as e:
            _connect(address, token="0" * 64)
        msg = str(e.value)
        assert "unknown bearer token: the token from wp.config.token was revoked" in msg, msg
        assert "Set WARPD_TOKEN" in msg

        # The daemon's own token file, readable by others: not used, and the message says why.
        token_file = tmp_path / "warpd.token"
        os.chmod(token_file, 0o644)
        with pytest.raises(warpd.AuthenticationError) as e:
            _connect(address, token_file=str(token_file))
        assert f"the token file {token_file}: its mode 644 lets others read it (it must be 600)" in str(e.value)
        os.chmod(token_file, 0o600)
        rt = _connect(address, token_file=str(token_file))  # the same file, now trusted
        try:
            assert rt.token == token_file.read_text().strip() and rt.session
        finally:
            rt.close()
    finally:
        assert d.stop() == 0, d.log_tail()


def test_a_remote_address_reads_no_token_file():
    from warpd import auth

    saved = auth.config.token
    auth.config.token = None
    try:
        old = os.environ.pop("WARPD_TOKEN", None)
        try:
            token, source = auth.find_token("gpu-node.example:7788")
        finally:
            if old is not None:
                os.environ["WARPD_TOKEN"] = old
    finally:
        auth.config.token = saved
    assert token is None and "not on this machine" in source


def test_login_socket_refusal_is_an_authentication_error(tmp_path):
    import warpd

    path, _ = write_tenants_file(tmp_path, {"other": None})  # this uid is no tenant's
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--tenants", str(path)])
    d.start()
    try:
        with pytest.raises(warpd.AuthenticationError) as e:
            _connect(d.address)
        msg = str(e.value)
        assert "refused this user" in msg and "map your uid to a tenant" in msg and "WARPD_TOKEN" in msg, msg
    finally:
        assert d.stop() == 0, d.log_tail()
