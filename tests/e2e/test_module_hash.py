"""Module.hash_module() and modules whose source file is gone by their first launch.

hash_module() digests what a module's kernels compute, as Warp's does: two modules
loaded from the same source under different names and files hash equal; changing a
constant, a wp.static() value, a function a kernel calls or a struct member type
changes it. Sources are read at decoration (as Warp reads them), so a module loaded
from a temporary file that is deleted before its first launch still runs."""

import os
import sys
import tempfile
from importlib import util

import numpy as np
import pytest

import warpd as wpd

TEMPLATE = """
import warpd as wp

@wp.struct
class S:
    x: {member}

C = {constant}

@wp.func
def f(v: float):
    return v * {scale}

@wp.kernel
def k(out: wp.array(dtype=float), s: S):
    out[0] = f(float(wp.static(C))) + float(s.x)
"""


def load(code, name):
    fd, path = tempfile.mkstemp(suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write(code)
    try:
        spec = util.spec_from_file_location(name, path)
        mod = util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    finally:
        os.remove(path)
    return mod


def source(member="float", constant="3", scale="2.0"):
    return TEMPLATE.format(member=member, constant=constant, scale=scale)


def test_equal_content_hashes_equal_and_changes_change_it(wp):
    base = load(source(), "hash_base")
    same = load("\n\n# moved down by a comment\n" + source(), "hash_same")
    h = wp.get_module(base.__name__).hash_module()
    assert len(h) == 64 and int(h, 16) >= 0
    assert wp.get_module(same.__name__).hash_module() == h
    for i, changed in enumerate([source(constant="4"), source(scale="2.5"), source(member="wp.float64")]):
        m = load(changed, f"hash_changed_{i}")
        assert wp.get_module(m.__name__).hash_module() != h, changed


def test_module_runs_after_its_file_is_deleted(wp):
    m = load(source(constant="5", scale="3.0"), "hash_deleted_file")
    out = wp.zeros(1, dtype=float)
    s = m.S()
    s.x = 0.5
    wp.launch(m.k, dim=1, inputs=[out, s])
    np.testing.assert_allclose(out.numpy(), [5 * 3.0 + 0.5])
