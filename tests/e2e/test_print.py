"""print() and wp.printf() in kernels: the text reaches this client's stdout
(sys.stdout, so a notebook cell shows it), formatted as Warp formats it, in
launch order, bounded per launch, and never in another session."""

import os
import re
import subprocess
import sys
import textwrap

import grpc

from conftest import open_channel
import numpy as np
import pytest

import warpd as wp
from warpd import context
from warpd.v1 import runtime_pb2, runtime_pb2_grpc

from ir_helpers import line_of

FILE = os.path.abspath(__file__)

NOTE_RE = re.compile(r"\[warpd: kernel '(\w+)' printed too much in one launch: (\d+) print calls dropped "
                     r"\(limit: 65536 bytes of text, 262144 bytes of records\)\]\n$")


@wp.struct
class Particle:
    mass: float


@wp.func
def show_in_func(x: float):
    print(x)
    return x * 2.0


@wp.kernel
def prints_values(a: wp.array(dtype=float), p: Particle):
    i = wp.tid()
    print(1.5)
    print(a[i])
    print(i)
    print(wp.int64(-7))
    print(wp.uint8(200))
    print(wp.uint64(18446744073709551615))
    print(wp.float64(2.0) / wp.float64(3.0))
    print(1.0e20)
    print(-0.0)
    print(True)
    print(wp.float16(1.5))
    print(wp.vec3(1.0, 2.0, 3.0))
    print(wp.vec2i(1, 2))
    print(wp.vec3d(1.0, 2.5, 3.0))
    print(wp.mat22(1.0, 2.0, 3.0, 4.0))
    print(wp.mat33d())
    print(wp.quat(0.0, 0.0, 0.0, 1.0))
    print(wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0)))
    print("hello, world")
    print(p)
    print(a)
    print("x =", 0.25, wp.vec2(1.0, 2.0))
    y = show_in_func(2.5)
    print(y)
    print()


# What Warp 1.19 prints for the same calls on the CPU (print with several
# values is warpd's own: Warp takes one value). Warp prints no struct or array.
EXPECT_VALUES = """\
1.5
0.25
0
-7
200
18446744073709551615
0.666667
1e+20
-0
True
1.5
1 2 3 
1 2 
1 2.5 3 
1 2 
3 4 
0 0 0 
0 0 0 
0 0 0 
0 0 0 1
(1 2 3) (0 0 0 1)
hello, world
<type without print implementation>
<type without print implementation>
x = 0.25 1 2 
2.5
5

"""


def test_print_scalars_vectors_matrices_strings(wp, capsys):
    a = wp.array([0.25], dtype=float)
    wp.launch(prints_values, dim=1, inputs=[a, Particle()])
    wp.synchronize()
    assert capsys.readouterr().out == EXPECT_VALUES


@wp.kernel
def printf_formats(n: int, x: float, d: wp.float64):
    i = wp.tid()
    wp.printf("i=%d f=%f s=%s g=%g e=%e x=%x %%\n", i, 1.5, "str", 1.0 / 3.0, 12345.678, 255)
    wp.printf("no newline, ")
    wp.printf("%5d|%-5d|%05.2f|%.3e|\n", n, n, x, d)
    wp.printf("%lld %u %c %hhd %X %o %+d % d %#x\n", wp.int64(3000000000), wp.uint32(7), 65, 300, 255, 8, 5,
              5, 255)
    wp.printf("%u %x\n", -3, wp.int8(-3))
    wp.printf("[%5s][%-5s][%.2s]\n", "ab", "ab", "abcdef")
    wp.printf("%d %d %f\n", True, wp.int16(-3), wp.float16(1.5))
    wp.expect_near(x, 3.0, 0.1)
    wp.expect_near(wp.vec3(1.0), wp.vec3(2.0), 0.5)
    wp.expect_near(x, 3.1, 0.1)
    wp.expect_near(wp.float16(1.0), wp.float16(1.25), wp.float16(0.1))
    wp.expect_near(wp.vec3d(1.0, 2.0, 3.0), wp.vec3d(1.0, 2.5, 3.0), wp.float64(0.25))
    wp.expect_near(wp.float64(1.0), wp.float64(1.0), wp.float64(0.25))


