"""Values of the Random builtins against real NVIDIA Warp 1.19.0.

tests/fixtures/warp_random_reference.json holds what warp-lang 1.19.0 returned
(CPU) for a grid of seeds, offsets and inputs; tests/fixtures/
gen_warp_random_reference.py made it and documents the format. The kernels
here make the same calls in the daemon; integers and states must be equal,
float32 results equal to within an ulp or two (the transcendental functions
come from each side's libm).
"""

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import warpd as wp

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "warp_random_reference.json"
REF = json.loads(FIXTURE.read_text())
CALLS = REF["calls_per_stream"]
CASES = defaultdict(list)
for _c in REF["cases"]:
    CASES[_c["fn"]].append(_c)


# ------------------------------------------------------------ kernels (two calls on one stream)

@wp.kernel
def k_rand_init(seed: wp.array(dtype=wp.int32), offset: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.uint32)):
    i = wp.tid()
    out[i, 0] = wp.rand_init(seed[i])
    out[i, 1] = wp.rand_init(seed[i], offset[i])


@wp.kernel
def k_randi(seed: wp.array(dtype=wp.int32), offset: wp.array(dtype=wp.int32), lo: wp.array(dtype=wp.int32),
            hi: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.int32), st: wp.array2d(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed[i], offset[i])
    out[i, 0] = wp.randi(s)
    out[i, 1] = wp.randi(s)
    st[i, 0] = s
    s = wp.rand_init(seed[i], offset[i])
    out[i, 2] = wp.randi(s, lo[i], hi[i])
    out[i, 3] = wp.randi(s, lo[i], hi[i])
    st[i, 1] = s


