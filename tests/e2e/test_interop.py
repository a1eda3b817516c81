"""Interop on the same host (issue 28): DLPack export and import, PyTorch
entry points, and the array's repr (a preview read only where shown).

The `wp` fixture's client is on the daemon's Unix socket, so its CPU arrays
are mapped into this process: their DLPack export shares memory with numpy();
a client over TCP (and an array it cannot map) exports copies.
"""

import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import Daemon, daemon_binary

MAPPED_N = 1 << 15  # float32: 128 KiB, over local_map.SHARE_MIN_BYTES


def _doubler(wp):
    @wp.kernel(module="unique")
    def double_into(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
        i = wp.tid()
        dst[i] = src[i] * 2.0

    return double_into


def test_dlpack_of_a_mapped_array_shares_its_memory(wp):
    values = np.arange(MAPPED_N, dtype=np.float32)
    a = wp.array(values, dtype=float)
    assert a.__dlpack_device__() == (1, 0)
    x = np.from_dlpack(a)
    assert x.shape == (MAPPED_N,) and x.dtype == np.float32
    assert np.shares_memory(x, a.numpy())
    np.testing.assert_array_equal(x, values)
    # Written through the export, read by a kernel in the daemon.
    x[:4] = [10.0, 11.0, 12.0, 13.0]
    out = wp.zeros(MAPPED_N, dtype=float)
    wp.launch(_doubler(wp), dim=MAPPED_N, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy()[:6], [20.0, 22.0, 24.0, 26.0, 8.0, 10.0])
    # The export waits for queued work: a fill launched before it is seen.
    a.fill_(7.0)
    y = np.from_dlpack(a)
    assert np.shares_memory(y, x) and (y == 7.0).all()
    # A capsule (Warp's to_dlpack) reads the same memory; copy=True does not.
    z = _consume(wp.to_dlpack(a))
    assert np.shares_memory(z, x) and (z == 7.0).all()
    copied = np.asarray(_consume(a.__dlpack__(copy=True)))
    assert not np.shares_memory(copied, x) and (copied == 7.0).all()


def _consume(capsule):
    """NumPy's array of a raw capsule (np.from_dlpack takes objects, not capsules)."""
    import warpd.interop as interop

    return np.from_dlpack(interop._Capsule(capsule))


def test_dlpack_of_views_and_vectors(wp):
    m = np.arange(300 * 120, dtype=np.float32).reshape(300, 120)
    a = wp.array(m, dtype=float)
    v = a[10:20, 5:50:3]
    x = np.from_dlpack(v)
    np.testing.assert_array_equal(x, m[10:20, 5:50:3])
    assert np.shares_memory(x, a.numpy())
    vecs = np.arange(MAPPED_N * 3, dtype=np.float32).reshape(MAPPED_N, 3)
    b = wp.array(vecs, dtype=wp.vec3)
    y = np.from_dlpack(b)
    assert y.shape == (MAPPED_N, 3)
    np.testing.assert_array_equal(y, vecs)
    assert np.shares_memory(y, b.numpy())


def test_dlpack_of_a_small_array_shares_memory(wp):
    s = wp.array(np.arange(10, dtype=np.float64), dtype=wp.float64)
    x = np.from_dlpack(s)
    np.testing.assert_array_equal(x, np.arange(10))
    assert np.shares_memory(x, s.numpy())


def test_dlpack_of_an_unmapped_array_is_a_copy(wp):
    s = wp.array(np.arange(10, dtype=np.float64), dtype=wp.float64)
    s._mapping = False  # as for a client over TCP
    x = np.from_dlpack(s)
    np.testing.assert_array_equal(x, np.arange(10))
    assert not np.shares_memory(x, np.from_dlpack(s))
    with pytest.raises(BufferError, match="not mapped into this process"):
        s.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="host memory only"):
        s.__dlpack__(dl_device=(2, 0))