EXPECT_PRINTF = """\
i=0 f=1.500000 s=str g=0.333333 e=1.234568e+04 x=ff %
no newline,    42|42   |03.14|1.230e-04|
3000000000 7 A 44 FF 10 +5  5 0xff
4294967293 fffffffd
[   ab][ab   ][ab]
1 -3 1.500000
Error, expect_near() failed with tolerance 0.1
    Expected: 3
    Actual: 3.14159
    Absolute difference: 0.14159
Error, expect_near() failed with tolerance 0.5
    Expected: 2 2 2 
    Actual: 1 1 1 
    Max absolute difference: 1
Error, expect_near() failed with tolerance 0.0999756
    Expected: 1.25
    Actual: 1
    Absolute difference: 0.25
Error, expect_near() failed with tolerance 0.25
    Expected: 1 2.5 3 
    Actual: 1 2 3 
    Max absolute difference: 0.5
"""


def test_printf_formats(wp, capsys):
    wp.launch(printf_formats, dim=1, inputs=[42, 3.14159, 0.000123])
    wp.synchronize()
    assert capsys.readouterr().out == EXPECT_PRINTF


@wp.kernel
def prints_tagged(tag: int, out: wp.array(dtype=int)):
    i = wp.tid()
    wp.printf("launch %d thread %d\n", tag, i)
    out[i] = tag


def test_output_in_launch_order(wp, capsys):
    # Two launches of 1000 threads each (run in parallel chunks on the
    # server), queued in one batch: all of the first launch's lines, in thread
    # order, then all of the second's.
    out = wp.zeros(1000, dtype=int)
    wp.launch(prints_tagged, dim=1000, inputs=[1, out])
    wp.launch(prints_tagged, dim=1000, inputs=[2, out])
    print("python: before the sync point")
    assert out.numpy()[0] == 2  # Download is the sync point here
    print("python: after")
    expect = "python: before the sync point\n"
    expect += "".join(f"launch 1 thread {i}\n" for i in range(1000))
    expect += "".join(f"launch 2 thread {i}\n" for i in range(1000))
    expect += "python: after\n"
    assert capsys.readouterr().out == expect


@wp.kernel
def prints_a_lot(n: int):
    for k in range(n):
        wp.printf("line %05d\n", k)


def test_output_is_capped_per_launch_with_a_note(wp, capsys):
    wp.launch(prints_a_lot, dim=1, inputs=[20000])
    wp.launch(prints_a_lot, dim=1, inputs=[3])
    wp.synchronize()
    text = capsys.readouterr().out
    # 11 bytes per line: 5957 lines fit in 64 KiB; the rest of the 20000
    # are dropped and counted; the next launch prints in full.
    kept = 65536 // 11
    first = "".join(f"line {k:05d}\n" for k in range(kept))
    assert text.startswith(first)
    rest = text[len(first):]
    note, _, tail = rest.partition("]\n")
    m = NOTE_RE.match(note + "]\n")
    assert m, rest[:300]
    assert m.group(1) == "prints_a_lot"
    assert int(m.group(2)) == 20000 - kept
    assert tail == "line 00000\nline 00001\nline 00002\n"


def test_output_before_a_fault_is_printed_before_the_error(wp, capsys):
    @wp.kernel(module="unique")
    def prints_then_faults(a: wp.array(dtype=float)):
        i = wp.tid()
        wp.printf("about to read a[%d]\n", i + 10)
        a[i + 10] = 1.0

    a = wp.zeros(1, dtype=float)
    wp.launch(prints_then_faults, dim=1, inputs=[a])
    with pytest.raises(wp.KernelError, match="prints_then_faults"):
        wp.synchronize()
    assert capsys.readouterr().out == "about to read a[10]\n"
    # The same through a download (its error path reads the output too).
    wp.launch(prints_then_faults, dim=1, inputs=[a])
    with pytest.raises(wp.KernelError):
        a.numpy()
    assert capsys.readouterr().out == "about to read a[10]\n"


