"""What the user sees while a module compiles for long.

A LoadModule that has not answered after ``wp.config.compile_progress_delay``
seconds (default 1 s) shows that it is compiling, and how long it has taken:
in a Jupyter notebook an indeterminate progress bar with the elapsed time,
updated in place, under the cell (IPython.display); elsewhere one line on
stderr (updated in place on a terminal). When the load ends the display
says how long it took (or that it failed). Faster loads show nothing.

No thread is started: the caller waits on the RPC's future with a timeout
(Runtime.call_waiting) and calls ``update`` between waits. Launches whose
module is already loaded never get here.
"""

from __future__ import annotations

import html
import sys

# Seconds between updates of the shown elapsed time.
TICK = 0.5


def _notebook_display():
    """IPython.display's display() when this process is a Jupyter kernel, else None."""
    ipython = sys.modules.get("IPython")  # imported only where IPython already runs
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        if shell is None or getattr(shell, "kernel", None) is None:  # a terminal IPython
            return None
        from IPython.display import display  # noqa: PLC0415
    except Exception:
        return None
    return display


class CompileProgress:
    """The display of one slow load: ``update(elapsed)`` shows or refreshes it,
    ``finish(elapsed, ok)`` closes it. Nothing is shown before the first update."""

    def __init__(self, what: str):
        self.what = what  # e.g. "module 'mymod' on cpu"
        self._display = None  # IPython's DisplayHandle, in a notebook
        self._stream = None  # stderr, elsewhere
        self._shown = False

    def _bundle(self, text: str, running: bool) -> dict:
        bar = '<progress style="width: 12em; vertical-align: middle"></progress> ' if running else ""
        return {"text/plain": text, "text/html": f"<div>{bar}<code>{html.escape(text)}</code></div>"}

    def update(self, elapsed: float):
        text = f"warpd: compiling {self.what}... {elapsed:.1f} s"
        try:
            if not self._shown:
                self._shown = True
                display = _notebook_display()
                if display is not None:
                    self._display = display(self._bundle(text, True), raw=True, display_id=True)
                    return
                self._stream = sys.stderr
                if self._stream is None:
                    return
                self._stream.write(text if self._tty() else f"warpd: compiling {self.what}...")
                self._stream.flush()
                return
            if self._display is not None:
                self._display.update(self._bundle(text, True), raw=True)
            elif self._stream is not None and self._tty():
                self._stream.write("\r" + text)
                self._stream.flush()
        except Exception:  # a closed stream or a display gone: the load goes on
            self._stream = None

    def finish(self, elapsed: float, ok: bool):
        if not self._shown:
            return
        text = (f"warpd: compiled {self.what} in {elapsed:.1f} s" if ok
                else f"warpd: compiling {self.what} failed after {elapsed:.1f} s")
        try:
            if self._display is not None:
                self._display.update(self._bundle(text, False), raw=True)
            elif self._stream is not None:
                if self._tty():
                    self._stream.write("\r" + text + "\n")
                else:
                    self._stream.write(f" {'done' if ok else 'failed'} in {elapsed:.1f} s\n")
                self._stream.flush()
        except Exception:
            pass

    def _tty(self) -> bool:
        try:
            return self._stream.isatty()
        except Exception:
            return False
