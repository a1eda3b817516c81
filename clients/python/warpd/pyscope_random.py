"""Warp's random-number and noise builtins in Python scope: wp.rand_init, wp.randf,
wp.randi, wp.randu, wp.randn, wp.sample_*, wp.poisson, wp.noise, wp.pnoise,
wp.curlnoise.

A random stream is a wp.uint32 state. In kernels each call advances the state
variable it is given; in Python scope (as in Warp) the state is a value, so a
call returns the value drawn from the next state and leaves the argument as it
was: pass ``wp.rand_init(seed)`` or an updated ``wp.randu(state)`` yourself.
The numbers are the kernels' (runtime/native/warpd/native/rand.h and noise.h,
equal to Warp 1.19's): the PCG hash of Jarzynski and Olano for the state,
float32 arithmetic in the same order for the floats.
"""

from __future__ import annotations

import numpy as np

from . import types as wt
from .pyscope_core import builtin, ignore_fp, no_match, result, type_of, value_of

f32 = np.float32
_MASK = 0xFFFFFFFF
_PI = f32(3.14159265358979323846)
_TWO_PI = f32(2) * _PI
_RANDN_EPS = f32(5.96e-8)


def _fn(f):
    """f (a float64 NumPy function) of a float32, rounded to float32 (the kernels' libm call)."""
    return lambda x: f32(f(np.float64(x)))


_log, _exp, _sqrt, _cos, _sin, _acos = (_fn(f) for f in (np.log, np.exp, np.sqrt, np.cos, np.sin,
                                                         np.arccos))


def _pow(x, y):
    return f32(np.power(np.float64(x), np.float64(y)))


def pcg_hash(x: int) -> int:
    s = (x * 747796405 + 2891336453) & _MASK
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & _MASK
    return (w >> 22) ^ w


class _Stream:
    """A state that advances as a kernel's state variable does."""

    def __init__(self, state: int):
        self.state = state & _MASK

    def bits(self) -> int:
        self.state = pcg_hash(self.state)
        return self.state

    def uniform(self):
        return f32(self.bits() >> 8) * f32(1.0 / 16777216.0)

    def uniform_in(self, low, high):
        return (high - low) * self.uniform() + low


def _state(name, args):
    """The uint32 state argument (args[0]); Warp's error for anything else."""
    if type_of(args[0]) is not wt.uint32:
        raise no_match(name, args)
    return _Stream(int(value_of(args[0], wt.uint32)))


def _scalars(name, args, types):
    if len(args) != len(types) or any(type_of(a) is not t for a, t in zip(args, types)):
        raise no_match(name, args)
    return [value_of(a, t)[()] for a, t in zip(args, types)]


def _uint32(x):
    return result(wt.uint32, x)


@builtin
def rand_init(seed, offset=None):
    """A random stream for `seed` (and `offset`: decorrelated streams of one seed), a wp.uint32."""
    if offset is None:
        (s,) = _scalars("rand_init", (seed,), (wt.int32,))
        return _uint32(pcg_hash(int(s) & _MASK))
    s, o = _scalars("rand_init", (seed, offset), (wt.int32, wt.int32))
    return _uint32(pcg_hash((int(s) + pcg_hash(int(o) & _MASK)) & _MASK))


@builtin
def randu(state, low=None, high=None):
    """The next 32 random bits (a wp.uint32), or low + bits mod (high - low) (modulo 2^32)."""
    args = (state,) if low is None and high is None else (state, low, high)
    st = _state("randu", args)
    if len(args) == 1:
        return _uint32(st.bits())
    lo, hi = (int(v) for v in _scalars("randu", args[1:], (wt.uint32, wt.uint32)))
    span = (hi - lo) & _MASK
    bits = st.bits()
    return _uint32(((bits % span if span else 0) + lo) & _MASK)


@builtin
def randi(state, low=None, high=None):
    """The next 32 random bits as an int32, or low + bits mod (high - low) (modulo 2^32)."""
    args = (state,) if low is None and high is None else (state, low, high)
    st = _state("randi", args)
    if len(args) == 1:
        v = st.bits()
    else:
        lo, hi = (int(v) & _MASK for v in _scalars("randi", args[1:], (wt.int32, wt.int32)))
        span = (hi - lo) & _MASK
        bits = st.bits()
        v = ((bits % span if span else 0) + lo) & _MASK
    return result(wt.int32, v - (1 << 32) if v >= 1 << 31 else v)


@builtin
@ignore_fp
def randf(state, low=None, high=None):
    """A float32 uniform on [0, 1) in steps of 2^-24, or (high - low) * that + low."""
    args = (state,) if low is None and high is None else (state, low, high)
    st = _state("randf", args)
    if len(args) == 1:
        return result(wt.float32, st.uniform())
    lo, hi = _scalars("randf", args[1:], (wt.float32, wt.float32))
    return result(wt.float32, st.uniform_in(lo, hi))


