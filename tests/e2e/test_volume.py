"""wp.Volume: NanoVDB grids kept by the daemon, sampled in kernels by id.

The grids are written by build/bin/warpd-make-nvdb (NanoVDB's GridBuilder
and writer, codecs none, ZIP and BLOSC) with closed-form values: a sphere's
signed distance |x| - 2 (voxel 0.25, translated), a linear field (which
trilinear interpolation reproduces exactly), i*j*k in int32 and a linear
vec3f field. Samples, gradients, lookups, stores, index <-> world maps and
Tape gradients are checked against those forms (and central differences);
allocated volumes against stores read back; hostile files (truncated,
garbage, forged sizes) fail with a clear error and the daemon keeps
serving; a freed or made-up id fails the launch.
"""

import os
import subprocess

import numpy as np
import pytest

import warpd as wp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_nvdb(tmp_path, kind, codec="none"):
    tool = os.path.join(os.path.dirname(os.environ.get("WARPD_BIN", os.path.join(ROOT, "build", "bin", "warpd"))),
                        "warpd-make-nvdb")
    if not os.path.exists(tool):
        tool = os.path.join(ROOT, "build", "bin", "warpd-make-nvdb")
    out = tmp_path / f"{kind}-{codec}.nvdb"
    subprocess.run([tool, str(out), kind, codec], check=True)
    return out.read_bytes()


SPHERE_VOXEL = 0.25
SPHERE_ORIGIN = np.array([0.5, -0.25, 1.0])


def sphere_sdf(x):
    """The sphere's SDF at world points x: |index| * 0.25 - 2 with index = (x - origin) / 0.25."""
    return np.linalg.norm((x - SPHERE_ORIGIN), axis=-1) - 2.0


@wp.kernel
def sample_world(volume: wp.uint64, points: wp.array(dtype=wp.vec3), mode: int, out: wp.array(dtype=float),
                 grads: wp.array(dtype=wp.vec3), uvws: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    uvw = wp.volume_world_to_index(volume, points[tid])
    uvws[tid] = uvw
    if mode == 0:
        out[tid] = wp.volume_sample_f(volume, uvw, wp.Volume.CLOSEST)
    else:
        g = wp.vec3(0.0)
        out[tid] = wp.volume_sample_grad_f(volume, uvw, wp.Volume.LINEAR, g)
        grads[tid] = wp.volume_index_to_world_dir(volume, g) / (0.25 * 0.25)


@pytest.mark.parametrize("codec", ["none", "zip", "blosc"])
def test_sphere_sdf_samples_match_the_closed_form(wp, tmp_path, codec):
    vol = wp.Volume.load_from_nvdb(make_nvdb(tmp_path, "sphere", codec))
    assert vol.id != 0
    info = vol.get_grid_info()
    assert info.name == "sphere" and info.type_str == "float" and info.grid_count == 1
    assert vol.dtype is wp.float32
    assert vol.get_voxel_size() == (0.25, 0.25, 0.25)
    np.testing.assert_allclose(np.array(info.translation), SPHERE_ORIGIN)
    rng = np.random.default_rng(7)
    n = 200
    # CLOSEST at voxel centres: exactly the stored float32 of the closed form.
    ijk = rng.integers(-12, 12, size=(n, 3))
    pts = ijk * SPHERE_VOXEL + SPHERE_ORIGIN
    points = wp.array(pts.astype(np.float32), dtype=wp.vec3)
    out = wp.zeros(n, dtype=float)
    grads = wp.zeros(n, dtype=wp.vec3)
    uvws = wp.zeros(n, dtype=wp.vec3)
    wp.launch(sample_world, dim=n, inputs=[vol.id, points, 0, out, grads, uvws])
    expect = (np.sqrt(((ijk * 0.25) ** 2).sum(axis=1)) - 2.0).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), expect, rtol=0, atol=1e-6)
    np.testing.assert_allclose(uvws.numpy(), ijk, atol=1e-5)
    # LINEAR inside the band: within trilinear error of the distance, and
    # the gradient (in world units) close to the unit normal (the
    # interpolant's gradient is first-order accurate: a few voxels from the
    # centre it is off by up to ~0.1).
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pts = SPHERE_ORIGIN + d * rng.uniform(1.0, 2.5, size=(n, 1))
    points = wp.array(pts.astype(np.float32), dtype=wp.vec3)
    wp.launch(sample_world, dim=n, inputs=[vol.id, points, 1, out, grads, uvws])
    np.testing.assert_allclose(out.numpy(), sphere_sdf(pts), atol=0.02)
    np.testing.assert_allclose(grads.numpy(), d, atol=0.15)
    assert np.mean(np.abs(grads.numpy() - d)) < 0.04
    # Outside the active region: the background.
    far = wp.array(np.array([[40.0, 0, 0], [0, -40.0, 3]], dtype=np.float32), dtype=wp.vec3)
    o2 = wp.zeros(2, dtype=float)
    wp.launch(sample_world, dim=2, inputs=[vol.id, far, 0, o2, wp.zeros(2, dtype=wp.vec3), wp.zeros(2, dtype=wp.vec3)])
    np.testing.assert_array_equal(o2.numpy(), [3.0, 3.0])


