"""Helpers shared by the e2e suites: IR inspection and source positions."""

import inspect
import os
import re


def line_of(func, text, nth=0):
    """(line, col) of the nth occurrence of `text` in func's source, 1-based and absolute."""
    lines, start = inspect.getsourcelines(func)
    seen = 0
    for i, line in enumerate(lines):
        col = line.find(text)
        if col >= 0:
            if seen == nth:
                return start + i, col + 1
            seen += 1
    raise AssertionError(f"{text!r} not in the source of {func.__name__}")


def assert_names_line(message, func, text):
    """The message names func's file and the line of `text` in it."""
    line, _ = line_of(func, text)
    path = os.path.abspath(inspect.getsourcefile(func))
    assert re.search(re.escape(path) + rf":{line}(:\d+)?", message), f"expected {path}:{line} in: {message}"


def walk(msg):
    """Every message nested in a proto message (depth first, msg included)."""
    yield msg
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        if isinstance(value, (list, tuple)) or hasattr(value, "add"):
            for v in value:
                yield from walk(v)
        else:
            yield from walk(value)


def exprs(msg, kind):
    """Every Expr under msg whose oneof kind is `kind` ("call", "name", ...)."""
    return [m for m in walk(msg)
            if type(m).__name__ == "Expr" and m.WhichOneof("kind") == kind]


def stmts(msg, kind):
    return [m for m in walk(msg)
            if type(m).__name__ == "Stmt" and m.WhichOneof("kind") == kind]


def calls(msg, callee=None):
    out = [e for e in exprs(msg, "call")]
    if callee is not None:
        out = [e for e in out if e.call.callee == callee]
    return out