def _randn(st):
    u_radius = st.uniform()
    u_angle = st.uniform()
    return _sqrt(f32(-2) * _log(u_radius + _RANDN_EPS)) * _cos(_TWO_PI * u_angle)


@builtin
@ignore_fp
def randn(state):
    """A standard normal float32 (Box-Muller on two uniforms)."""
    return result(wt.float32, _randn(_state("randn", (state,))))


# ------------------------------------------------------------ Poisson

_LOG_GAMMA_SERIES = tuple(f32(c) for c in (8.33333358e-02, -2.77777785e-03, 7.93650805e-04,
                                           -5.95238118e-04, 8.41750822e-04, -1.91752694e-03,
                                           6.41025649e-03, -2.95506530e-02, 1.79644376e-01,
                                           -1.39243221e+00))


def _to_uint32(x) -> int:
    """float32 to uint32 with saturation (NaN gives 0), as the kernels convert."""
    if x != x:
        return 0
    if x <= 0:
        return 0
    if x >= f32(4294967295.0):
        return _MASK
    return int(x)


def _log_gamma(x):
    if x == f32(1) or x == f32(2):
        return f32(0)
    n = _to_uint32(f32(7) - x) if x < f32(7) else 0
    z = x + f32(n)
    inv_z2 = (f32(1) / z) * (f32(1) / z)
    poly = _LOG_GAMMA_SERIES[9]
    for c in reversed(_LOG_GAMMA_SERIES[:9]):
        poly = poly * inv_z2
        poly = poly + c
    lg = poly / z + f32(0.5) * f32(1.83787704) + (z - f32(0.5)) * _log(z) - z
    for _ in range(n):
        lg = lg - _log(z - f32(1))
        z = z - f32(1)
    return lg


def _poisson_multiplication(st, lam):
    limit = _exp(-lam)
    product = f32(1)
    count = 0
    while True:
        product = product * st.uniform()
        if not product > limit:
            return count
        count += 1


def _poisson_ptrs(st, lam):
    slam = _sqrt(lam)
    loglam = _log(lam)
    b = f32(0.931) + f32(2.53) * slam
    a = f32(-0.059) + f32(0.02483) * b
    inv_alpha = f32(1.1239) + f32(1.1328) / (b - f32(3.4))
    v_r = f32(0.9277) - f32(3.6224) / (b - f32(2))
    while True:
        u = st.uniform() - f32(0.5)
        v = st.uniform()
        us = f32(0.5) - abs(u)
        k = np.floor((f32(2) * a / us + b) * u + lam + f32(0.43))
        if us >= f32(0.07) and v <= v_r:
            return _to_uint32(k)
        if k < 0 or (us < f32(0.013) and v > us):
            continue
        if _log(v) + _log(inv_alpha) - _log(a / (us * us) + b) <= -lam + k * loglam - _log_gamma(k + f32(1)):
            return _to_uint32(k)


@builtin
@ignore_fp
def poisson(state, lam):
    """A Poisson-distributed wp.uint32 with mean lam (0 for lam <= 0 or NaN)."""
    args = (state, lam)
    st = _state("poisson", args)
    (lam,) = _scalars("poisson", args[1:], (wt.float32,))
    if lam >= f32(10):
        return _uint32(_poisson_ptrs(st, lam))
    if lam == f32(0):
        return _uint32(0)
    return _uint32(_poisson_multiplication(st, lam))


# ------------------------------------------------------------ samples of shapes

def _sampler(name, length, draw):
    def fn(state):
        st = _state(name, (state,))
        with np.errstate(all="ignore"):
            return result(wt.vector(length, wt.float32), np.array(draw(st), dtype=np.float32))

    fn.__doc__ = f"wp.{name}(state): a uniform sample (a vec{length}f)."
    return builtin(fn, name=name)


def _triangle(st):
    r = _sqrt(st.uniform())
    return [f32(1) - r, st.uniform() * r]


def _ring(st):
    theta = st.uniform_in(f32(0), _TWO_PI)
    return [_cos(theta), _sin(theta)]


def _disk(st):
    r = _sqrt(st.uniform())
    theta = st.uniform_in(f32(0), _TWO_PI)
    return [r * _cos(theta), r * _sin(theta)]


def _sphere(st, full, solid):
    u = st.uniform()
    phi = _acos(f32(1) - f32(2) * u) if full else _acos(f32(1) - u)
    theta = st.uniform_in(f32(0), _TWO_PI)
    r = _pow(st.uniform(), f32(1) / f32(3)) if solid else None
    sin_phi = _sin(phi)
    v = [_cos(theta) * sin_phi, _sin(theta) * sin_phi, _cos(phi)]
    if solid:
        v = [r * _cos(theta) * sin_phi, r * _sin(theta) * sin_phi, r * _cos(phi)]
    return v


