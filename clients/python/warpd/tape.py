"""``wp.Tape``: records launches, then runs their adjoints in reverse on the daemon.

As in Warp, ``with tape:`` records every ``wp.launch`` (and functions given
to :meth:`Tape.record_func`) while it runs the forward pass as usual;
``tape.backward(loss)`` seeds ``loss.grad`` with 1 and launches each
recorded kernel's adjoint in reverse order, with the gradient arrays of its
array arguments (``a.grad``, made by ``requires_grad=True``) as their
adjoints. Recording keeps a reference to the launch's arguments and costs no
round trip: the forward launches are the same batched Submit as without a
tape, and the backward launches are queued together and reach the daemon as
one batched Submit at the next sync point. The adjoint kernels are compiled
the first time a module's backward pass is needed (module.py).
"""

from __future__ import annotations

import warnings

from .array import array
from .types.struct import Struct

# The tape recording now (Warp keeps it on the runtime); wp.launch reads it.
_current = None

# ParamInfo.access bits (compiler/tir/array_access.h).
_READ, _WRITTEN, _ACCUMULATED = 1, 2, 4


def adjoint_of(a, used=None):
    """The adjoint an adjoint launch takes for argument `a` when none is given: an array's
    gradient (None without one), a struct of the same type holding its arrays' gradients,
    None for other values (zero). `used` collects {array: gradient} of what it returns."""
    if isinstance(a, array):
        if a.grad is not None:
            if used is not None:
                used[a] = a.grad
            return a.grad
        return None
    if isinstance(a, Struct) and type(a)._wp_holds_array_:
        adj = type(a)()
        for name, _t, _offset in type(a)._wp_members_:
            value = getattr(a, name, None)
            if isinstance(value, (array, Struct)):
                grad = adjoint_of(value, used)
                if grad is not None:
                    setattr(adj, name, grad)
        if used is not None:
            used[a] = adj
        return adj
    return None


def _quote(text) -> str:
    """A GraphViz string literal."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _zero_gradient(g):
    """Zeroes a gradient: an array, or the gradient arrays of a struct's adjoint."""
    if isinstance(g, array):
        g.zero_()
    elif isinstance(g, Struct):
        for name, _t, _offset in type(g)._wp_members_:
            _zero_gradient(getattr(g, name, None))


