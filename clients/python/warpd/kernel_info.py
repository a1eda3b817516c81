"""``kernel.adj``: what a kernel was declared with, for programs that inspect it.

Warp 1.19 exposes its code generator's per-function state as ``kernel.adj``, and
programs (Warp's own tests among them) read a few public facts from it: the
parameters (``args``, each with ``label`` and ``type``), the Python source, and the
``wp.static()`` expressions evaluated at declaration. warpd generates code in the
daemon, so this object carries those facts only; it has none of Warp's code
generator state (``blocks``, generated C++ lines, ``build()``).
"""

from __future__ import annotations

import inspect
import textwrap


class Arg:
    """One kernel parameter: its name (``label``) and annotation (``type``)."""

    __slots__ = ("label", "type")

    def __init__(self, label, type_):
        self.label = label
        self.type = type_

    def __repr__(self):
        return f"Arg({self.label!r}, {self.type!r})"


class KernelInfo:
    def __init__(self, kernel):
        func = kernel.func
        code = func.__code__
        hints = kernel._hints
        self.key = kernel.key
        self.fun_name = func.__name__
        self.args = [Arg(name, hints.get(name)) for name in code.co_varnames[:code.co_argcount]]
        declared = kernel._declared
        src = declared.src if declared is not None else None
        self.filename = src.file if src is not None else inspect.getsourcefile(func)
        self.fun_lineno = code.co_firstlineno
        if src is not None:
            text = src.text[len("if 1:\n"):] if src.text.startswith("if 1:\n") else src.text
            self.source = textwrap.dedent(text)
        else:
            try:
                self.source = textwrap.dedent(inspect.getsource(func))
            except (OSError, TypeError):
                self.source = ""
        # The wp.static() expressions evaluated at declaration: their source text -> value
        # (one entry per distinct text, as Warp's dict); the rest (they read a loop variable
        # or a local) are evaluated when the kernel is translated.
        self.resolved_static_expressions = (
            {declared.texts[k]: v for k, v in declared.values.items() if k in declared.texts}
            if declared is not None else {})
        self.has_unresolved_static_expressions = bool(declared is not None and declared.unresolved)

    def __repr__(self):
        return f"<kernel info of {self.key}: {len(self.args)} args>"
