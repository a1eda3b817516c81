"""Gradient descent through a simulation with wp.Tape: aiming a ball launch.

    python examples/tape_optimization.py [--small] [--out DIR]

A ball starts at the origin with velocity v0 and flies under gravity and
linear air drag, integrated with semi-implicit Euler (one kernel launch per
step, each step writing new arrays so that the tape can replay them
backwards). The loss is the squared distance between where the ball is at
the end and a target. ``wp.Tape`` records the launches; ``tape.backward``
runs their adjoints on the daemon and yields d(loss)/d(v0), and plain
gradient descent updates v0 until the ball lands on the target.

Writes DIR/tape_optimization.png (the loss per iteration on a log scale and
some of the trajectories, drawn with matplotlib) and DIR/tape_optimization.npz
(the losses, v0 and its gradient at each iteration, and the problem's
constants).
"""

import argparse
from pathlib import Path

import numpy as np

import warpd as wp

GRAVITY = (0.0, -9.81, 0.0)
DRAG = 0.5            # 1/s: dv/dt = g - DRAG * v
TARGET = (4.0, 1.0, 1.5)
DURATION = 1.0        # s
STEPS = 50
V0_START = (2.0, 2.0, 0.0)


@wp.kernel
def step(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), gravity: wp.vec3, drag: float, dt: float,
         x_next: wp.array(dtype=wp.vec3), v_next: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    vel = v[i] + (gravity - v[i] * drag) * dt
    v_next[i] = vel
    x_next[i] = x[i] + vel * dt


@wp.kernel
def distance_loss(x: wp.array(dtype=wp.vec3), target: wp.vec3, loss: wp.array(dtype=float)):
    i = wp.tid()
    d = x[i] - target
    wp.atomic_add(loss, 0, wp.dot(d, d))


@wp.kernel
def descend(v0: wp.array(dtype=wp.vec3), grad: wp.array(dtype=wp.vec3), rate: float):
    i = wp.tid()
    v0[i] = v0[i] - grad[i] * rate


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="fewer iterations (for CI)")
    ap.add_argument("--out", type=Path, default=Path("."), help="directory for the PNG and the history (.npz)")
    ap.add_argument("--iterations", type=int, help="gradient descent steps (default 60, --small 40)")
    ap.add_argument("--rate", type=float, default=0.2, help="the learning rate")
    args = ap.parse_args()
    iterations = args.iterations or (40 if args.small else 60)
    dt = DURATION / STEPS

    wp.init()
    xs = [wp.zeros(1, dtype=wp.vec3, requires_grad=True) for _ in range(STEPS + 1)]
    vs = [wp.zeros(1, dtype=wp.vec3, requires_grad=True) for _ in range(STEPS + 1)]
    vs[0] = wp.array([V0_START], dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    target = wp.vec3(*TARGET)

    losses, v0s, grads, paths = [], [], [], []
    tape = wp.Tape()
    for it in range(iterations + 1):
        loss.zero_()
        with tape:
            for k in range(STEPS):
                wp.launch(step, dim=1, inputs=[xs[k], vs[k], wp.vec3(*GRAVITY), DRAG, dt],
                          outputs=[xs[k + 1], vs[k + 1]])
            wp.launch(distance_loss, dim=1, inputs=[xs[STEPS], target], outputs=[loss])
        tape.backward(loss)
        losses.append(float(loss.numpy()[0]))
        v0s.append(vs[0].numpy()[0].copy())
        grads.append(vs[0].grad.numpy()[0].copy())
        if it in (0, 1, 2, 4, iterations):
            paths.append((it, np.array([a.numpy()[0] for a in xs])))
        if it < iterations:
            wp.launch(descend, dim=1, inputs=[vs[0], vs[0].grad, args.rate])
        tape.reset()  # forget the launches and zero the gradients for the next iteration

    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(args.out / "tape_optimization.npz", loss=np.array(losses), v0=np.array(v0s), grad=np.array(grads),
             gravity=np.array(GRAVITY), drag=DRAG, target=np.array(TARGET), duration=DURATION, steps=STEPS,
             rate=args.rate)
    plot(losses, paths, args.out / "tape_optimization.png")
    print(f"tape_optimization: loss {losses[0]:.4g} -> {losses[-1]:.3g} in {iterations} iterations; "
          f"v0 = {np.array2string(v0s[-1], precision=4)}; wrote {args.out / 'tape_optimization.png'}")


def plot(losses, paths, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_path) = plt.subplots(1, 2, figsize=(5.12, 2.56), dpi=100)
    ax_loss.semilogy(losses, color="tab:blue", lw=1.5)
    ax_loss.set_xlabel("iteration", fontsize=8)
    ax_loss.set_ylabel("loss (m²)", fontsize=8)
    ax_loss.set_title("wp.Tape gradient descent", fontsize=8)
    cmap = plt.get_cmap("viridis")
    for n, (it, p) in enumerate(paths):
        ax_path.plot(p[:, 0], p[:, 1], color=cmap(n / max(len(paths) - 1, 1)), lw=1.2, label=f"it {it}")
    ax_path.plot([TARGET[0]], [TARGET[1]], marker="x", color="tab:red", ms=7, mew=2, ls="none", label="target")
    ax_path.set_xlabel("x (m)", fontsize=8)
    ax_path.set_ylabel("y (m)", fontsize=8)
    ax_path.set_title("trajectories (side view)", fontsize=8)
    ax_path.legend(fontsize=6, loc="lower right")
    for ax in (ax_loss, ax_path):
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    from PIL import Image

    with Image.open(path) as im:  # a palette PNG: a few KiB
        im = im.convert("RGB").quantize(64)
    im.save(path, optimize=True)


if __name__ == "__main__":
    main()