class Tape:
    """Warp's Tape: ``with tape: ...``, ``backward()``, ``gradients``, ``zero()``, ``reset()``."""

    def __init__(self):
        self.gradients: dict = {}
        self.launches: list = []
        self.scopes: list = []
        self.loss = None
        self._previous = None
        # id(root array) -> (launch index, kernel name) of the first recorded launch reading it
        self._reads: dict = {}

    @property
    def adjoints(self) -> dict:
        """The earlier name of ``gradients`` (Warp's documentation still shows it)."""
        return self.gradients

    def __enter__(self):
        global _current
        if _current is not None and _current is not self:
            raise RuntimeError("a wp.Tape is already recording; tapes do not nest")
        self._previous = _current
        _current = self
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        global _current
        _current = self._previous
        self._previous = None

    # ------------------------------------------------------------ recording

    def record_launch(self, kernel, dim, inputs, outputs, device, max_blocks=0, block_dim=256, metadata=None,
                      access=None):
        """Records one launch (wp.launch calls this while the tape records). `access`: per
        parameter (name, ParamInfo.access bits), to warn when this launch overwrites an array
        an earlier recorded launch read: the backward pass would replay that launch with the
        new values (Warp's rule: overwrite only by atomic add/sub)."""
        index = len(self.launches)
        self.launches.append((kernel, dim, max_blocks, list(inputs), list(outputs), device, block_dim,
                              metadata or {}))
        if not access:
            return
        args = [*inputs, *outputs]
        for (name, bits), a in zip(access, args):
            if not isinstance(a, array) or not bits & _WRITTEN:
                continue
            root = a._root if a._root is not None else a
            earlier = self._reads.get(id(root))
            if earlier is not None and earlier[0] < index:
                warnings.warn(
                    f"wp.Tape: launch {index} (kernel '{kernel.key}') overwrites array argument '{name}', which "
                    f"launch {earlier[0]} (kernel '{earlier[1]}') read: the backward pass replays launch "
                    f"{earlier[0]} with the new values, so its gradients are wrong. Overwrite arrays on a tape only "
                    f"with wp.atomic_add/atomic_sub, or write to a new array.", UserWarning, stacklevel=4)
        for (name, bits), a in zip(access, args):
            if isinstance(a, array) and bits & _READ:
                root = a._root if a._root is not None else a
                self._reads.setdefault(id(root), (index, kernel.key, root))

    def record_func(self, backward, arrays):
        """Records a Python function run by backward() at this point of the tape, in reverse
        order (Warp's custom backward steps); `arrays` are the arrays whose gradients it uses."""
        if not callable(backward):
            raise TypeError("Tape.record_func expects a callable backward function")
        self.launches.append(backward)
        for a in arrays:
            if isinstance(a, array) and a.grad is not None:
                self.gradients[a] = a.grad

    def record_scope_begin(self, scope_name, metadata=None):
        """Opens a named scope of the recorded launches (for visualizations)."""
        self.scopes.append((len(self.launches), scope_name, {} if metadata is None else metadata))

    def record_scope_end(self, remove_scope_if_empty=True):
        """Closes the innermost open scope; one that recorded nothing is removed."""
        depth = 0
        begin = None
        for k in range(len(self.scopes) - 1, -1, -1):
            if self.scopes[k][1] is None:
                depth += 1
            elif depth == 0:
                begin = k
                break
            else:
                depth -= 1
        if begin is None:
            raise RuntimeError("ended tape scope, but scope not present")
        if remove_scope_if_empty and begin == len(self.scopes) - 1 and self.scopes[begin][0] == len(self.launches):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.launches), None, None))

    # ------------------------------------------------------------- backward

    def get_adjoint(self, a):
        """The adjoint passed for argument `a` in a backward launch: an array's gradient (None
        without one), a struct with its arrays' gradients, None for other values (zero)."""
        return adjoint_of(a, self.gradients)

    def backward(self, loss=None, grads=None):
        """Runs the recorded launches' adjoints in reverse order.

        `loss`: a one-element array with requires_grad=True; its gradient is set to 1.
        `grads`: {array: gradient array} seeds (a vector-Jacobian product), assigned in place."""
        if loss is not None:
            if not isinstance(loss, array):
                raise TypeError(f"Tape.backward(loss) expects a wp.array, got {type(loss).__name__}")
            if loss.size != 1:
                raise RuntimeError("Can only return gradients for scalar loss functions.")
            if loss.grad is None:
                raise RuntimeError("The loss array must have requires_grad=True to compute gradients.")
            self.loss = loss
            loss.grad.fill_(1.0)
        if grads is not None:
            for a, g in grads.items():
                if a.grad is None:
                    a.grad = g
                else:
                    a.grad.assign(g)  # in place, so a captured backward pass replays with new seeds
        from .launch import launch  # noqa: PLC0415 - launch imports this module

        for entry in reversed(self.launches):
            if callable(entry):
                entry()
                continue
            kernel, dim, max_blocks, inputs, outputs, device, _block_dim, _meta = entry
            if kernel.options.get("enable_backward") is False or (
                    kernel.options.get("enable_backward") is None
                    and kernel.module.options.get("enable_backward") is False):
                warnings.warn(f"Running the tape backwards may produce incorrect gradients because recorded "
                              f"kernel {kernel.key} is configured with enable_backward=False (its adjoint is "
                              f"skipped).", UserWarning, stacklevel=2)
                continue
            adj_inputs = [self.get_adjoint(a) for a in inputs]
            adj_outputs = [self.get_adjoint(a) for a in outputs]
            launch(kernel, dim, inputs=inputs, outputs=outputs, adj_inputs=adj_inputs,
                   adj_outputs=adj_outputs, device=device, adjoint=True)

    # -------------------------------------------------------------- drawing

    def visualize(self, filename=None, simplify_graph=True, hide_readonly_arrays=False, array_labels=None,
                  choose_longest_node_name=True, ignore_graph_scopes=False, track_inputs=None,
                  track_outputs=None, track_input_names=None, track_output_names=None,
                  graph_direction="LR") -> str:
        """The recorded launches as GraphViz code (written to `filename` when given): a node per
        launch and per array, edges from the arrays a launch takes as inputs to it and from it to
        its outputs, a cluster per scope; with `simplify_graph`, consecutive launches of one
        kernel with the same arguments are one node ("repeated Nx")."""
        labels = {id(a): name for a, name in (array_labels or {}).items()}
        for names, arrays in ((track_input_names, track_inputs), (track_output_names, track_outputs)):
            for a, name in zip(arrays or (), names or ()):
                labels[id(a)] = name
        arrays: dict = {}  # id -> (node name, array)

        def array_node(a):
            if id(a) not in arrays:
                arrays[id(a)] = (f"a{len(arrays)}", a)
            return arrays[id(a)][0]

        # (label, inputs, outputs, count) per node, launches grouped when simplified
        nodes: list = []
        starts: list = []  # launch index -> node index
        for entry in self.launches:
            if callable(entry):
                label, ins, outs = f"{getattr(entry, '__name__', 'function')} (recorded function)", [], []
            else:
                label, ins, outs = entry[0].key, list(entry[3]), list(entry[4])
            key = (label, tuple(id(a) for a in ins), tuple(id(a) for a in outs))
            if simplify_graph and nodes and nodes[-1][4] == key:
                nodes[-1][3] += 1
            else:
                nodes.append([label, ins, outs, 1, key])
            starts.append(len(nodes) - 1)
        lines = ["digraph Tape {", f"  rankdir={graph_direction};", "  node [shape=box, fontname=Helvetica];"]
        # Scopes as clusters, opened and closed at their launch indices.
        marks: dict = {}
        if not ignore_graph_scopes:
            for index, name, _meta in self.scopes:
                marks.setdefault(index, []).append(name)
        emitted = set()
        depth = 1
        for n, (label, ins, outs, count, _key) in enumerate(nodes):
            first_launch = starts.index(n)
            for name in marks.get(first_launch, []) if n not in emitted else []:
                if name is None:
                    if depth > 1:
                        depth -= 1
                        lines.append("  " * depth + "}")
                else:
                    lines.append("  " * depth + f"subgraph cluster_{len(lines)} {{")
                    depth += 1
                    lines.append("  " * depth + f"label={_quote(name)};")
            emitted.add(n)
            text = label if count == 1 else f"{label} (repeated {count}x)"
            lines.append("  " * depth + f"k{n} [label={_quote(text)}, style=filled, fillcolor=lightblue];")
            for a in ins:
                if isinstance(a, array):
                    lines.append("  " * depth + f"{array_node(a)} -> k{n};")
            for a in outs:
                if isinstance(a, array):
                    lines.append("  " * depth + f"k{n} -> {array_node(a)};")
        for name in marks.get(len(self.launches), []):
            if name is None and depth > 1:
                depth -= 1
                lines.append("  " * depth + "}")
        while depth > 1:
            depth -= 1
            lines.append("  " * depth + "}")
        for node, a in arrays.values():
            dtype = getattr(a.dtype, "__name__", str(a.dtype))
            text = labels.get(id(a)) or f"array {a.shape} {dtype}"
            tooltip = f"array: dtype={dtype}, shape={a.shape}"
            lines.append(f"  {node} [label={_quote(text)}, tooltip={_quote(tooltip)}, shape=ellipse];")
        lines.append("}")
        code = "\n".join(lines)
        if filename is not None:
            with open(filename, "w") as f:
                f.write(code)
        return code

    # ------------------------------------------------------------- clearing

    def zero(self):
        """Zeroes every gradient the tape used (seeds and the loss's included, as in Warp 1.19)."""
        for g in self.gradients.values():
            _zero_gradient(g)
        if self.loss is not None and self.loss.grad is not None:
            self.loss.grad.zero_()

    def reset(self):
        """Forgets the recorded launches and zeroes the gradients."""
        self.zero()
        self.launches = []
        self.scopes = []
        self.loss = None
        self._reads = {}
