"""A granular (DEM) particle simulation with neighbours found through wp.HashGrid.

    python examples/particles.py [--small] [--out DIR]

A block of spheres is thrown sideways onto the ground: gravity, penalty
contacts between particles (a spring and a damper along the contact normal,
viscous friction capped by Coulomb's law) and a frictionless ground. Every
step rebuilds a ``wp.HashGrid`` over the positions; the force kernel visits
each particle's neighbours with ``hash_grid_query``; semi-implicit Euler
integrates. The contact forces between two particles are equal and opposite
and the ground pushes only vertically, so the total horizontal momentum stays
what it was at the start while the pile falls, collides and settles.

Writes DIR/particles.png (a contact sheet of frames, an oblique side view,
particles coloured by their starting layer) and DIR/particles.npz (for each
frame: time, positions, velocities and each particle's number of contacts as
the kernel counted them, plus the simulation's parameters).
"""

import argparse
import time
from pathlib import Path

import numpy as np

import warpd as wp


@wp.kernel
def contact_forces(grid: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), radius: float,
                   k_n: float, k_d: float, k_t: float, mu: float, k_ground: float, kd_ground: float,
                   f: wp.array(dtype=wp.vec3), contacts: wp.array(dtype=int)):
    i = wp.tid()
    xi = x[i]
    vi = v[i]
    force = wp.vec3(0.0)
    count = int(0)
    for j in wp.hash_grid_query(grid, xi, 2.0 * radius):
        if j != i:
            d = xi - x[j]
            dist = wp.length(d)
            if dist < 2.0 * radius and dist > 0.0:
                n = d / dist
                vrel = vi - v[j]
                vn = wp.dot(n, vrel)
                fn = k_n * (2.0 * radius - dist) - k_d * vn
                vt = vrel - n * vn
                ft = vt * (-k_t)
                ft_len = wp.length(ft)
                cap = mu * wp.abs(fn)
                if ft_len > cap:
                    ft = ft * (cap / ft_len)
                force = force + n * fn + ft
                count += 1
    # The ground (y = 0): a spring and a damper along y only, no friction.
    pen = radius - xi[1]
    if pen > 0.0:
        force = force + wp.vec3(0.0, k_ground * pen - kd_ground * vi[1], 0.0)
    f[i] = force
    contacts[i] = count


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
              inv_mass: float, gravity: wp.vec3, dt: float):
    i = wp.tid()
    vel = v[i] + (f[i] * inv_mass + gravity) * dt
    v[i] = vel
    x[i] = x[i] + vel * dt


def initial_block(nx: int, ny: int, nz: int, radius: float, seed: int = 7):
    """Particles on a jittered lattice (spacing 2.1 radii: no contacts yet), the block's lowest
    centres 0.5 above the ground, centred on x = -0.4, z = 0."""
    s = 2.1 * radius
    i, j, k = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    p = np.stack([i, j, k], -1).reshape(-1, 3).astype(np.float64) * s
    p += np.random.default_rng(seed).uniform(-0.02, 0.02, p.shape) * radius
    p -= [p[:, 0].mean() + 0.4, p[:, 1].min() - 0.3 - radius, p[:, 2].mean()]
    return p.astype(np.float32)