@wp.kernel
def k_randu(seed: wp.array(dtype=wp.int32), offset: wp.array(dtype=wp.int32), lo: wp.array(dtype=wp.uint32),
            hi: wp.array(dtype=wp.uint32), out: wp.array2d(dtype=wp.uint32), st: wp.array2d(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed[i], offset[i])
    out[i, 0] = wp.randu(s)
    out[i, 1] = wp.randu(s)
    st[i, 0] = s
    s = wp.rand_init(seed[i], offset[i])
    out[i, 2] = wp.randu(s, lo[i], hi[i])
    out[i, 3] = wp.randu(s, lo[i], hi[i])
    st[i, 1] = s


@wp.kernel
def k_randf(seed: wp.array(dtype=wp.int32), offset: wp.array(dtype=wp.int32), lo: wp.array(dtype=float),
            hi: wp.array(dtype=float), out: wp.array2d(dtype=float), st: wp.array2d(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed[i], offset[i])
    out[i, 0] = wp.randf(s)
    out[i, 1] = wp.randf(s)
    st[i, 0] = s
    s = wp.rand_init(seed[i], offset[i])
    out[i, 2] = wp.randf(s, lo[i], hi[i])
    out[i, 3] = wp.randf(s, lo[i], hi[i])
    st[i, 1] = s
    s = wp.rand_init(seed[i], offset[i])
    out[i, 4] = wp.randn(s)
    out[i, 5] = wp.randn(s)
    st[i, 2] = s


@wp.kernel
def k_sample_cdf(seed: wp.array(dtype=wp.int32), offset: wp.array(dtype=wp.int32), cdf: wp.array(dtype=float),
                 out: wp.array2d(dtype=wp.int32), st: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed[i], offset[i])
    out[i, 0] = wp.sample_cdf(s, cdf)
    out[i, 1] = wp.sample_cdf(s, cdf)
    st[i] = s


@wp.kernel
def k_poisson(seed: wp.array(dtype=wp.int32), offset: wp.array(dtype=wp.int32), lam: wp.array(dtype=float),
              out: wp.array2d(dtype=wp.uint32), st: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed[i], offset[i])
    out[i, 0] = wp.poisson(s, lam[i])
    out[i, 1] = wp.poisson(s, lam[i])
    st[i] = s


SAMPLERS2 = ["sample_triangle", "sample_unit_ring", "sample_unit_disk", "sample_unit_square"]
SAMPLERS3 = ["sample_unit_sphere_surface", "sample_unit_sphere", "sample_unit_hemisphere_surface",
             "sample_unit_hemisphere", "sample_unit_cube"]


@wp.kernel
def k_samplers(seed: wp.array(dtype=wp.int32), offset: wp.array(dtype=wp.int32), out2: wp.array3d(dtype=wp.vec2),
               out3: wp.array3d(dtype=wp.vec3), st: wp.array2d(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed[i], offset[i])
    out2[i, 0, 0] = wp.sample_triangle(s)
    out2[i, 0, 1] = wp.sample_triangle(s)
    st[i, 0] = s
    s = wp.rand_init(seed[i], offset[i])
    out2[i, 1, 0] = wp.sample_unit_ring(s)
    out2[i, 1, 1] = wp.sample_unit_ring(s)
    st[i, 1] = s
    s = wp.rand_init(seed[i], offset[i])
    out2[i, 2, 0] = wp.sample_unit_disk(s)
    out2[i, 2, 1] = wp.sample_unit_disk(s)
    st[i, 2] = s
    s = wp.rand_init(seed[i], offset[i])
    out2[i, 3, 0] = wp.sample_unit_square(s)
    out2[i, 3, 1] = wp.sample_unit_square(s)
    st[i, 3] = s
    s = wp.rand_init(seed[i], offset[i])
    out3[i, 0, 0] = wp.sample_unit_sphere_surface(s)
    out3[i, 0, 1] = wp.sample_unit_sphere_surface(s)
    st[i, 4] = s
    s = wp.rand_init(seed[i], offset[i])
    out3[i, 1, 0] = wp.sample_unit_sphere(s)
    out3[i, 1, 1] = wp.sample_unit_sphere(s)
    st[i, 5] = s
    s = wp.rand_init(seed[i], offset[i])
    out3[i, 2, 0] = wp.sample_unit_hemisphere_surface(s)
    out3[i, 2, 1] = wp.sample_unit_hemisphere_surface(s)
    st[i, 6] = s
    s = wp.rand_init(seed[i], offset[i])
    out3[i, 3, 0] = wp.sample_unit_hemisphere(s)
    out3[i, 3, 1] = wp.sample_unit_hemisphere(s)
    st[i, 7] = s
    s = wp.rand_init(seed[i], offset[i])
    out3[i, 4, 0] = wp.sample_unit_cube(s)
    out3[i, 4, 1] = wp.sample_unit_cube(s)
    st[i, 8] = s


@wp.kernel
def k_noise(state: wp.array(dtype=wp.uint32), x: wp.array(dtype=wp.vec4), p: wp.array(dtype=wp.vec4i),
            n: wp.array(dtype=wp.int32), out: wp.array2d(dtype=float)):
    i = wp.tid()
    v = x[i]
    q = p[i]
    if n[i] == 1:
        out[i, 0] = wp.noise(state[i], v[0])
        out[i, 1] = wp.pnoise(state[i], v[0], q[0])
    elif n[i] == 2:
        out[i, 0] = wp.noise(state[i], wp.vec2(v[0], v[1]))
        out[i, 1] = wp.pnoise(state[i], wp.vec2(v[0], v[1]), q[0], q[1])
    elif n[i] == 3:
        out[i, 0] = wp.noise(state[i], wp.vec3(v[0], v[1], v[2]))
        out[i, 1] = wp.pnoise(state[i], wp.vec3(v[0], v[1], v[2]), q[0], q[1], q[2])
    else:
        out[i, 0] = wp.noise(state[i], v)
        out[i, 1] = wp.pnoise(state[i], v, q[0], q[1], q[2], q[3])


@wp.kernel
def k_curlnoise(state: wp.array(dtype=wp.uint32), x: wp.array(dtype=wp.vec4), octaves: wp.array(dtype=wp.uint32),
                lac: wp.array(dtype=float), gain: wp.array(dtype=float), n: wp.array(dtype=wp.int32),
                out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v = x[i]
    if n[i] == 2:
        c = wp.curlnoise(state[i], wp.vec2(v[0], v[1]), octaves[i], lac[i], gain[i])
        out[i] = wp.vec3(c[0], c[1], 0.0)
    elif n[i] == 3:
        out[i] = wp.curlnoise(state[i], wp.vec3(v[0], v[1], v[2]), octaves[i], lac[i], gain[i])
    else:
        out[i] = wp.curlnoise(state[i], v, octaves[i], lac[i], gain[i])


# ------------------------------------------------------------ helpers

def assert_f32(got, want, what):
    """float32 results: equal, or within 2 ulp where libm rounding may differ. On a GPU
    (the default device when one serves) the kernels are built as Warp builds them for
    CUDA: NVRTC fuses multiply-adds (fmad) and the transcendental functions are CUDA's,
    so results near a cancellation move by more than an ulp of themselves; there they
    must agree within 2e-6 absolute plus 2e-6 relative (the fixture's values are O(1))."""
    got = np.asarray(got, dtype=np.float32).reshape(-1)
    want = np.asarray(want, dtype=np.float32).reshape(-1)
    ulp = np.spacing(np.maximum(np.abs(want), np.float32(1e-30)))
    allowed = 2 * ulp.astype(np.float64)
    if wp.get_device().is_cuda:
        allowed = 2e-6 + 2e-6 * np.abs(want.astype(np.float64))
    bad = np.abs(got.astype(np.float64) - want) > allowed
    assert not bad.any(), f"{what}: {int(bad.sum())} of {len(want)} differ, e.g. got {got[bad][:4]} want {want[bad][:4]}"


def streams(fn):
    cases = CASES[fn]
    assert cases, f"the fixture has no cases for {fn}"
    seeds = np.array([c["in"][0] for c in cases], dtype=np.int32)
    offs = np.array([c["in"][1] for c in cases], dtype=np.int32)
    return cases, seeds, offs


def outs(cases, width=1):
    """(results of the CALLS calls, final states) of the fixture's stateful cases."""
    vals = np.array([c["out"][:CALLS * width] for c in cases])
    states = np.array([c["out"][CALLS * width] for c in cases], dtype=np.uint64)
    return vals, states


# ------------------------------------------------------------ tests

def test_rand_init(wp):
    one = CASES["rand_init1"]
    two = CASES["rand_init2"]
    seeds = [c["in"][0] for c in one] + [c["in"][0] for c in two]
    offs = [0] * len(one) + [c["in"][1] for c in two]
    out = wp.zeros((len(seeds), 2), dtype=wp.uint32)
    wp.launch(k_rand_init, dim=len(seeds), inputs=[wp.array(np.array(seeds, dtype=np.int32), dtype=wp.int32),
                                                  wp.array(np.array(offs, dtype=np.int32), dtype=wp.int32), out])
    got = out.numpy()
    np.testing.assert_array_equal(got[:len(one), 0], [c["out"][0] for c in one], err_msg="rand_init(seed)")
    np.testing.assert_array_equal(got[len(one):, 1], [c["out"][0] for c in two], err_msg="rand_init(seed, offset)")


@pytest.mark.parametrize("kind", ["randi", "randu"])
def test_random_integers(wp, kind):
    plain, seeds, offs = streams(kind)
    ranged = CASES[f"{kind}_range"]
    np_t, wp_t = (np.int32, wp.int32) if kind == "randi" else (np.uint32, wp.uint32)
    # one launch for the ranged cases: their streams in "in" come with low and high
    rs = np.array([c["in"][0] for c in ranged], dtype=np.int32)
    ro = np.array([c["in"][1] for c in ranged], dtype=np.int32)
    lo = np.array([c["in"][2] for c in ranged]).astype(np_t)
    hi = np.array([c["in"][3] for c in ranged]).astype(np_t)
    kernel = k_randi if kind == "randi" else k_randu
    out = wp.zeros((len(ranged), 4), dtype=wp_t)
    st = wp.zeros((len(ranged), 2), dtype=wp.uint32)
    wp.launch(kernel, dim=len(ranged), inputs=[wp.array(rs, dtype=wp.int32), wp.array(ro, dtype=wp.int32),
                                              wp.array(lo, dtype=wp_t), wp.array(hi, dtype=wp_t), out, st])
    vals, states = outs(ranged)
    np.testing.assert_array_equal(out.numpy()[:, 2:4], vals.astype(np_t), err_msg=f"{kind}(state, low, high)")
    np.testing.assert_array_equal(st.numpy()[:, 1], states, err_msg=f"{kind}(state, low, high): state")
    # the plain calls on the plain streams
    out = wp.zeros((len(plain), 4), dtype=wp_t)
    st = wp.zeros((len(plain), 2), dtype=wp.uint32)
    ones = np.ones(len(plain), dtype=np_t)
    wp.launch(kernel, dim=len(plain), inputs=[wp.array(seeds, dtype=wp.int32), wp.array(offs, dtype=wp.int32),
                                             wp.array(ones * 0, dtype=wp_t), wp.array(ones * 9, dtype=wp_t), out, st])
    vals, states = outs(plain)
    np.testing.assert_array_equal(out.numpy()[:, 0:2], vals.astype(np_t), err_msg=f"{kind}(state)")
    np.testing.assert_array_equal(st.numpy()[:, 0], states, err_msg=f"{kind}(state): state")


def test_random_floats(wp):
    ranged = CASES["randf_range"]
    rs = np.array([c["in"][0] for c in ranged], dtype=np.int32)
    ro = np.array([c["in"][1] for c in ranged], dtype=np.int32)
    lo = np.array([c["in"][2] for c in ranged], dtype=np.float32)
    hi = np.array([c["in"][3] for c in ranged], dtype=np.float32)
    out = wp.zeros((len(ranged), 6), dtype=float)
    st = wp.zeros((len(ranged), 3), dtype=wp.uint32)
    wp.launch(k_randf, dim=len(ranged), inputs=[wp.array(rs, dtype=wp.int32), wp.array(ro, dtype=wp.int32),
                                               wp.array(lo), wp.array(hi), out, st])
    vals, states = outs(ranged)
    assert_f32(out.numpy()[:, 2:4], vals, "randf(state, low, high)")
    np.testing.assert_array_equal(st.numpy()[:, 1], states, err_msg="randf(state, low, high): state")
    for fn, col in (("randf", 0), ("randn", 4)):
        cases, seeds, offs = streams(fn)
        out = wp.zeros((len(cases), 6), dtype=float)
        st = wp.zeros((len(cases), 3), dtype=wp.uint32)
        z = np.zeros(len(cases), dtype=np.float32)
        wp.launch(k_randf, dim=len(cases), inputs=[wp.array(seeds, dtype=wp.int32), wp.array(offs, dtype=wp.int32),
                                                  wp.array(z), wp.array(z + 1), out, st])
        vals, states = outs(cases)
        assert_f32(out.numpy()[:, col:col + 2], vals, f"{fn}(state)")
        np.testing.assert_array_equal(st.numpy()[:, col // 2], states, err_msg=f"{fn}(state): state")


def test_samplers(wp):
    # every sampler's cases share the fixture's streams, in the same order
    cases, seeds, offs = streams("sample_triangle")
    n = len(cases)
    out2 = wp.zeros((n, 4, 2), dtype=wp.vec2)
    out3 = wp.zeros((n, 5, 2), dtype=wp.vec3)
    st = wp.zeros((n, 9), dtype=wp.uint32)
    wp.launch(k_samplers, dim=n, inputs=[wp.array(seeds, dtype=wp.int32), wp.array(offs, dtype=wp.int32),
                                        out2, out3, st])
    for k, fn in enumerate(SAMPLERS2 + SAMPLERS3):
        fc = CASES[fn]
        assert [c["in"] for c in fc] == [c["in"] for c in cases]
        width = 2 if fn in SAMPLERS2 else 3
        vals, states = outs(fc, width)
        got = out2.numpy()[:, k] if fn in SAMPLERS2 else out3.numpy()[:, k - 4]
        assert_f32(got.reshape(n, -1), vals, fn)
        np.testing.assert_array_equal(st.numpy()[:, k], states, err_msg=f"{fn}: state")


def test_sample_cdf(wp):
    cases, seeds, offs = streams("sample_cdf")
    cdf = np.array(cases[0]["in"][2:], dtype=np.float32)
    assert all(c["in"][2:] == cases[0]["in"][2:] for c in cases)
    out = wp.zeros((len(cases), 2), dtype=wp.int32)
    st = wp.zeros(len(cases), dtype=wp.uint32)
    wp.launch(k_sample_cdf, dim=len(cases), inputs=[wp.array(seeds, dtype=wp.int32), wp.array(offs, dtype=wp.int32),
                                                   wp.array(cdf), out, st])
    vals, states = outs(cases)
    np.testing.assert_array_equal(out.numpy(), vals)
    np.testing.assert_array_equal(st.numpy(), states)


def test_poisson(wp):
    cases, seeds, offs = streams("poisson")
    lam = np.array([c["in"][2] for c in cases], dtype=np.float32)
    out = wp.zeros((len(cases), 2), dtype=wp.uint32)
    st = wp.zeros(len(cases), dtype=wp.uint32)
    wp.launch(k_poisson, dim=len(cases), inputs=[wp.array(seeds, dtype=wp.int32), wp.array(offs, dtype=wp.int32),
                                                wp.array(lam), out, st])
    vals, states = outs(cases)
    np.testing.assert_array_equal(out.numpy(), vals)
    np.testing.assert_array_equal(st.numpy(), states)


def test_noise_and_pnoise(wp):
    rows = []  # (n, state, x (padded to 4), periods (padded), noise reference, pnoise reference)
    for n in (1, 2, 3, 4):
        for c in CASES[f"noise{n}"]:
            rows.append((n, c["in"][0], c["in"][1:1 + n], [1] * n, c["out"][0], None))
        for c in CASES[f"pnoise{n}"]:
            rows.append((n, c["in"][0], c["in"][1:1 + n], c["in"][1 + n:1 + 2 * n], None, c["out"][0]))
    m = len(rows)
    x = np.zeros((m, 4), dtype=np.float32)
    p = np.ones((m, 4), dtype=np.int32)
    for k, r in enumerate(rows):
        x[k, :r[0]] = r[2]
        p[k, :r[0]] = r[3]
    out = wp.zeros((m, 2), dtype=float)
    wp.launch(k_noise, dim=m, inputs=[wp.array(np.array([r[1] for r in rows], dtype=np.uint32), dtype=wp.uint32),
                                     wp.array(x, dtype=wp.vec4), wp.array(p, dtype=wp.vec4i),
                                     wp.array(np.array([r[0] for r in rows], dtype=np.int32), dtype=wp.int32), out])
    got = out.numpy()
    for col, ref, name in ((0, 4, "noise"), (1, 5, "pnoise")):
        for n in (1, 2, 3, 4):
            sel = [k for k, r in enumerate(rows) if r[ref] is not None and r[0] == n]
            assert_f32(got[sel, col], [rows[k][ref] for k in sel], f"{name} {n}-D")


def test_curlnoise(wp):
    rows = []
    for n in (2, 3, 4):
        for c in CASES[f"curlnoise{n}"]:
            inp = c["in"]
            rows.append((n, inp[0], inp[1:1 + n], inp[1 + n], inp[2 + n], inp[3 + n], c["out"]))
    m = len(rows)
    x = np.zeros((m, 4), dtype=np.float32)
    for k, r in enumerate(rows):
        x[k, :r[0]] = r[2]
    out = wp.zeros(m, dtype=wp.vec3)
    wp.launch(k_curlnoise, dim=m, inputs=[
        wp.array(np.array([r[1] for r in rows], dtype=np.uint32), dtype=wp.uint32), wp.array(x, dtype=wp.vec4),
        wp.array(np.array([r[3] for r in rows], dtype=np.uint32), dtype=wp.uint32),
        wp.array(np.array([r[4] for r in rows], dtype=np.float32)), wp.array(np.array([r[5] for r in rows], dtype=np.float32)),
        wp.array(np.array([r[0] for r in rows], dtype=np.int32), dtype=wp.int32), out])
    got = out.numpy()
    for n in (2, 3, 4):
        sel = [k for k, r in enumerate(rows) if r[0] == n]
        width = 2 if n == 2 else 3
        assert_f32(got[sel, :width], [rows[k][6] for k in sel], f"curlnoise {n}-D")


@wp.kernel
def k_state_forms(states: wp.array(dtype=wp.uint32), seeds: wp.array(dtype=wp.int32),
                  offs: wp.array(dtype=wp.int32), out: wp.array2d(dtype=float), outi: wp.array2d(dtype=wp.int32),
                  outv: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    out[i, 0] = wp.randf(states[i])                           # an array element: a copy advances
    out[i, 1] = wp.randf(wp.rand_init(seeds[i], offs[i]))     # a call's result
    outi[i, 0] = wp.randi(states[i])
    outi[i, 1] = wp.randi(states[i], 0, 1000)
    outv[i, 0] = wp.sample_unit_cube(states[i])
    s = states[i]
    out[i, 2] = wp.randf(s)                                   # a variable advances in place
    out[i, 3] = wp.randf(s)
    t = states[i]
    outi[i, 2] = wp.randi(t, 0, 1000)
    u = states[i]
    outv[i, 1] = wp.sample_unit_cube(u)


def test_states_that_are_not_variables_are_copied_as_in_warp(wp):
    """wp.randf(a[i]) (an array element or a call's result as the state) draws from a copy,
    as Warp does: the array keeps its value; a local variable advances in place."""
    cases, seeds, offs = streams("randf")
    n = len(cases)
    # The fixture's streams start at rand_init(seed, offset): computed by the daemon (checked
    # against the fixture by test_rand_init).
    first = wp.zeros((n, 2), dtype=wp.uint32)
    wp.launch(k_rand_init, dim=n, inputs=[wp.array(seeds, dtype=wp.int32), wp.array(offs, dtype=wp.int32), first])
    start = first.numpy()[:, 1].copy()
    states = wp.array(start, dtype=wp.uint32)
    out = wp.zeros((n, 4), dtype=float)
    outi = wp.zeros((n, 3), dtype=wp.int32)
    outv = wp.zeros((n, 2), dtype=wp.vec3)
    wp.launch(k_state_forms, dim=n, inputs=[states, wp.array(seeds, dtype=wp.int32), wp.array(offs, dtype=wp.int32),
                                           out, outi, outv])
    vals, _ = outs(cases)
    got = out.numpy()
    assert_f32(got[:, 0], vals[:, 0], "randf(a[i])")
    assert_f32(got[:, 1], vals[:, 0], "randf(rand_init(...))")
    assert_f32(got[:, 2:4], vals, "randf(s) twice on a variable")
    np.testing.assert_array_equal(states.numpy(), start, err_msg="the array element state must not change")
    gi = outi.numpy()
    # randi(a[i], 0, 1000) draws what randi(t, 0, 1000) draws from a variable with the same start.
    np.testing.assert_array_equal(gi[:, 1], gi[:, 2])
    assert ((0 <= gi[:, 1]) & (gi[:, 1] < 1000)).all()
    gv = outv.numpy()
    np.testing.assert_array_equal(gv[:, 0], gv[:, 1])
    assert (np.abs(gv[:, 0]) <= 0.5).all()