@pytest.mark.parametrize("call, message", [
    ('wp.printf("%d\\n", 1.5)', "the 1st conversion '%d' expects an integer, got float32"),
    ('wp.printf("%f %f\\n", 1.5)', "the format has more conversions than the 1 value given"),
    ('wp.printf("%d\\n", 1, 2)', "the format has 1 conversion but 2 values were given"),
    ('wp.printf("%n\\n", 1)', "'%n' is not supported"),
    ('wp.printf("%s\\n", 3)', "the 1st conversion '%s' expects a string constant, got int32"),
    ('wp.printf("%*d\\n", 3, 4)', "'*' widths and precisions are not supported"),
    ('wp.printf("%p\\n", 3)', "unsupported conversion '%p'"),
    ('wp.printf("%99999d\\n", 3)', "the width in '%99999' is larger than 1024"),
    ('wp.printf("100%")', "the format ends inside the conversion '%'"),
    ('wp.printf("' + "%d " * 33 + '", ' + ", ".join(["1"] * 33) + ')',
     "the maximum number of variadic arguments that can be passed to `printf` is 32"),  # Warp's limit
])
def test_bad_printf_format_is_rejected_naming_the_line(wp, tmp_path, call, message):
    # A kernel in its own file, so the message's file:line can be checked.
    path = tmp_path / "bad_printf.py"
    path.write_text(textwrap.dedent(f"""\
        import warpd as wp

        @wp.kernel
        def bad_printf(n: int):
            i = wp.tid()
            {call}
        """))
    namespace = {"__name__": "bad_printf_" + str(abs(hash(call)))}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
    with pytest.raises(wp.CompileError) as info:
        wp.launch(namespace["bad_printf"], dim=1, inputs=[1])
    msg = str(info.value)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert f"{path}:6:" in msg, msg
    assert "printf(): " + message in msg, msg


def test_second_session_sees_none_of_this_sessions_output(wp, capsys):
    rt = context.runtime()
    channel = open_channel(rt.address)
    try:
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        other = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
        out = wp.zeros(3, dtype=int)
        wp.launch(prints_tagged, dim=3, inputs=[78, out])
        rt.stream(rt.default_device).flush()
        # An upload waits on the server until the launch has run, and leaves
        # its output waiting there for this session.
        wp.array(np.arange(3), dtype=int)
        for _ in range(2):
            assert stub.Synchronize(runtime_pb2.SynchronizeRequest(session=other)).output == b""
            assert stub.Synchronize(runtime_pb2.SynchronizeRequest(session=other, device="cpu")).output == b""
            assert stub.ReadOutput(runtime_pb2.ReadOutputRequest(session=other)).output == b""
            assert stub.ReadOutput(runtime_pb2.ReadOutputRequest(session=other, device="cpu")).output == b""
            assert stub.Submit(runtime_pb2.SubmitRequest(session=other, device="cpu",
                                                         synchronize=True)).output == b""
        stub.CloseSession(runtime_pb2.CloseSessionRequest(session=other))
    finally:
        channel.close()
    # This session's own output arrives once, with whichever answer carried
    # it first (the flush, the upload or the synchronize: timing decides).
    before = capsys.readouterr().out
    wp.synchronize()
    assert before + capsys.readouterr().out == "".join(f"launch 78 thread {i}\n" for i in range(3))


CLIENT_SCRIPT = """\
import sys
sys.path.insert(0, {tests!r})
import warpd as wp
wp.config.quiet = True
from test_print import prints_tagged
out = wp.zeros(2, dtype=int)
wp.launch(prints_tagged, dim=2, inputs=[{tag}, out])
{sync}
"""


def test_another_client_process_sees_only_its_own_output(wp, capsys, tmp_path):
    # While another process prints, this one launches too; each sees its own.
    script = tmp_path / "other_client.py"
    script.write_text(CLIENT_SCRIPT.format(tests=os.path.dirname(FILE), tag=5, sync="wp.synchronize()"))
    out = wp.zeros(2, dtype=int)
    wp.launch(prints_tagged, dim=2, inputs=[6, out])
    rt = context.runtime()
    rt.stream(rt.default_device).flush()
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "launch 5 thread 0\nlaunch 5 thread 1\n"
    wp.synchronize()
    assert capsys.readouterr().out == "launch 6 thread 0\nlaunch 6 thread 1\n"