def test_from_dlpack_copies_into_a_new_array(wp):
    src = np.linspace(0.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    a = wp.from_dlpack(src, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype is wp.vec3
    np.testing.assert_array_equal(a.numpy(), src)
    src[0, 0] = 99.0  # a copy: the array keeps its values
    assert a.numpy()[0, 0] == 0.0
    plain = wp.from_dlpack(np.arange(6, dtype=np.int32))
    assert plain.dtype is wp.int32 and plain.numpy().tolist() == [0, 1, 2, 3, 4, 5]
    # A capsule (wp.to_dlpack's, as Warp's) and a warp array itself.
    big = wp.array(np.arange(MAPPED_N, dtype=np.float32), dtype=float)
    again = wp.from_dlpack(wp.to_dlpack(big))
    assert again is not big and again.shape == big.shape
    np.testing.assert_array_equal(again.numpy(), np.arange(MAPPED_N, dtype=np.float32))
    assert wp.from_dlpack(big) is big
    with pytest.raises(TypeError, match="not an unconsumed DLPack tensor"):
        cap = wp.to_dlpack(big)
        np.from_dlpack(__import__("warpd").interop._Capsule(cap))  # consumes it
        wp.from_dlpack(cap)


def test_from_dlpack_refuses_what_it_cannot_read(wp):
    """Warp 1.19's errors: no dtype conversion, host memory only, capsules only."""
    with pytest.raises(RuntimeError, match=r"^Incompatible data types: DLPack bool8 and Warp float32$"):
        wp.from_dlpack(wp.to_dlpack(wp.zeros(1, dtype=wp.bool)), dtype=wp.float32)
    with pytest.raises(RuntimeError, match=r"^Incompatible data types: DLPack float64 and Warp vec3f$"):
        wp.from_dlpack(np.zeros((2, 3)), dtype=wp.vec3)
    flags = np.array([True, False, True])
    for t in (wp.int8, wp.uint8):  # bool bytes read as 8-bit integers, as Warp allows
        as_int = wp.from_dlpack(wp.to_dlpack(wp.array(flags, dtype=wp.bool)), dtype=t)
        assert as_int.dtype is t and as_int.numpy().tolist() == [1, 0, 1]

    class OnAnotherDevice:
        def __dlpack_device__(self):
            return (10, 1)  # kDLROCM

        def __dlpack__(self, stream=None):
            raise AssertionError("not called for a device warpd cannot read")

    with pytest.raises(TypeError, match=r"^Unsupported source device for DLPack: device_type=10, device_id=1 "
                                        r"\(warpd reads DLPack data in host memory or on a CUDA GPU"):
        wp.from_dlpack(OnAnotherDevice())

    # A CUDA tensor where this process has no driver to read it with (CI): a clear
    # error, and the capsule consumed all the same (its deleter ran).
    import ctypes

    from warpd import cuda_ipc

    if not cuda_ipc.dlpack_device_readable():
        managed = cuda_ipc._DLManagedTensor()
        managed.dl_tensor.device = cuda_ipc._DLDevice(2, 0)
        managed.dl_tensor.ndim = 1
        shape = (ctypes.c_int64 * 1)(4)
        managed.dl_tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        managed.dl_tensor.dtype = cuda_ipc._DLDataType(2, 32, 1)
        managed.dl_tensor.data = 0x1000
        deleted = []
        deleter = cuda_ipc._Deleter(lambda m: deleted.append(True))
        managed.deleter = deleter
        address = ctypes.addressof(managed)
        cuda_ipc._exported[address] = (managed,)
        capsule = cuda_ipc._capsule_new(address, b"dltensor", cuda_ipc._capsule_gone)
        with pytest.raises(TypeError, match="^wp.from_dlpack: cannot read this GPU tensor here: "):
            wp.from_dlpack(capsule)
        assert deleted == [True]
        cuda_ipc._exported.pop(address, None)

    class NotACapsule:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None):
            return object()

    with pytest.raises(TypeError, match="^Expected a valid DLPack capsule, got object$"):
        wp.from_dlpack(NotACapsule())
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        wp.from_dlpack([1.0, 2.0])


def test_device_names_for_torch_need_no_torch(wp):
    # Warp's device helper maps a device (or its alias) to torch's name for it.
    assert wp.device_to_torch("cpu") == "cpu" and wp.device_to_torch("cuda") == "cuda:0"
    assert wp.device_to_torch(wp.get_device("cpu")) == "cpu"
    with pytest.raises(RuntimeError, match="Invalid device"):
        wp.device_to_torch("tpu")


def test_torch_entry_points(wp):
    a = wp.array(np.arange(MAPPED_N, dtype=np.float32), dtype=float)
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(ImportError, match="PyTorch is not installed .*wp.to_torch and wp.from_torch need it"):
            wp.to_torch(a)
        with pytest.raises(ImportError, match="PyTorch is not installed"):
            wp.from_torch(object())
        return
    import torch

    # A mapped array's tensor is its memory: writes go both ways, no copy.
    t = wp.to_torch(a)
    assert np.shares_memory(t.numpy(), a.numpy())
    t[:3] = torch.tensor([-1.0, -2.0, -3.0])
    assert a.numpy()[:3].tolist() == [-1.0, -2.0, -3.0]
    b = wp.zeros(MAPPED_N, dtype=float)
    wp.launch(_doubler(wp), dim=MAPPED_N, inputs=[a, b])
    tb = wp.to_torch(b)  # waits for the launch
    np.testing.assert_array_equal(tb.numpy(), 2.0 * a.numpy())
    # Vectors get a trailing dimension; a small array's tensor shares its memory too,
    # and an array that is not mapped gives a copy.
    v = wp.array(np.arange(MAPPED_N * 3, dtype=np.float32).reshape(-1, 3), dtype=wp.vec3)
    assert tuple(wp.to_torch(v).shape) == (MAPPED_N, 3)
    small = wp.array([1.0, 2.0], dtype=float)
    ts = wp.to_torch(small)
    ts[0] = 9.0
    assert small.numpy().tolist() == [9.0, 2.0]
    unmapped = wp.array([1.0, 2.0], dtype=float)
    unmapped._mapping = False
    tu = wp.to_torch(unmapped)
    tu[0] = 9.0
    assert unmapped.numpy().tolist() == [1.0, 2.0]
    # requires_grad follows the array unless given.
    g = wp.zeros(4, dtype=float, requires_grad=True)
    assert wp.to_torch(g).requires_grad and not wp.to_torch(g, requires_grad=False).requires_grad
    # from_torch copies into a new array: dtypes inferred or given, requires_grad carried.
    back = wp.from_torch(torch.arange(5, dtype=torch.float32))
    assert back.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] and back.dtype is wp.float32
    ints = wp.from_torch(torch.tensor([3, -4], dtype=torch.int64))
    assert ints.dtype is wp.int64 and ints.numpy().tolist() == [3, -4]
    pts = wp.from_torch(torch.ones(6, 3, dtype=torch.float32, requires_grad=True), dtype=wp.vec3)
    assert pts.dtype is wp.vec3 and pts.shape == (6,) and pts.requires_grad and pts.grad is not None
    with pytest.raises(RuntimeError, match="Incompatible data types"):
        wp.from_torch(torch.ones(4, dtype=torch.float64), dtype=wp.float32)
    # Warp's dtype and device helpers.
    assert wp.dtype_from_torch(torch.float32) is wp.float32 and wp.dtype_from_torch(torch.bool) is wp.bool
    assert wp.dtype_to_torch(wp.vec3) == torch.float32 and wp.dtype_to_torch(wp.int64) == torch.int64
    with pytest.raises(TypeError, match="Cannot convert"):
        wp.dtype_from_torch(torch.complex64)
    assert wp.device_from_torch(torch.device("cpu")) == "cpu" and wp.device_to_torch("cpu") == "cpu"
    assert wp.device_to_torch(wp.get_device("cpu")) == "cpu"


