"""Graph capture (Warp's ``wp.capture_begin``/``capture_end``/``capture_launch``).

Between ``capture_begin`` and ``capture_end`` the launches, copies and fills
of a device's stream are recorded instead of sent; ``capture_end`` sends them
once (``CreateGraph``): the daemon checks them, resolves every handle and
packs every argument block, and keeps the result as a graph of the session.
``capture_launch(graph)`` then queues ONE command that runs all of them, with
no per-launch RPC, validation or allocation. Nothing captured runs until a
replay. A graph is freed when its Python object goes (in stream order, after
the replays queued before) or with the session.

Arrays the graph uses stay alive as long as the graph, whatever happens to
their Python objects.
"""

from __future__ import annotations

from .context import runtime
from .v1 import runtime_pb2


class Graph:
    """A captured graph (returned by ``capture_end``)."""

    def __init__(self, rt, device: str, handle: int, commands: int):
        self._runtime = rt
        self._session = rt.session
        self.device = device
        self.handle = handle  # 0: an empty capture (replays do nothing)
        self.commands = commands

    def __repr__(self):
        return f"Graph(device={self.device!r}, commands={self.commands})"

    def __del__(self):
        rt = getattr(self, "_runtime", None)
        if rt is None or not self.handle or rt.session != self._session:
            return
        try:
            rt.stream(self.device).free_graph_later(self.handle)
        except Exception:  # interpreter shutdown
            pass


def _no_stream(stream):
    if stream is not None:
        raise NotImplementedError("warpd has no explicit streams yet: capture uses the device's stream "
                                  "(leave stream=None)")


def capture_begin(device=None, stream=None, force_module_load=None, external=False, apic=False):
    """Starts recording the launches, copies and fills of `device`'s stream.

    Work queued before this call is sent first, so it is not part of the
    graph. `force_module_load` needs nothing here (modules load when a kernel
    is first launched); `external` captures are not supported. `apic`
    (Warp's saveable capture) is recorded for what cannot be saved
    (HashGrid.build refuses it).
    """
    _no_stream(stream)
    if external:
        raise NotImplementedError("external graph capture is not supported by warpd")
    rt = runtime()
    dev = rt.device(device)
    with rt.lock:
        rt.stream(dev).begin_capture()
        rt.stream(dev).capture_savable = bool(apic)


def capture_end(device=None, stream=None) -> Graph:
    """Ends the capture on `device` and returns its graph (nothing has run)."""
    _no_stream(stream)
    rt = runtime()
    dev = rt.device(device)
    with rt.lock:
        commands, refs = rt.stream(dev).end_capture()
    if not commands:
        return Graph(rt, dev.name, 0, 0)
    resp = rt.call("CreateGraph", runtime_pb2.CreateGraphRequest(session=rt.session, device=dev.name,
                                                                 commands=commands))
    del refs  # the graph holds the arrays now
    return Graph(rt, dev.name, resp.graph, len(commands))


def capture_launch(graph: Graph, stream=None):
    """Queues one replay of `graph` on its device's stream."""
    _no_stream(stream)
    if not isinstance(graph, Graph):
        raise TypeError(f"wp.capture_launch expects a graph from wp.capture_end, got {type(graph).__name__}")
    if not graph.handle:
        return
    rt = runtime()
    if rt.session != graph._session:
        raise RuntimeError("this graph belongs to an earlier session of the daemon (captured before "
                           "wp.init()/reconnect); capture it again")
    with rt.lock:
        rt.stream(graph.device).add().replay.graph = graph.handle


class ScopedCapture:
    """``with wp.ScopedCapture() as capture: ...`` then ``wp.capture_launch(capture.graph)``."""

    def __init__(self, device=None, stream=None, force_module_load=None, external=False, apic=False):
        self.apic = apic
        self.device = device
        self.stream = stream
        self.force_module_load = force_module_load
        self.external = external
        self.graph = None
        self.active = False

    def __enter__(self):
        capture_begin(self.device, self.stream, self.force_module_load, self.external, apic=self.apic)
        self.active = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.active:
            return False
        self.active = False
        graph = capture_end(self.device, self.stream)
        if exc_type is None:
            self.graph = graph
        return False
