"""wp.init() with no daemon configured starts a private one and stops it at exit."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import daemon_binary, pid_alive

SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import warpd as wp
    from warpd import context

    wp.init()
    rt = context.runtime()
    print("PID", rt.private.pid if rt.private else -1, flush=True)
    print("ADDRESS", rt.address, flush=True)

    @wp.kernel
    def double_it(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * 2.0

    a = wp.array(np.arange(8, dtype=np.float32), dtype=float)
    wp.launch(double_it, dim=8, inputs=[a])
    print("RESULT", " ".join(str(v) for v in a.numpy()), flush=True)
''')


def _env(**extra):
    env = dict(os.environ)
    env.pop("WARPD_ADDRESS", None)
    env.update(extra)
    return env


def test_private_daemon_started_and_stopped(tmp_path):
    script = tmp_path / "autostart.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=_env(WARPD_BIN=daemon_binary(), WARPD_PRIVATE_DAEMON="1"),
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines()
               if line.split(" ", 1)[0] in ("PID", "ADDRESS", "RESULT"))
    pid = int(out["PID"])
    assert pid > 0
    assert out["ADDRESS"].startswith("unix:")
    got = np.array(out["RESULT"].split(), dtype=np.float32)
    np.testing.assert_array_equal(got, np.arange(8, dtype=np.float32) * 2)
    assert "warpd 0.1.0 initialized:" in proc.stdout and '"cpu"' in proc.stdout
    assert not pid_alive(pid), f"the private daemon (pid {pid}) outlived its client"
    sock_dir = os.path.dirname(out["ADDRESS"][len("unix:"):])
    assert not os.path.exists(sock_dir), "the private daemon's directory was not removed"


def test_quiet_suppresses_banner(tmp_path):
    script = tmp_path / "quiet.py"
    script.write_text("import warpd as wp\nwp.config.quiet = True\nwp.init()\nprint('DONE')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=_env(WARPD_BIN=daemon_binary(), WARPD_PRIVATE_DAEMON="1"),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "DONE"


@pytest.mark.parametrize("binary,needle", [
    ("/nonexistent/warpd", "could not start"),
    ("/bin/false", "exited with status 1"),
])
def test_daemon_start_failure_is_clear(tmp_path, binary, needle):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent('''
        import warpd as wp
        try:
            wp.init()
        except wp.DaemonStartError as e:
            print("ERROR", e)
        else:
            print("NO ERROR")
    '''))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=_env(WARPD_BIN=binary, WARPD_PRIVATE_DAEMON="1"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ERROR"), proc.stdout
    assert needle in proc.stdout and binary in proc.stdout


def test_unreachable_address_is_clear(tmp_path):
    script = tmp_path / "unreachable.py"
    script.write_text(textwrap.dedent('''
        import warpd as wp
        wp.config.connect_timeout = 1.0
        try:
            wp.init()
        except wp.UnavailableError as e:
            print("ERROR", e)
    '''))
    sock = tmp_path / "nobody.sock"
    env = _env(WARPD_ADDRESS=f"unix:{sock}")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ERROR could not reach the warpd daemon at unix:"), proc.stdout