def _numpy_repr(values, shape, dtype_name):
    text = np.array2string(values, separator=", ", prefix="array(")
    return f"array({text}, shape={shape}, dtype={dtype_name}, device=\"cpu\")"


def test_repr_previews_values_as_numpy_prints_them(wp):
    small = np.array([[1.5, -2.0, 3.25], [4.0, 5.0, 6.0]], dtype=np.float32)
    a = wp.array(small, dtype=float)
    assert repr(a) == _numpy_repr(small, (2, 3), "float32")
    big = np.arange(MAPPED_N, dtype=np.float32) * 0.5
    b = wp.array(big, dtype=float)
    assert repr(b) == _numpy_repr(big, (MAPPED_N,), "float32")
    assert "..." in repr(b)
    html = b._repr_html_()
    assert "<b>warpd array</b> shape <code>(32768,)</code>, dtype <code>float32</code>, device <code>cpu</code>" in html
    assert np.array2string(big) in html
    m = wp.zeros(3, dtype=wp.mat22)
    assert repr(m) == _numpy_repr(np.zeros((3, 2, 2), np.float32), (3,), "mat22f")
    assert repr(wp.zeros(0, dtype=wp.int32)) == 'array([], shape=(0,), dtype=int32, device="cpu")'
    assert repr(wp.array(dtype=float)) == "array(dtype=float32, ndim=1)"  # an annotation