sample_triangle = _sampler("sample_triangle", 2, _triangle)
sample_unit_ring = _sampler("sample_unit_ring", 2, _ring)
sample_unit_disk = _sampler("sample_unit_disk", 2, _disk)
sample_unit_sphere_surface = _sampler("sample_unit_sphere_surface", 3, lambda s: _sphere(s, True, False))
sample_unit_sphere = _sampler("sample_unit_sphere", 3, lambda s: _sphere(s, True, True))
sample_unit_hemisphere_surface = _sampler("sample_unit_hemisphere_surface", 3,
                                          lambda s: _sphere(s, False, False))
sample_unit_hemisphere = _sampler("sample_unit_hemisphere", 3, lambda s: _sphere(s, False, True))
sample_unit_square = _sampler("sample_unit_square", 2, lambda s: [s.uniform() - f32(0.5) for _ in range(2)])
sample_unit_cube = _sampler("sample_unit_cube", 3, lambda s: [s.uniform() - f32(0.5) for _ in range(3)])


# ------------------------------------------------------------ Perlin noise

_PRIMES = (73856093, 19349663, 53471161, 10000019)


def _fade(t):
    return t * t * t * (t * (t * f32(6) - f32(15)) + f32(10))


def _fade_derivative(t):
    return f32(30) * t * t * (t * (t - f32(2)) + f32(1))


def _blend(a0, a1, t):
    return (a1 - a0) * _fade(t) + a0


def _int32(x: int) -> int:
    x &= _MASK
    return x - (1 << 32) if x >= 1 << 31 else x


def _cell(x):
    """(floor(x) as int32, saturated like the kernels' conversion; x - floor(x))."""
    f = np.floor(x)
    if f != f:
        i = 0
    elif f <= -2147483648.0:
        i = -2147483648
    elif f >= 2147483647.0:
        i = 2147483647
    else:
        i = int(f)
    return i, x - f


def _corner_gradient(state, corner):
    n = len(corner)
    h = (corner[n - 1] * _PRIMES[n - 1] + state) & _MASK
    for k in range(n - 2, -1, -1):
        h ^= (corner[k] * _PRIMES[k]) & _MASK
    st = _Stream(h)
    if n == 1:
        return [st.uniform_in(f32(-1), f32(1))]
    g = [st.uniform() - f32(0.5) for _ in range(n)]
    len_sq = g[0] * g[0]
    for k in range(1, n):
        len_sq = len_sq + g[k] * g[k]
    length = _sqrt(len_sq)
    return [c / length if length > 0 else f32(0) for c in g]


def _corner(state, lower, upper, offset, c):
    n = len(lower)
    corner, d = [], []
    for k in range(n):
        up = (c >> k) & 1
        corner.append(upper[k] if up else lower[k])
        d.append(offset[k] - f32(1) if up else offset[k])
    g = _corner_gradient(state, corner)
    v = d[0] * g[0]
    for k in range(1, n):
        v = v + d[k] * g[k]
    return v, g


def _perlin(state, lower, upper, offset):
    n = len(lower)
    v = [_corner(state, lower, upper, offset, c)[0] for c in range(1 << n)]
    for k in range(n):
        v = [_blend(v[2 * j], v[2 * j + 1], offset[k]) for j in range(1 << (n - 1 - k))]
    return v[0]


def _perlin_gradient(state, lower, upper, offset):
    n = len(lower)
    corners = [_corner(state, lower, upper, offset, c) for c in range(1 << n)]
    v = [c[0] for c in corners]
    dv = [list(c[1]) for c in corners]
    for k in range(n):
        t = offset[k]
        nv, ndv = [], []
        for j in range(1 << (n - 1 - k)):
            a0, a1 = v[2 * j], v[2 * j + 1]
            slope = (a1 - a0) * _fade_derivative(t)
            ndv.append([(dv[2 * j + 1][m] - dv[2 * j][m]) * _fade(t) + slope * (f32(1) if m == k else f32(0))
                        + dv[2 * j][m] for m in range(n)])
            nv.append(_blend(a0, a1, t))
        v, dv = nv, ndv
    return dv[0]


def _open_cell(x):
    cells = [_cell(c) for c in x]
    lower = [i for i, _ in cells]
    return lower, [_int32(i + 1) for i in lower], [o for _, o in cells]


def _c_mod(a: int, b: int) -> int:
    if b == 0 or b == -1:
        return 0
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q
    return a - q * b


