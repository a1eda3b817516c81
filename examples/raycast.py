"""Ray casting a triangle mesh with wp.Mesh and mesh_query_ray.

    python examples/raycast.py [--small] [--out DIR] [--size N]

Builds a scene as one triangle mesh with numpy (a UV sphere inside a tilted
torus), uploads it as a ``wp.Mesh`` (the daemon builds its BVH), and casts
one ray per pixel from a pinhole camera in a kernel. Each pixel gets the
hit distance along its ray and a shade (Lambert with the vertex normals
interpolated across the hit triangle, plus ambient); misses get a background gradient. Writes DIR/raycast.png (the
shaded image) and DIR/raycast_depth.npy (the depth, inf where a ray missed).
"""

import argparse
import time
from pathlib import Path

import numpy as np

import warpd as wp

# The scene and the camera (the e2e test recomputes the centre pixel's depth from these).
SPHERE_RADIUS = 0.6
TORUS_R, TORUS_r = 1.1, 0.22
TORUS_TILT = 0.45  # radians about the x axis
CAMERA_POS = (0.0, 0.0, 3.5)
FOV_Y = 0.8  # radians


def uv_sphere(radius: float, rings: int, segments: int):
    """Vertices (n, 3), triangles (m, 3) and vertex normals (n, 3) of a sphere centred at the
    origin, its poles on the y axis."""
    theta = np.pi * np.arange(1, rings) / rings
    phi = 2 * np.pi * np.arange(segments) / segments
    st, ct = np.sin(theta)[:, None], np.cos(theta)[:, None]
    ring = np.stack([st * np.cos(phi), np.broadcast_to(ct, (rings - 1, segments)), st * np.sin(phi)], -1)
    pts = np.concatenate([[[0.0, 1.0, 0.0]], ring.reshape(-1, 3), [[0.0, -1.0, 0.0]]]) * radius
    south = len(pts) - 1

    def v(i, j):  # vertex of ring i (0-based), segment j
        return 1 + i * segments + j % segments

    j = np.arange(segments)
    tris = [np.stack([np.zeros(segments, int), v(0, j + 1), v(0, j)], -1)]
    for i in range(rings - 2):
        tris.append(np.stack([v(i, j), v(i, j + 1), v(i + 1, j + 1)], -1))
        tris.append(np.stack([v(i, j), v(i + 1, j + 1), v(i + 1, j)], -1))
    tris.append(np.stack([v(rings - 2, j), v(rings - 2, j + 1), np.full(segments, south)], -1))
    return pts, np.concatenate(tris), pts / radius


def torus(R: float, r: float, nu: int, nv: int, tilt: float):
    """A torus around the y axis (tube radius r at distance R), rotated by `tilt` about x:
    vertices, triangles and vertex normals."""
    u = 2 * np.pi * np.arange(nu) / nu
    w = 2 * np.pi * np.arange(nv) / nv
    uu, ww = np.meshgrid(u, w, indexing="ij")
    nrm = np.stack([np.cos(ww) * np.cos(uu), np.sin(ww), np.cos(ww) * np.sin(uu)], -1)
    pts = np.stack([R * np.cos(uu), np.zeros_like(uu), R * np.sin(uu)], -1) + r * nrm
    c, s = np.cos(tilt), np.sin(tilt)
    rot = np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    pts, nrm = pts.reshape(-1, 3) @ rot.T, nrm.reshape(-1, 3) @ rot.T
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    a, b = i * nv + j, ((i + 1) % nu) * nv + j
    cc, d = ((i + 1) % nu) * nv + (j + 1) % nv, i * nv + (j + 1) % nv
    tris = np.concatenate([np.stack([a, cc, b], -1).reshape(-1, 3), np.stack([a, d, cc], -1).reshape(-1, 3)])
    return pts, tris, nrm


def scene(detail: int):
    """The sphere and the torus as one mesh: points (float32, (n, 3)), flat int32 indices, vertex
    normals (float32, (n, 3)) and the number of the sphere's triangles (the first ones)."""
    sp, st, sn = uv_sphere(SPHERE_RADIUS, rings=4 * detail, segments=8 * detail)
    tp, tt, tn = torus(TORUS_R, TORUS_r, nu=16 * detail, nv=6 * detail, tilt=TORUS_TILT)
    points = np.concatenate([sp, tp]).astype(np.float32)
    indices = np.concatenate([st, tt + len(sp)]).astype(np.int32).ravel()
    normals = np.concatenate([sn, tn]).astype(np.float32)
    return points, indices, normals, len(st)