def test_output_of_queued_work_is_printed_at_exit(wp, tmp_path):
    # No sync point at all: the launch runs at exit and its output is printed.
    script = tmp_path / "exits.py"
    script.write_text(CLIENT_SCRIPT.format(tests=os.path.dirname(FILE), tag=9, sync="print('python: last line')"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "python: last line\nlaunch 9 thread 0\nlaunch 9 thread 1\n"


def test_strings_with_any_bytes_reach_the_output_verbatim(wp, capsys):
    @wp.kernel(module="unique")
    def prints_odd_text():
        print("tab\there \"quoted\" back\\slash \u00e9\u4e2d \x01\x7f")
        wp.printf("%s|%%d|\\n\n", "%d %n %s")

    wp.launch(prints_odd_text, dim=1, inputs=[])
    wp.synchronize()
    assert capsys.readouterr().out == ("tab\there \"quoted\" back\\slash \u00e9\u4e2d \x01\x7f\n"
                                       "%d %n %s|%d|\\n\n")


class _FakeEvents:
    """IPython's shell.events as far as warpd uses it."""

    def __init__(self):
        self.hooks = {}

    def register(self, event, fn):
        self.hooks.setdefault(event, []).append(fn)

    def unregister(self, event, fn):
        self.hooks[event].remove(fn)

    def trigger(self, event):
        for fn in list(self.hooks.get(event, [])):
            fn(None)


class _FakeShell:
    def __init__(self):
        self.events = _FakeEvents()


def test_cell_end_is_a_sync_point_in_ipython(wp, capsys):
    """In a notebook, a cell that only launches still shows its kernel's output: the end of the cell
    (IPython's post_run_cell event) runs the queued work. No IPython here, so the shell is a stand-in
    with IPython's events interface."""
    rt = context.runtime()
    shell = _FakeShell()
    assert context.register_cell_sync(rt, shell)
    try:
        wp.synchronize()
        capsys.readouterr()
        out = wp.zeros(3, dtype=int)
        wp.launch(prints_tagged, dim=3, inputs=[7, out])  # queued: nothing printed yet
        assert rt.has_pending_work()
        assert capsys.readouterr().out == ""
        shell.events.trigger("post_run_cell")             # the cell ends
        assert capsys.readouterr().out == "".join(f"launch 7 thread {i}\n" for i in range(3))
        assert not rt.has_pending_work()
        shell.events.trigger("post_run_cell")             # nothing queued: no round trip, no output
        assert capsys.readouterr().out == ""
    finally:
        shell.events.unregister("post_run_cell", rt.cell_hook[1])
        rt.cell_hook = None


@wp.kernel
def expect_near_default_tolerance(x: float, y: wp.float64):
    # No tolerance: Warp's default, 1e-6, of the arguments' float type.
    wp.expect_near(x, x + 1.0e-7)
    wp.expect_near(x, x + 1.0e-3)
    wp.expect_near(wp.vec2d(y, y), wp.vec2d(y, y + wp.float64(1.0e-5)))
    wp.expect_near(wp.vec2d(y, y), wp.vec2d(y, y + wp.float64(1.0e-8)))


def test_expect_near_default_tolerance(wp, capsys):
    wp.launch(expect_near_default_tolerance, dim=1, inputs=[2.0, 4.0])
    wp.synchronize()
    assert capsys.readouterr().out == (
        "Error, expect_near() failed with tolerance 1e-06\n"
        "    Expected: 2.001\n"
        "    Actual: 2\n"
        "    Absolute difference: 0.000999928\n"
        "Error, expect_near() failed with tolerance 1e-06\n"
        "    Expected: 4 4.00001 \n"
        "    Actual: 4 4 \n"
        "    Max absolute difference: 1e-05\n")