def _periodic_cell(x, period):
    lower, upper, offset = [], [], []
    for c, p in zip(x, period):
        i, o = _cell(c)
        lo = _c_mod(i, p)
        lower.append(lo)
        upper.append(_c_mod(_int32(lo + 1), p))
        offset.append(o)
    return lower, upper, offset


def _point(x, aliases, name):
    """The point argument, whatever Warp names it in the overload (x, xy, xyz or xyzt)."""
    given = [v for k, v in aliases.items() if k in ("xy", "xyz", "xyzt")]
    if len(given) + (x is not None) != 1 or len(aliases) != len(given):
        raise TypeError(f"wp.{name}() takes one point argument (x, xy, xyz or xyzt), got "
                        f"{['x'] * (x is not None) + sorted(aliases)}")
    return x if x is not None else given[0]


def _noise_point(name, args):
    """(state, the coordinates as float32 scalars) of a noise call; Warp's error otherwise."""
    if type_of(args[0]) is not wt.uint32:
        raise no_match(name, args)
    t = type_of(args[1])
    if t is wt.float32:
        return int(value_of(args[0], wt.uint32)), [value_of(args[1], t)[()]]
    if t in (wt.vec2f, wt.vec3f, wt.vec4f):
        return int(value_of(args[0], wt.uint32)), list(value_of(args[1], t))
    raise no_match(name, args)


@builtin
@ignore_fp
def noise(state, x=None, **point):
    """Perlin noise of a float32 or a vec2f/vec3f/vec4f point (0 at lattice points)."""
    x = _point(x, point, "noise")
    s, p = _noise_point("noise", (state, x))
    return result(wt.float32, _perlin(s, *_open_cell(p)))


@builtin
@ignore_fp
def pnoise(state, x=None, *periods, **named):
    """Periodic Perlin noise: the lattice index along each axis wraps to i % period
    (px, py, pz, pt)."""
    x = _point(x, {k: v for k, v in named.items() if k not in ("px", "py", "pz", "pt")}, "pnoise")
    periods = periods + tuple(named[k] for k in ("px", "py", "pz", "pt") if k in named)
    args = (state, x, *periods)
    s, p = _noise_point("pnoise", args[:2])
    if len(periods) != len(p) or any(type_of(q) is not wt.int32 for q in periods):
        raise no_match("pnoise", args)
    period = [int(value_of(q, wt.int32)) for q in periods]
    return result(wt.float32, _perlin(s, *_periodic_cell(p, period)))


@builtin
@ignore_fp
def curlnoise(state, xy=None, octaves=None, lacunarity=2.0, gain=0.5, **point):
    """Divergence-free noise: the rotated noise gradient in 2-D, the curl of three noise
    potentials in 3-D and 4-D (the 4th coordinate is time), summed over octaves."""
    x = _point(None, {"xy": xy, **point} if xy is not None else point, "curlnoise")
    if octaves is None:
        octaves = wt.uint32(1)  # Warp's default
    args = (state, x, octaves, lacunarity, gain)
    s, p = _noise_point("curlnoise", args[:2])
    if len(p) == 1 or type_of(octaves) is not wt.uint32 or type_of(lacunarity) is not wt.float32 \
            or type_of(gain) is not wt.float32:
        raise no_match("curlnoise", args)
    octaves = int(value_of(octaves, wt.uint32))
    lac, gain = value_of(lacunarity, wt.float32)[()], value_of(gain, wt.float32)[()]
    n = len(p)
    fields = 1 if n == 2 else 3
    sums = [[f32(0)] * n for _ in range(fields)]
    freq, amplitude = f32(1), f32(1)
    for _ in range(octaves):
        for f in range(fields):
            if f > 0:
                s = pcg_hash((s + pcg_hash(10019689 if f == 1 else 13112221)) & _MASK)
            g = _perlin_gradient(s, *_open_cell([freq * c for c in p]))
            sums[f] = [sums[f][k] + amplitude * g[k] for k in range(n)]
        amplitude = amplitude * gain
        freq = freq * lac
    if n == 2:
        return result(wt.vec2f, np.array([-sums[0][1], sums[0][0]], dtype=np.float32))
    s0, s1, s2 = sums
    return result(wt.vec3f, np.array([s2[1] - s1[2], s0[2] - s2[0], s1[0] - s0[1]], dtype=np.float32))


__all__ = ["rand_init", "randu", "randi", "randf", "randn", "poisson", "sample_triangle",
           "sample_unit_ring", "sample_unit_disk", "sample_unit_sphere_surface", "sample_unit_sphere",
           "sample_unit_hemisphere_surface", "sample_unit_hemisphere", "sample_unit_square",
           "sample_unit_cube", "noise", "pnoise", "curlnoise"]