@wp.kernel
def render(mesh: wp.uint64, normals: wp.array(dtype=wp.vec3), cam_pos: wp.vec3, width: int, height: int, tan_half_fov: float,
           light: wp.vec3, sphere_faces: int, depth: wp.array2d(dtype=float), color: wp.array2d(dtype=wp.vec3)):
    y, x = wp.tid()
    # A pinhole camera at cam_pos looking down -z; pixel centres, row 0 at the top.
    aspect = float(width) / float(height)
    sx = (2.0 * (float(x) + 0.5) / float(width) - 1.0) * tan_half_fov * aspect
    sy = (1.0 - 2.0 * (float(y) + 0.5) / float(height)) * tan_half_fov
    ray_dir = wp.normalize(wp.vec3(sx, sy, -1.0))

    q = wp.mesh_query_ray(mesh, cam_pos, ray_dir, 1.0e6)
    if q.result:
        depth[y, x] = q.t
        # Smooth shading: the vertex normals interpolated with the hit's barycentric coordinates
        # (mesh_eval_position's convention: u weighs the face's first vertex, v its second).
        i0 = wp.mesh_get_index(mesh, q.face * 3 + 0)
        i1 = wp.mesh_get_index(mesh, q.face * 3 + 1)
        i2 = wp.mesh_get_index(mesh, q.face * 3 + 2)
        n = wp.normalize(normals[i0] * q.u + normals[i1] * q.v + normals[i2] * (1.0 - q.u - q.v))
        if wp.dot(n, ray_dir) > 0.0:
            n = -n
        diffuse = wp.max(wp.dot(n, light), 0.0)
        # The sphere (its faces come first in the mesh) warm, the torus cool.
        base = wp.vec3(0.95, 0.55, 0.25)
        if q.face >= sphere_faces:
            base = wp.vec3(0.3, 0.6, 0.95)
        color[y, x] = base * (0.15 + 0.85 * diffuse)
    else:
        depth[y, x] = wp.inf
        g = 0.5 + 0.5 * sy / tan_half_fov
        color[y, x] = wp.vec3(0.08, 0.09, 0.12) * (1.0 - g) + wp.vec3(0.22, 0.24, 0.3) * g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="a small image and mesh (for CI)")
    ap.add_argument("--size", type=int, help="image width and height in pixels (default 256, --small 64)")
    ap.add_argument("--out", type=Path, default=Path("."), help="directory for the PNG and the depth (.npy)")
    args = ap.parse_args()
    size = args.size or (64 if args.small else 256)
    detail = 2 if args.small else 6

    wp.init()
    points_np, indices_np, normals_np, sphere_faces = scene(detail)
    points = wp.array(points_np, dtype=wp.vec3)
    indices = wp.array(indices_np, dtype=wp.int32)
    t0 = time.perf_counter()
    mesh = wp.Mesh(points=points, indices=indices)
    wp.synchronize()
    t_build = time.perf_counter() - t0

    depth = wp.zeros((size, size), dtype=float)
    color = wp.zeros((size, size), dtype=wp.vec3)
    light = wp.vec3(*(np.array([-0.5, 0.8, 0.6]) / np.linalg.norm([-0.5, 0.8, 0.6])))
    normals = wp.array(normals_np, dtype=wp.vec3)
    inputs = [mesh.id, normals, wp.vec3(*CAMERA_POS), size, size, float(np.tan(FOV_Y / 2)), light, sphere_faces,
              depth, color]
    wp.launch(render, dim=(size, size), inputs=inputs)  # compiles the kernel
    wp.synchronize()
    t0 = time.perf_counter()
    wp.launch(render, dim=(size, size), inputs=inputs)
    wp.synchronize()
    t_render = time.perf_counter() - t0

    from PIL import Image

    args.out.mkdir(parents=True, exist_ok=True)
    rgb = np.clip(color.numpy(), 0.0, 1.0) ** (1 / 2.2)  # gamma for display
    Image.fromarray((rgb * 255 + 0.5).astype(np.uint8), "RGB").save(args.out / "raycast.png", optimize=True)
    np.save(args.out / "raycast_depth.npy", depth.numpy())
    hits = np.isfinite(depth.numpy()).sum()
    print(f"raycast: {len(indices_np) // 3} triangles, BVH build {t_build * 1e3:.1f} ms, "
          f"{size}x{size} rays in {t_render * 1e3:.1f} ms ({size * size / t_render / 1e6:.2f} Mrays/s), "
          f"{hits} hits; wrote {args.out / 'raycast.png'}")


if __name__ == "__main__":
    main()
