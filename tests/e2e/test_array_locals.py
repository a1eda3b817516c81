"""Array values in kernels as Warp 1.19 treats them: a local re-bound to an array of
another ndim (`sub = arr[:2]` then `sub = arr[:2, 1]`), negative indices beside slices,
`if arr:` / `not arr`, and None passed for an array (an array without data). References:
NumPy slicing of the same data."""

import numpy as np
import pytest

import warpd as wpd


@wpd.kernel
def rebinds(arr: wpd.array2d(dtype=int), out: wpd.array(dtype=int)):
    sub = arr[:2]
    out[0] = sub.ndim
    out[1] = sub[1, 3]
    sub = arr[:2, 1]  # now 1-D: a new local from here on
    out[2] = sub.ndim
    out[3] = sub[1]
    sub = arr[-4, :3]
    out[4] = sub[2]
    out[5] = sub.shape[0]
    sub = arr[1:3]  # 2-D again
    out[6] = sub[1, 0]


@wpd.kernel
def truthiness(a: wpd.array(dtype=float), b: wpd.array(dtype=float), out: wpd.array(dtype=int)):
    if a:
        out[0] = 1
    if not a:
        out[1] = 1
    if b:
        out[2] = 1
    if not b:
        out[3] = 1
    out[4] = a.shape[0]


@wpd.kernel
def reads(a: wpd.array(dtype=float), out: wpd.array(dtype=float)):
    out[0] = a[0]


def test_rebinding_to_another_ndim_and_negative_indices(wp):
    v = np.arange(32, dtype=np.int32).reshape(8, 4)
    out = wp.zeros(7, dtype=int)
    wp.launch(rebinds, dim=1, inputs=[wp.array(v), out])
    want = [2, v[:2][1, 3], 1, v[:2, 1][1], v[-4, :3][2], len(v[-4, :3]), v[1:3][1, 0]]
    np.testing.assert_array_equal(out.numpy(), want)


def test_rebinding_keeps_its_type_outside_the_declaring_block(wp):
    @wp.kernel(module="unique")
    def in_a_branch(arr: wp.array2d(dtype=int), n: int, out: wp.array(dtype=int)):
        sub = arr[:2]
        if n > 0:
            sub = arr[:2, 1]  # another block: the type would differ after the if
        out[0] = sub.ndim

    with pytest.raises(wp.CompileError, match="cannot assign a value of type array"):
        wp.launch(in_a_branch, dim=1, inputs=[wp.zeros((2, 2), dtype=int), 1, wp.zeros(1, dtype=int)])


def test_none_is_an_array_without_data(wp, serving):
    out = wp.zeros(5, dtype=int)
    wp.launch(truthiness, dim=1, inputs=[None, wp.zeros(3, dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), [0, 1, 1, 0, 0])
    with pytest.raises(wp.KernelError, match="out of bounds"):
        wp.launch(reads, dim=1, inputs=[None, wp.zeros(1, dtype=float)])
        wp.synchronize()
    assert serving()


def test_device_capability_queries(wp):
    # Warp 1.19's answers for the CPU; an unknown device is unavailable (and the pool
    # queries name it in a DeviceError).
    assert wp.is_device_available("cpu") and wp.is_device_available(wp.get_device("cpu"))
    assert not wp.is_device_available("cuda:7")
    assert wp.is_mempool_supported("cpu") is False and wp.is_mempool_enabled("cpu") is False
    for f in (wp.is_mempool_access_supported, wp.is_mempool_access_enabled, wp.is_peer_access_supported,
              wp.is_peer_access_enabled):
        assert f("cpu", "cpu") is False
    with pytest.raises(wp.DeviceError):
        wp.is_mempool_supported("nope")
    # Warp's answers for the CPU's (absent) pool: enabling raises ValueError, disabling does nothing.
    with pytest.raises(ValueError, match="only supported on CUDA devices"):
        wp.set_mempool_enabled("cpu", True)
    wp.set_mempool_enabled("cpu", False)
    for f in (wp.get_mempool_release_threshold, wp.get_mempool_used_mem_current, wp.get_mempool_used_mem_high):
        with pytest.raises(ValueError, match="only supported on CUDA devices"):
            f("cpu")
    with pytest.raises(ValueError, match="only supported on CUDA devices"):
        wp.set_mempool_release_threshold("cpu", 1 << 20)
    for f, kind in ((wp.set_mempool_access_enabled, "Memory pool"), (wp.set_peer_access_enabled, "Peer")):
        with pytest.raises(ValueError, match=f"{kind} access is only supported between CUDA devices"):
            f("cpu", "cpu", True)
        f("cpu", "cpu", False)
    with pytest.raises(ValueError):
        with wp.ScopedMempool("cpu", True):
            pass
    with pytest.raises(ValueError, match="Memory pool access is only supported"):
        with wp.ScopedMempoolAccess("cpu", "cpu"):
            pass
    with wp.ScopedPeerAccess("cpu", "cpu", False), wp.ScopedMempool("cpu", False):
        pass


@wpd.kernel
def fill_ids(out: wpd.array(dtype=int), base: int, v: wpd.vec3):
    i = wpd.tid()
    out[i] = base + i + int(v[0])


def test_a_default_constructed_launch(wp):
    # Warp's wp.Launch(kernel, device): parameters start zero (arrays None), dim unset.
    out = wp.zeros(10, dtype=int)
    cmd = wp.Launch(fill_ids, "cpu")
    cmd.launch()  # no dim yet: nothing runs
    cmd.set_dim(5)
    cmd.set_param_by_name("out", out)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 3, 4, 0, 0, 0, 0, 0])
    cmd.set_dim(10)
    cmd.set_param_at_index(1, 100)
    cmd.set_param_at_index(2, wp.vec3(7.0, 0.0, 0.0))
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), 107 + np.arange(10))


def test_range_of_a_static_bool_and_kernel_names(wp):
    @wp.kernel(module="unique")
    def counts(out: wp.array(dtype=int)):
        n = int(0)
        for _ in range(wp.static(True)):
            n += 1
        for _ in range(wp.static(False)):
            n += 10
        out[0] = n

    out = wp.zeros(1, dtype=int)
    wp.launch(counts, dim=1, inputs=[out])
    assert out.numpy()[0] == 1
    with pytest.raises(ValueError, match=r"valid C\+\+ identifier"):
        @wp.kernel(module="unique", name="1invalid")
        def bad_name():
            return

    # One source made twice with its own names: two kernels in two modules, each running.
    def make(name, value):
        @wp.kernel(module="unique", name=name)
        def named(out: wp.array(dtype=int), v: int):
            out[0] = v

        return named

    a, b = make("kernel_a", 1), make("kernel_b", 2)
    assert (a.key, b.key) == ("kernel_a", "kernel_b")
    assert a.module.name != b.module.name
    for k, v in ((a, 5), (b, 6)):
        wp.launch(k, dim=1, inputs=[out, v])
        assert out.numpy()[0] == v