def draw_frames(frames, layer, radius, tile, cols):
    """A contact sheet (PIL image): each frame in an oblique side view, farther particles first."""
    from PIL import Image, ImageDraw

    rows = (len(frames) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * tile, rows * tile), (24, 26, 32))
    palette = np.array([[66, 135, 245], [80, 200, 170], [240, 200, 80], [235, 110, 80]], float)
    colors = palette[np.minimum((layer * len(palette)).astype(int), len(palette) - 1)]
    # The world window: x in [-1.3, 1.7], y in [-0.25, 2.75] (before the oblique shift).
    scale = tile / 3.0
    for f, (t, p) in enumerate(frames):
        img = Image.new("RGB", (tile, tile), (24, 26, 32))
        draw = ImageDraw.Draw(img)
        ground_y = tile - 0.25 * scale
        draw.rectangle([0, ground_y, tile, tile], fill=(52, 56, 66))
        order = np.argsort(p[:, 2])  # larger z is nearer the viewer: drawn last
        sx = (p[:, 0] + 1.3 + 0.3 * p[:, 2]) * scale
        sy = ground_y - (p[:, 1] + 0.15 * p[:, 2]) * scale
        shade = np.clip(0.75 + 0.5 * p[:, 2], 0.45, 1.0)
        rr = max(radius * scale, 0.8)
        for i in order:
            c = tuple(int(v) for v in colors[i] * shade[i])
            draw.ellipse([sx[i] - rr, sy[i] - rr, sx[i] + rr, sy[i] + rr], fill=c)
        draw.text((4, 2), f"t = {t:.2f} s", fill=(220, 220, 220))
        sheet.paste(img, ((f % cols) * tile, (f // cols) * tile))
    return sheet


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="a few hundred particles (for CI)")
    ap.add_argument("--out", type=Path, default=Path("."), help="directory for the PNG and the frames (.npz)")
    ap.add_argument("--frames", type=int, default=8, help="frames on the contact sheet")
    args = ap.parse_args()
    nx, ny, nz = (8, 8, 4) if args.small else (16, 16, 16)
    radius = 0.05 if args.small else 0.025
    duration, dt = 1.0, 5.0e-4
    steps = int(round(duration / dt))
    every = steps // (args.frames - 1) if args.frames > 1 else steps + 1
    mass, v0 = 1.0, (0.6, 0.0, 0.0)
    params = dict(radius=radius, k_n=1.0e5, k_d=220.0, k_t=300.0, mu=1.0, k_ground=1.0e5, kd_ground=300.0)
    gravity = (0.0, -9.8, 0.0)

    wp.init()
    x0 = initial_block(nx, ny, nz, radius)
    n = len(x0)
    x = wp.array(x0, dtype=wp.vec3)
    v = wp.array(np.tile(np.float32(v0), (n, 1)), dtype=wp.vec3)
    f = wp.zeros(n, dtype=wp.vec3)
    contacts = wp.zeros(n, dtype=int)
    grid = wp.HashGrid(64, 64, 64)

    frames = []
    t0 = time.perf_counter()
    for step in range(steps + 1):
        grid.build(x, 2.0 * radius)
        wp.launch(contact_forces, dim=n, inputs=[grid.id, x, v, *params.values(), f, contacts])
        if step % every == 0:
            frames.append((step * dt, x.numpy().copy(), v.numpy().copy(), contacts.numpy().copy()))
        if step < steps:
            wp.launch(integrate, dim=n, inputs=[x, v, f, 1.0 / mass, wp.vec3(*gravity), dt])
    wp.synchronize()
    elapsed = time.perf_counter() - t0

    args.out.mkdir(parents=True, exist_ok=True)
    layer = (x0[:, 1] - x0[:, 1].min()) / max(np.ptp(x0[:, 1]), 1e-9)
    tile = 128 if len(frames) > 4 else 256
    cols = min(4, len(frames))
    sheet = draw_frames([(t, p) for t, p, _, _ in frames], layer, radius, tile, cols)
    sheet.quantize(128).save(args.out / "particles.png", optimize=True)  # a palette PNG: a few KiB
    np.savez(args.out / "particles.npz", t=np.array([fr[0] for fr in frames]),
             x=np.stack([fr[1] for fr in frames]), v=np.stack([fr[2] for fr in frames]),
             contacts=np.stack([fr[3] for fr in frames]), x0=x0, v0=np.array(v0), mass=mass, dt=dt,
             gravity=np.array(gravity), **params)
    px = mass * frames[-1][2][:, 0].astype(np.float64).sum()
    print(f"particles: {n} particles, {steps} steps in {elapsed:.2f} s "
          f"({steps / elapsed:.0f} steps/s); momentum x {mass * n * v0[0]:.4f} -> {px:.4f}; "
          f"{frames[-1][3].sum() // 2} contacts at the end; wrote {args.out / 'particles.png'}")


if __name__ == "__main__":
    main()
