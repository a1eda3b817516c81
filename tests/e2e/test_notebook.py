"""warpd in a real Jupyter kernel (issue 28): a notebook built with nbformat
and run by nbclient in an ipykernel process against the session's daemon.

It checks what a notebook user sees: kernel print output in the launching
cell, a progress display for a compile past 1 s (and none for a fast load),
an array's rich repr, and errors whose traceback shows the kernel's source
line.
"""

import os
import random
import re

import numpy as np

import nbformat  # installed by scripts/setup.sh (the client's test extra)
from nbclient import NotebookClient

SLOW_STEPS = 40  # chained statements: a compile of several seconds (test_compile_concurrency.chain_module)
ANSI = re.compile(r"\x1b\[[0-9;]*m")

SETUP = """\
import time
import numpy as np
import warpd as wp
wp.config.quiet = True
wp.init()
"""

PRINTS = """\
@wp.kernel
def hello(a: wp.array(dtype=float)):
    i = wp.tid()
    wp.printf("kernel %d says %g\\n", i, a[i])

a = wp.array([1.5, 2.5], dtype=float)
wp.launch(hello, dim=2, inputs=[a])
"""

FIRST_LOAD = """\
@wp.kernel
def add_one(b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = b[i] + 1.0

b = wp.zeros(4, dtype=float)
wp.launch(add_one, dim=4, inputs=[b])
wp.synchronize()
"""

# The same module loaded again: the client forgets its load (as after a
# released kernel cache), so LoadModule is sent and the daemon answers from its
# cache at once.
FAST_LOAD = """\
import warpd.module
rt = wp.context.runtime()
with rt.lock:
    rt.loaded_modules.clear()
warpd.module.loads_released()
print("loaded before:", len(rt.loaded_modules))
t0 = time.monotonic()
wp.launch(add_one, dim=4, inputs=[b])
wp.synchronize()
fast_s = time.monotonic() - t0
print("loaded after:", len(rt.loaded_modules))
print(f"fast load {fast_s:.3f} s")
print(b.numpy().tolist())
"""


def slow_cell(nonce):
    body = "    x = wp.sin(x) * s + 0.5\n" * SLOW_STEPS
    return (
        "@wp.kernel(module='unique')  # compiled once: later cells' kernels do not rebuild it\n"
        "def slow(c: wp.array(dtype=float), s: float):\n"
        "    i = wp.tid()\n"
        "    x = float(i)\n"
        f"{body}"
        f"    c[i] = x + {nonce!r}\n"
        "\n"
        "c = wp.zeros(4, dtype=float)\n"
        "t0 = time.monotonic()\n"
        "wp.launch(slow, dim=4, inputs=[c, 0.5])\n"
        "slow_s = time.monotonic() - t0\n"
        "print(f'slow load {slow_s:.3f} s')\n"
        "print(c.numpy().tolist())\n"
    )


REPR = """\
big = wp.array(np.arange(100000, dtype=np.float32) / 4, dtype=float)
big
"""

COMPILE_ERROR = """\
@wp.kernel
def broken(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = undefined_thing + 1.0

wp.launch(broken, dim=1, inputs=[wp.zeros(1, dtype=float)])
"""

FAULT = """\
@wp.kernel
def past_the_end(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i + 5] = 1.0

wp.launch(past_the_end, dim=1, inputs=[wp.zeros(2, dtype=float)])
wp.synchronize()
"""

AFTER = """\
print("still works:", (a.numpy() * 2).tolist())
import os
# The control: fd 1 does not reach the cell (ipykernel would forward it
# within ~0.1 s if it captured fd 1).
os.write(1, b"written to fd 1\\n")
time.sleep(0.5)
"""


def _text(outputs, name="stdout"):
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == name)


def _displays(outputs):
    return [o for o in outputs if o.get("output_type") in ("display_data", "update_display_data")]


def _progress_shown(outputs):
    return [o for o in _displays(outputs) if "warpd: compil" in o["data"].get("text/plain", "")] + \
        [o for o in outputs if o.get("output_type") == "stream" and "warpd: compiling" in o.get("text", "")]


def _error(outputs):
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert len(errors) == 1, outputs
    e = errors[0]
    return e["ename"], e["evalue"], ANSI.sub("", "\n".join(e["traceback"]))


def _chain(n, s, nonce):
    x = np.arange(n, dtype=np.float32)
    s = np.float32(s)
    for _ in range(SLOW_STEPS):
        x = np.sin(x) * s + np.float32(0.5)
    return x + np.float32(nonce)


