"""The client side of an object the daemon keeps for the session (a HashGrid, a Bvh, ...):
its id, freed in stream order when the Python object goes.

The free is queued on the device stream before the next command (stream.py), since a
later launch can still pass the id as a number; a freed or forged id in a kernel is
the daemon's "unknown object" fault, never a stale read (docs/launch_abi.md).
"""

from __future__ import annotations


class ServerObject:
    """Base of the classes of server-side objects: `id` (0 or None: none), `_rt` and
    `_stream` (the runtime and device stream the object was made on)."""

    id = None

    def __del__(self):
        h = getattr(self, "id", None)
        if not h:
            return
        self.id = None
        try:
            if not self._rt.closed:
                self._stream.free_object_later(h)
        except Exception:  # noqa: BLE001 - interpreter shutdown: the session frees it
            pass
