"""The Python client as a package (issue 28): `pip wheel ./clients/python` builds a wheel
with no compiled parts, which installs into a fresh venv with only its declared
dependencies (grpcio, protobuf, numpy) and runs a kernel against the daemon."""

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import numpy as np
    import warpd as wp

    assert "site-packages" in wp.__file__, wp.__file__  # the installed copy, not the source tree

    @wp.kernel
    def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    x = wp.array(np.arange(8, dtype=np.float32))
    y = wp.ones(8, dtype=float)
    wp.launch(saxpy, dim=8, inputs=[x, y, 2.0])
    print("RESULT", y.numpy().tolist())
""")


def run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert out.returncode == 0, f"{cmd}:\\n{out.stdout}\\n{out.stderr}"
    return out


def test_wheel_installs_into_a_fresh_venv_and_runs_a_kernel(wp, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(REPO / "clients" / "python", src,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
         str(tmp_path / "dist"), str(src)])
    wheels = list((tmp_path / "dist").glob("warpd-*-py3-none-any.whl"))
    assert len(wheels) == 1, wheels  # pure Python: no compiled parts
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "warpd/v1/runtime_pb2.py" in names and "warpd/v1/ir_pb2_grpc.py" in names
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))]

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    run([str(py), "-m", "pip", "install", "-q", str(wheels[0])])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_CURRENT_TEST")}
    script = tmp_path / "saxpy.py"  # kernels are read from their file
    script.write_text(SCRIPT)
    out = run([str(py), str(script)], env=env, cwd=tmp_path)
    assert "RESULT " + str([2.0 * i + 1.0 for i in range(8)]) in out.stdout, out.stdout