@wp.kernel
def linear_samples(volume: wp.uint64, uvws: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    tid = wp.tid()
    out[tid] = wp.volume_sample(volume, uvws[tid], wp.Volume.LINEAR, dtype=float)


def test_linear_field_is_reproduced_and_its_tape_gradient_matches(wp, tmp_path):
    vol = wp.Volume.load_from_nvdb(make_nvdb(tmp_path, "linear", "zip"))
    rng = np.random.default_rng(3)
    uvw = rng.uniform(-14.0, 14.0, size=(64, 3)).astype(np.float32)
    points = wp.array(uvw, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(64, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(linear_samples, dim=64, inputs=[vol.id, points, out])
    field = uvw[:, 0] + 2 * uvw[:, 1] - 3 * uvw[:, 2]
    np.testing.assert_allclose(out.numpy(), field, rtol=0, atol=1e-3)
    tape.backward(grads={out: wp.ones(64, dtype=float)})
    np.testing.assert_allclose(points.grad.numpy(), np.tile([1.0, 2.0, -3.0], (64, 1)), atol=1e-4)


@wp.kernel
def int_and_vec(ivol: wp.uint64, vvol: wp.uint64, ijk: wp.array(dtype=wp.vec3i), ints: wp.array(dtype=int),
                vecs: wp.array(dtype=wp.vec3), index: wp.array(dtype=int)):
    tid = wp.tid()
    c = ijk[tid]
    ints[tid] = wp.volume_lookup_i(ivol, c[0], c[1], c[2])
    vecs[tid] = wp.volume_lookup(vvol, c[0], c[1], c[2], dtype=wp.vec3)
    index[tid] = wp.volume_lookup_index(ivol, c[0], c[1], c[2])


def test_int_and_vec3_lookups_tiles_and_voxels(wp, tmp_path):
    ivol = wp.Volume.load_from_nvdb(make_nvdb(tmp_path, "int", "blosc"))
    vvol = wp.Volume.load_from_nvdb(make_nvdb(tmp_path, "vec", "none"))
    assert ivol.dtype is wp.int32 and vvol.dtype is wp.vec3f
    c = np.array([[1, 2, 3], [-10, 10, -5], [0, 0, 0], [11, 0, 0], [200, 5, 5]], dtype=np.int32)
    ints = wp.zeros(len(c), dtype=int)
    vecs = wp.zeros(len(c), dtype=wp.vec3)
    index = wp.zeros(len(c), dtype=int)
    wp.launch(int_and_vec, dim=len(c), inputs=[ivol.id, vvol.id, wp.array(c, dtype=wp.vec3i), ints, vecs, index])
    inside = np.all(np.abs(c) <= 10, axis=1)
    np.testing.assert_array_equal(ints.numpy(), np.where(inside, c[:, 0] * c[:, 1] * c[:, 2], 10))
    A = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=np.float32)
    expect = np.where(inside[:, None], c @ A.T, np.array([10.8, -4.13, 10.26], dtype=np.float32))
    np.testing.assert_allclose(vecs.numpy(), expect, rtol=1e-6)
    # Tiles: the leaves holding [-10, 10]^3 (origins -16, -8, 0, 8 per axis);
    # voxels: every voxel of every leaf, in volume_lookup_index's order.
    tiles = ivol.get_tiles().numpy()
    assert sorted(map(tuple, tiles)) == sorted((i, j, k) for i in (-16, -8, 0, 8) for j in (-16, -8, 0, 8)
                                               for k in (-16, -8, 0, 8))
    voxels = ivol.get_voxels().numpy()
    assert voxels.shape == (64 * 512, 3) == (ivol.get_voxel_count(), 3)
    idx = index.numpy()
    for n in range(4):
        np.testing.assert_array_equal(voxels[idx[n]], c[n])
    assert idx[4] == -1
    # The grid's bytes come back whole.
    raw = ivol.array()
    assert raw.dtype == wp.uint8 and raw.shape == (ivol.get_grid_info().size_in_bytes,)


@wp.kernel
def store_then_lookup(volume: wp.uint64, ijk: wp.array(dtype=wp.vec3i), out: wp.array(dtype=float)):
    tid = wp.tid()
    c = ijk[tid]
    wp.volume_store(volume, c[0], c[1], c[2], float(c[0] + 100 * c[1] + 10000 * c[2]))
    out[tid] = wp.volume_lookup_f(volume, c[0], c[1], c[2])


def test_allocated_volume_stores_inside_its_tiles_only(wp):
    vol = wp.Volume.allocate(min=[-3, -3, -3], max=[3, 3, 3], voxel_size=0.1, bg_value=-7.0)
    assert vol.get_tile_count() == 8
    # Every voxel of the 8 tiles is active; they sit in 8 lower and 8 upper
    # nodes (the tiles straddle the origin on every axis).
    assert vol.get_active_stats() == (8 * 512, 8, 8, 8)
    c = np.array([[1, 2, 3], [-3, -3, -3], [7, 7, 7], [9, 0, 0], [-9, 0, 0]], dtype=np.int32)
    out = wp.zeros(len(c), dtype=float)
    wp.launch(store_then_lookup, dim=len(c), inputs=[vol.id, wp.array(c, dtype=wp.vec3i), out])
    inside = np.all((c >= -8) & (c <= 7), axis=1)
    np.testing.assert_array_equal(out.numpy(), np.where(inside, c[:, 0] + 100 * c[:, 1] + 10000 * c[:, 2], -7.0))
    np.testing.assert_allclose(np.array(vol.get_grid_info().transform_matrix).reshape(3, 3), np.eye(3) * 0.1,
                               rtol=1e-6)


@pytest.mark.parametrize("cut", [0, 15, 16, 100, 191, 400, -1])
def test_truncated_files_fail_clearly_and_the_daemon_serves(wp, serving, tmp_path, cut):
    data = make_nvdb(tmp_path, "linear", "zip")
    data = data[:cut] if cut >= 0 else data[:-1]
    with pytest.raises(RuntimeError) as e:
        wp.Volume.load_from_nvdb(data)
    assert "NanoVDB" in str(e.value) or "nvdb" in str(e.value)
    serving()


def test_garbage_and_forged_sizes_fail_clearly(wp, serving, tmp_path):
    with pytest.raises(RuntimeError, match="NanoVDB"):
        wp.Volume.load_from_nvdb(b"\x00" * 4096)
    data = bytearray(make_nvdb(tmp_path, "linear", "none"))
    forged = bytearray(data)
    forged[16:24] = (1 << 60).to_bytes(8, "little")  # the grid's size in the file's metadata
    with pytest.raises(RuntimeError, match="invalid NanoVDB data"):
        wp.Volume.load_from_nvdb(bytes(forged))
    # A grid whose tree offsets point outside it.
    forged = bytearray(data)
    grid = 16 + 176 + int.from_bytes(data[16 + 136:16 + 140], "little")
    forged[grid + 672 + 24:grid + 672 + 32] = (1 << 40).to_bytes(8, "little")  # the root's offset
    with pytest.raises(RuntimeError, match="invalid NanoVDB data"):
        wp.Volume.load_from_nvdb(bytes(forged))
    serving()


@wp.kernel
def lookup_one(volume: wp.uint64, out: wp.array(dtype=float)):
    out[0] = wp.volume_lookup_f(volume, 0, 0, 0)


def test_freed_and_made_up_ids_fail_the_launch(wp, serving, tmp_path):
    vol = wp.Volume.load_from_nvdb(make_nvdb(tmp_path, "linear", "none"))
    out = wp.zeros(1, dtype=float)
    wp.launch(lookup_one, dim=1, inputs=[vol.id, out])
    assert out.numpy()[0] == 0.0
    stale = vol.id
    del vol
    for bad in (stale, 12345):
        with pytest.raises(RuntimeError, match="unknown|not a live|object"):
            wp.launch(lookup_one, dim=1, inputs=[bad, out])
            wp.synchronize()
    serving()


@pytest.mark.parametrize("codec", ["none", "zip"])
def test_save_to_nvdb_round_trips(wp, tmp_path, codec):
    vol = wp.Volume.load_from_nvdb(make_nvdb(tmp_path, "vec", "blosc"))
    path = tmp_path / f"saved-{codec}.nvdb"
    vol.save_to_nvdb(str(path), codec=codec)
    with open(path, "rb") as f:
        again = wp.Volume.load_from_nvdb(f)
    np.testing.assert_array_equal(again.array().numpy(), vol.array().numpy())
    assert again.get_grid_info().type_str == "Vec3f" and again.load_next_grid() is None
    with pytest.raises(RuntimeError, match="Unsupported codec"):
        vol.save_to_nvdb(str(path), codec="lzma")


@wp.kernel
def sample_index_values(volume: wp.uint64, points: wp.array(dtype=wp.vec3), data: wp.array(dtype=float),
                        bg: wp.array(dtype=float), out: wp.array(dtype=float)):
    tid = wp.tid()
    out[tid] = wp.volume_sample_index(volume, points[tid], wp.Volume.LINEAR, data, bg[0])


def test_index_volume_from_tiles_samples_its_data_and_differentiates(wp):
    tiles = np.array([[i, j, k] for i in (-8, 0) for j in (-8, 0) for k in (-8, 0)], dtype=np.int32)
    vol = wp.Volume.allocate_by_tiles(wp.array(tiles, dtype=wp.int32), voxel_size=1.0, bg_value=None)
    assert vol.is_index and vol.dtype is None and vol.get_voxel_count() == 8 * 512
    ijk = vol.get_voxels().numpy()
    assert len(np.unique(ijk, axis=0)) == 8 * 512 and ijk.min() == -8 and ijk.max() == 7
    field = (ijk[:, 0] + 2 * ijk[:, 1] - 3 * ijk[:, 2]).astype(np.float32)
    data = wp.array(field, dtype=float, requires_grad=True)
    bg = wp.array([-50.0], dtype=float, requires_grad=True)
    rng = np.random.default_rng(11)
    inside = rng.uniform(-7.5, 6.5, size=(40, 3))
    outside = rng.uniform(20.0, 30.0, size=(5, 3))  # every corner unallocated
    pts = np.concatenate([inside, outside]).astype(np.float32)
    points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(len(pts), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sample_index_values, dim=len(pts), inputs=[vol.id, points, data, bg, out])
    expect = np.concatenate([inside[:, 0] + 2 * inside[:, 1] - 3 * inside[:, 2], np.full(5, -50.0)])
    np.testing.assert_allclose(out.numpy(), expect, atol=1e-4)
    tape.backward(grads={out: wp.ones(len(pts), dtype=float)})
    # Each inside sample spreads weights summing to one over its 8 voxels; the
    # outside ones read the background 8 times each.
    np.testing.assert_allclose(data.grad.numpy().sum(), 40.0, rtol=1e-5)
    np.testing.assert_allclose(bg.grad.numpy()[0], 5.0, rtol=1e-6)
    np.testing.assert_allclose(points.grad.numpy()[:40], np.tile([1.0, 2.0, -3.0], (40, 1)), atol=1e-4)
    np.testing.assert_allclose(points.grad.numpy()[40:], 0.0, atol=1e-4)  # a constant: rounding only


@wp.kernel
def lookup_indices(volume: wp.uint64, ijk: wp.array(dtype=wp.vec3i), out: wp.array(dtype=int)):
    tid = wp.tid()
    out[tid] = wp.volume_lookup_index(volume, ijk[tid][0], ijk[tid][1], ijk[tid][2])


@wp.kernel
def sample_index_closest(volume: wp.uint64, uvw: wp.array(dtype=wp.vec3), data: wp.array(dtype=float),
                         out: wp.array(dtype=float)):
    tid = wp.tid()
    out[tid] = wp.volume_sample_index(volume, uvw[tid], wp.Volume.CLOSEST, data, -1.0)


def test_index_volume_from_voxels_numbers_exactly_its_voxels(wp):
    # Index-space points with repeats and a mask: the active voxels are the
    # distinct unmasked points, numbered as get_voxels() lists them.
    rng = np.random.default_rng(17)
    pts = rng.integers(-40, 40, size=(600, 3)).astype(np.int32)
    pts = np.concatenate([pts, pts[:100]])
    mask = (rng.random(len(pts)) > 0.2).astype(np.int32)
    vol = wp.Volume.allocate_by_voxels(wp.array(pts, dtype=wp.int32), voxel_size=0.5,
                                       point_mask=wp.array(mask, dtype=wp.int32))
    want = np.unique(pts[mask != 0], axis=0)
    assert vol.is_index and vol.get_grid_info().type_str == "OnIndex"
    assert vol.get_voxel_count() == len(want)
    ijk = vol.get_voxels().numpy()
    np.testing.assert_array_equal(np.unique(ijk, axis=0), want)
    # Each voxel's index is its place in get_voxels(); its neighbours off the set have none.
    active = {tuple(v) for v in ijk.tolist()}
    probe = np.concatenate([ijk, ijk + np.array([1, 0, 0]), ijk + np.array([0, 0, -1]), ijk + 1000]).astype(np.int32)
    out = wp.zeros(len(probe), dtype=int)
    wp.launch(lookup_indices, dim=len(probe), inputs=[vol.id, wp.array(probe, dtype=wp.vec3i), out])
    place = {v: i for i, v in enumerate(map(tuple, ijk.tolist()))}
    np.testing.assert_array_equal(out.numpy(), [place.get(tuple(p), -1) for p in probe.tolist()])
    assert (out.numpy()[: len(ijk)] == np.arange(len(ijk))).all()
    # Closest samples read the voxel's data, the background elsewhere.
    data = rng.normal(size=len(ijk)).astype(np.float32)
    uvw = (probe + rng.uniform(-0.4, 0.4, size=probe.shape)).astype(np.float32)
    samples = wp.zeros(len(probe), dtype=float)
    wp.launch(sample_index_closest, dim=len(probe),
              inputs=[vol.id, wp.array(uvw, dtype=wp.vec3), wp.array(data, dtype=float), samples])
    np.testing.assert_array_equal(samples.numpy(), [data[place[tuple(p)]] if tuple(p) in active else -1.0
                                                    for p in probe.tolist()])


def test_index_volume_from_world_points_rounds_to_the_nearest_voxel(wp):
    rng = np.random.default_rng(18)
    ijk = rng.integers(-20, 20, size=(300, 3))
    size, origin = 0.3, np.array([0.1, 0.2, -0.3])
    # Within 0.4 voxels of the voxel centres: round, not floor.
    world = (ijk * size + origin + rng.uniform(-0.4, 0.4, size=ijk.shape) * size).astype(np.float32)
    vol = wp.Volume.allocate_by_voxels(wp.array(world, dtype=wp.vec3), voxel_size=size, translation=tuple(origin))
    np.testing.assert_array_equal(np.unique(vol.get_voxels().numpy(), axis=0), np.unique(ijk, axis=0))
    np.testing.assert_allclose(vol.get_voxel_size(), (size, size, size), rtol=1e-6)
    with pytest.raises(RuntimeError, match="voxel_points must be contiguous"):
        wp.Volume.allocate_by_voxels(wp.array(world.astype(np.float64), dtype=wp.float64), voxel_size=size)
    with pytest.raises(RuntimeError, match="one int32 entry per voxel point"):
        wp.Volume.allocate_by_voxels(wp.array(world, dtype=wp.vec3), voxel_size=size,
                                     point_mask=wp.zeros(3, dtype=wp.int32))
