"""Small host-side helpers from Warp's API: ScopedTimer, ScopedDevice."""

from __future__ import annotations

import builtins
import time

from . import context


class ScopedTimer:
    """Times a block: ``with wp.ScopedTimer("step"): ...``; ``elapsed`` is in milliseconds."""

    def __init__(self, name, active=True, print=True, detailed=False, dict=None, use_nvtx=False,
                 color="rapids", synchronize=False, cuda_filter=0, report_func=None,
                 skip_tape=False):
        self.name = name
        self.active = active
        self.print = print
        self.dict = dict
        self.synchronize = synchronize
        self.report_func = report_func
        self.elapsed = 0.0
        if self.dict is not None and name not in self.dict:
            self.dict[name] = []

    def __enter__(self):
        if self.active:
            if self.synchronize:
                context.synchronize()
            self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if not self.active:
            return
        if self.synchronize:
            context.synchronize()
        self.elapsed = (time.perf_counter() - self._start) * 1000.0
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.report_func is not None:
            self.report_func([], self.elapsed)
        elif self.print:
            builtins.print(f"{self.name} took {self.elapsed:.2f} ms")


class ScopedDevice:
    """Makes `device` the default device inside a ``with`` block."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        rt = context.runtime()
        self._saved = rt.default_device
        rt.default_device = rt.device(self.device)
        return rt.default_device

    def __exit__(self, *exc):
        context.runtime().default_device = self._saved