def test_notebook_end_to_end(wp, tmp_path):
    nonce = round(random.uniform(0.001, 0.999), 6)  # a module the daemon has never compiled
    sources = [SETUP, PRINTS, FIRST_LOAD, FAST_LOAD, slow_cell(nonce), REPR, COMPILE_ERROR, FAULT, AFTER]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    # Without ipykernel's capture of fd 1 and 2, only what goes through the
    # Python-level sys.stdout (which ipykernel replaces) reaches a cell.
    client = NotebookClient(nb, timeout=600, startup_timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}},
                            extra_arguments=["--IPKernelApp.capture_fd_output=False"])
    # The session's environment (WARPD_ADDRESS: its daemon), less pytest's marker
    # (under which ipykernel would never capture fds), as a user's kernel has it.
    client.execute(env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"})
    nbformat.write(nb, str(tmp_path / "executed.ipynb"))  # for a look when this fails
    setup, prints, first, fast, slow, rep, compile_error, fault, after = (c.outputs for c in nb.cells)

    for outputs in (setup, prints, first, fast, slow, rep, after):
        assert not [o for o in outputs if o.get("output_type") == "error"], outputs

    # Kernel output appears under the cell that launched the kernel (the cell's end syncs).
    lines = sorted(_text(prints).splitlines())
    assert lines == ["kernel 0 says 1.5", "kernel 1 says 2.5"], prints

    # A load answered at once shows nothing.
    out = _text(fast)
    assert "loaded before: 0" in out and "loaded after: 1" in out, out  # LoadModule was called
    fast_s = float(re.search(r"fast load ([\d.]+) s", out).group(1))
    assert fast_s < 1.0, f"a cached module took {fast_s} s to load"
    assert "[2.0, 2.0, 2.0, 2.0]" in out
    assert not _progress_shown(fast) and not _progress_shown(first + setup + prints), (fast, first)

    # A compile past 1 s shows a progress display, updated to its end state.
    out = _text(slow)
    slow_s = float(re.search(r"slow load ([\d.]+) s", out).group(1))
    assert slow_s > 1.0, f"the slow kernel compiled in {slow_s} s: make SLOW_STEPS larger"
    got = np.array(eval(out.splitlines()[-1]), dtype=np.float32)  # noqa: S307 - our own list output
    np.testing.assert_allclose(got, _chain(4, 0.5, nonce), rtol=1e-5, atol=1e-5)
    shown = _displays(slow)
    assert len(shown) == 1, slow
    final = shown[0]["data"]
    m = re.fullmatch(r"warpd: compiled module '__main__\.slow_\w+' on cpu in ([\d.]+) s", final["text/plain"])
    assert m, final
    assert abs(float(m.group(1)) - slow_s) < 0.5, (final, slow_s)
    assert "<progress" not in final["text/html"] and "warpd: compiled module" in final["text/html"]
    assert not _text(slow, "stderr"), slow  # not printed as well

    # The array's rich repr: repr as NumPy prints the values; HTML with shape, dtype, device.
    values = np.arange(100000, dtype=np.float32) / 4
    result = [o for o in rep if o.get("output_type") == "execute_result"]
    assert len(result) == 1, rep
    data = result[0]["data"]
    want = "array(" + np.array2string(values, separator=", ", prefix="array(") + \
        ', shape=(100000,), dtype=float32, device="cpu")'
    assert data["text/plain"] == want
    assert ("<b>warpd array</b> shape <code>(100000,)</code>, dtype <code>float32</code>, device <code>cpu</code>"
            in data["text/html"])
    assert np.array2string(values) in data["text/html"]

    # Errors show the kernel's source line, as Warp's do.
    ename, evalue, tb = _error(compile_error)
    assert ename == "CompileKeyError" and evalue.endswith("error: Referencing undefined symbol: undefined_thing")
    assert "in kernel 'broken'" in tb, tb
    assert re.search(r" 4 \|     a\[i\] = undefined_thing \+ 1\.0\n   \|            \^", tb), tb
    ename, evalue, tb = _error(fault)
    assert ename == "KernelError" and "index 5 out of bounds for dimension 0" in evalue, evalue
    assert re.search(r" 4 \|     a\[i \+ 5\] = 1\.0", tb), tb

    # The session goes on after both errors.
    assert _text(after) == "still works: [3.0, 5.0]\n", after
    assert "written to fd 1" not in str(nb.cells[-1].outputs)


PLAIN_SCRIPT = """\
import sys, time
import numpy as np
import warpd as wp
wp.config.quiet = True
wp.config.compile_progress_delay = float(sys.argv[1]) if sys.argv[1] != "off" else None
wp.init()
print("initialized", file=sys.stderr, flush=True)

{slow}
print(c.numpy().tolist())
"""


def test_compile_progress_outside_a_notebook(wp, tmp_path):
    """Outside Jupyter a slow load shows one line on stderr (not a terminal: no
    updates in place); None turns it off. (The notebook test checks that a fast
    load shows nothing.)"""
    import subprocess
    import sys

    nonce = round(random.uniform(0.001, 0.999), 6)
    slow = slow_cell(nonce).replace("@wp.kernel(module='unique')", "@wp.kernel(module='slowmod')")
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT.replace("{slow}", slow))
    proc = subprocess.run([sys.executable, str(script), "1.0"], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    slow_s = float(re.search(r"slow load ([\d.]+) s", proc.stdout).group(1))
    assert slow_s > 1.0, f"the slow kernel compiled in {slow_s} s: make SLOW_STEPS larger"
    np.testing.assert_allclose(eval(proc.stdout.splitlines()[-1]), _chain(4, 0.5, nonce), rtol=1e-5,  # noqa: S307
                               atol=1e-5)
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and lines[0] == "initialized", lines
    m = re.fullmatch(r"warpd: compiling module 'slowmod' on cpu\.\.\. done in ([\d.]+) s", lines[1])
    assert m and abs(float(m.group(1)) - slow_s) < 0.5, (lines, slow_s)

    # Turned off: nothing (a new nonce: compiled again, as slowly).
    script.write_text(PLAIN_SCRIPT.replace("{slow}", slow.replace(repr(nonce), repr(nonce + 1.0))))
    proc = subprocess.run([sys.executable, str(script), "off"], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert float(re.search(r"slow load ([\d.]+) s", proc.stdout).group(1)) > 1.0
    assert proc.stderr.splitlines() == ["initialized"], proc.stderr
