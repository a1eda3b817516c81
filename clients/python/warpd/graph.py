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
        return Graph(rt, dev.alias, 0, 0)
    resp = rt.call("CreateGraph", runtime_pb2.CreateGraphRequest(session=rt.session, device=dev.alias,
                                                                 commands=commands))
    del refs  # the graph holds the arrays now
    return Graph(rt, dev.alias, resp.graph, len(commands))


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


def _condition_array(condition, what: str):
    from .array import array  # noqa: PLC0415 (graph.py is imported by array.py's users)
    from .types import int32  # noqa: PLC0415
    if not isinstance(condition, array) or condition.dtype is not int32:
        raise TypeError(f"{what}: the condition must be a Warp array of int32 with a single element")
    if condition.size < 1:
        raise ValueError(f"{what}: the condition array is empty")
    return condition


def _body_graph(rt, dev, body, kwargs, what: str):
    """A captured graph running `body` (a callback, captured here as a
    graph of its own, or a Graph), and what it keeps alive: (graph or None
    when it records nothing, refs)."""
    if body is None:
        return None, []
    if isinstance(body, Graph):
        if body.device != dev.alias:
            raise ValueError(f"{what}: the graph was captured on '{body.device}', not '{dev.alias}'")
        return (body if body.handle else None), [body]
    if not callable(body):
        raise TypeError(f"{what}: expected a callback or a Graph, got {type(body).__name__}")
    st = rt.stream(dev)
    with rt.lock:
        saved = st.begin_nested_capture()
    try:
        body(**kwargs)
    finally:
        with rt.lock:
            commands, refs = st.end_nested_capture(saved)
    if not commands:
        return None, refs
    resp = rt.call("CreateGraph", runtime_pb2.CreateGraphRequest(session=rt.session, device=dev.alias,
                                                                 commands=commands))
    graph = Graph(rt, dev.alias, resp.graph, len(commands))
    return graph, [graph]


def _run_body(body, kwargs):
    if isinstance(body, Graph):
        capture_launch(body)
    elif body is not None:
        body(**kwargs)


def capture_if(condition, on_true=None, on_false=None, stream=None, **kwargs):
    """Runs `on_true` when ``condition[0]`` is nonzero, else `on_false` (Warp's
    ``wp.capture_if``). Each is a callback (called with `kwargs`) or a
    Graph; either may be None.

    Outside a capture the condition is read now (a round trip that waits for
    the work queued before) and the chosen branch runs. In a capture on the
    condition's device, both branches are captured as graphs of their own
    and the daemon reads the condition at each replay, in stream order (a
    ``capture_if`` command)."""
    _no_stream(stream)
    _condition_array(condition, "wp.capture_if")
    rt = runtime()
    dev = rt.device(condition.device)
    if not rt.stream(dev).capturing:
        _run_body(on_true if int(condition.numpy().reshape(-1)[0]) != 0 else on_false, kwargs)
        return
    then_graph, keep_then = _body_graph(rt, dev, on_true, kwargs, "wp.capture_if")
    else_graph, keep_else = _body_graph(rt, dev, on_false, kwargs, "wp.capture_if")
    if then_graph is None and else_graph is None:
        return
    with rt.lock:
        cmd = rt.stream(dev).add(keep=[condition, *keep_then, *keep_else])
        cmd.conditional.condition = condition.handle
        cmd.conditional.then_graph = then_graph.handle if then_graph else 0
        cmd.conditional.else_graph = else_graph.handle if else_graph else 0


def capture_while(condition, while_body, stream=None, **kwargs):
    """Runs `while_body` (a callback called with `kwargs`, or a Graph) while
    ``condition[0]`` is nonzero (Warp's ``wp.capture_while``); the body's
    work is what changes it.

    Outside a capture the condition is read before each iteration (a round
    trip each). In a capture on the condition's device, the body is captured
    once as a graph of its own and the daemon runs the loop at each replay,
    reading the condition between iterations with no round trip (a
    ``capture_while`` command; a loop running past the server's launch time
    limit stops with an error)."""
    _no_stream(stream)
    _condition_array(condition, "wp.capture_while")
    if while_body is None:
        raise TypeError("wp.capture_while: while_body is required")
    rt = runtime()
    dev = rt.device(condition.device)
    if not rt.stream(dev).capturing:
        while int(condition.numpy().reshape(-1)[0]) != 0:
            _run_body(while_body, kwargs)
        return
    body, keep = _body_graph(rt, dev, while_body, kwargs, "wp.capture_while")
    if body is None:
        raise ValueError("wp.capture_while: the body recorded no work, so the loop could never end")
    with rt.lock:
        cmd = rt.stream(dev).add(keep=[condition, *keep])
        cmd.conditional.condition = condition.handle
        cmd.conditional.then_graph = body.handle
        cmd.conditional.loop = True


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