REMOTE_SCRIPT = textwrap.dedent('''
    import numpy as np
    import warpd as wp
    import importlib
    array_mod = importlib.import_module("warpd.array")
    wp.config.quiet = True
    downloaded = []
    real = array_mod.array._download
    def counting(self):
        downloaded.append(self.capacity)
        return real(self)
    array_mod.array._download = counting

    m = np.arange(600 * 500, dtype=np.float32).reshape(600, 500) / 7
    a = wp.array(m, dtype=float)
    want = "array(" + np.array2string(m, separator=", ", prefix="array(") + ', shape=(600, 500), dtype=float32, device="cpu")'
    assert repr(a) == want, (repr(a), want)
    print("preview bytes", sum(downloaded), "of", a.capacity)
    downloaded.clear()
    v = a[100:400:2, 7:]
    want_v = "array(" + np.array2string(m[100:400:2, 7:], separator=", ", prefix="array(") + ', shape=(150, 493), dtype=float32, device="cpu")'
    assert repr(v) == want_v, (repr(v), want_v)
    print("view preview bytes", sum(downloaded))
    x = np.from_dlpack(a)
    np.testing.assert_array_equal(x, m)
    assert not np.shares_memory(x, np.from_dlpack(a))
    try:
        a.__dlpack__(copy=False)
    except BufferError as e:
        print("copy=False:", e)
    wp.shutdown()
    assert repr(a) == 'array(<session closed>, shape=(600, 500), dtype=float32, device="cpu")', repr(a)
    print("closed ok")
''')


def test_remote_client_previews_corners_and_copies(tmp_path):
    """A client over TCP maps nothing: its repr reads only the corners shown, and
    its DLPack exports are copies."""
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--listen", "127.0.0.1:0"])
    d.start()
    try:
        port = int(re.search(r"listening on .*127\.0\.0\.1:(\d+)", d.log_tail(20000)).group(1))
        env = {k: v for k, v in os.environ.items() if not k.startswith("WARPD_")}
        env.update(WARPD_ADDRESS=f"127.0.0.1:{port}", WARPD_TOKEN=(tmp_path / "warpd.token").read_text().strip())
        proc = subprocess.run([sys.executable, "-c", REMOTE_SCRIPT], env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lines = proc.stdout.splitlines()
        # 4 corners of 3x3 float32: 144 bytes of the array's 1.2 MB.
        assert lines[0] == "preview bytes 144 of 1200000", lines
        assert lines[1] == "view preview bytes 144", lines
        assert lines[2].startswith("copy=False: this warpd array is not mapped into this process"), lines
        assert lines[3] == "closed ok", lines
    finally:
        assert d.stop() == 0, d.log_tail()
