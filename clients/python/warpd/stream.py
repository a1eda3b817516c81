"""The client half of a session's command stream on one device.

Launches, copies, fills and frees are appended to a pending batch and sent
in one ``Submit`` RPC when a sync point needs them (``synchronize()``,
``numpy()``, an upload into an array that pending work may touch) or when the
batch reaches ``config.max_batch_commands``. Never one RPC per launch.

A batch sent because it is full does not wait for the answer: its Submit
stays in flight while the next batch is filled (the daemon validates and
queues one batch while Python packs the next), and is waited for before
anything else is sent from this stream (the next Submit, Synchronize) and by
every ``flush()``, so Submits reach the daemon in order, one at a time, and
whatever must follow queued work (uploads, downloads, captures, module
releases: each flushes first) still does. A failure of that Submit is raised
by the call that waits for it: the next launch that fills a batch, or the
next sync point.

The batch is a list of commands entries: launches arrive already serialized
(``add_wire``, bytes made by wire.py), other commands as ``Command`` messages
(``add``) serialized at the flush. A run of identical launch entries (a
``wp.Launch`` re-launched, the same ``wp.launch`` call in a loop) is sent as
one launch with ``repeat`` set: the daemon prepares it once and runs it that
many times in a row, exactly as the separate launches would run. The Submit request's bytes are the
request's own fields followed by the entries (wire.py says why that is a
valid SubmitRequest), sent without building a SubmitRequest message.

Frees of garbage-collected arrays are queued lock-free (they may run inside a
garbage collection anywhere, even while this stream's lock is held) and are
appended at the end of the next batch: an unreachable array can only be used
by commands queued before it became unreachable.

A device has one default stream (the daemon's stream 0, which uploads and
downloads follow) and the streams wp.Stream makes (streams.py: the daemon's
streams 1 to 63 of the session on that device, each ordered on its own). A
flush of the default stream first makes it wait for what the device's other
streams were sent (a WaitStream command per stream with new work), so a
transfer or a synchronize after work on another stream sees that work, as
sync points in Warp do.

Thread-safety: all methods except ``free_later`` must be called with the
runtime's lock held.
"""

from __future__ import annotations

import collections

from . import config, wire
from .v1 import runtime_pb2


class Stream:
    def __init__(self, runtime, device: str, stream_id: int = 0):
        self._runtime = runtime
        self.device = device
        self.stream_id = stream_id
        # The sequence number of the last command the daemon acknowledged, and
        # the one the default stream last waited for (side streams).
        self.last_sequence = 0
        self.joined_sequence = 0
        self.abandoned = False  # its wp.Stream is gone (streams.py)
        # Commands entries: bytes (wire.py) or runtime_pb2.Command.
        self._batch: list = []
        self._frees: collections.deque = collections.deque()
        self._graph_frees: collections.deque = collections.deque()
        self._object_frees: collections.deque = collections.deque()
        # While a graph is captured: the commands recorded so far (graph.py).
        self._capture = None
        self._capture_refs = []
        # Whether the capture in progress is Warp's saveable kind (apic=True).
        self.capture_savable = False
        # True when commands were submitted that no Synchronize has waited for.
        self.in_flight = False
        self.submits = 0  # Submit RPCs sent, for tests and diagnostics
        # The future of a Submit sent without waiting (a full batch), if any.
        self._pending = None
        # The run of identical launches at the end of the batch: its entry
        # (batch[-1]) and how many times it was added.
        self._run_entry = None
        self._run_count = 0

    @property
    def queued(self) -> int:
        return len(self._batch)

    def add(self, keep=()) -> runtime_pb2.Command:
        """A new Command appended to the batch (or to the graph being
        captured), for the caller to fill in. While capturing, the objects in
        `keep` (the command's arrays) stay referenced until the capture ends,
        so their handles are not freed before the graph holds them."""
        if self._capture is not None:
            self._capture_refs.extend(keep)
            return self._capture.commands.add()
        if len(self._batch) >= config.max_batch_commands:
            self._flush_full()
        self._end_run()
        if self._object_frees:
            self._queue_object_frees()
        cmd = runtime_pb2.Command()
        self._batch.append(cmd)
        return cmd

    def add_wire(self, entry: bytes, keep=()):
        """Appends a serialized commands entry (wire.launch_command), like
        `add` but without a message: the launch hot path."""
        if self._capture is not None:
            self._capture_refs.extend(keep)
            # The entry is field `commands` of CreateGraphRequest too: merging
            # it appends one command.
            self._capture.MergeFromString(entry)
            return
        if entry == self._run_entry and self._run_count < wire.MAX_REPEAT and not self._object_frees:
            self._run_count += 1
            return
        batch = self._batch
        if len(batch) >= config.max_batch_commands:
            self._flush_full()
            batch = self._batch
        self._end_run()
        if self._object_frees:
            self._queue_object_frees()
        batch.append(entry)
        self._run_entry = entry
        self._run_count = 1

    def _end_run(self):
        """Writes the run of identical launches at the batch's end as one
        repeated launch; later entries start a new run."""
        if self._run_count > 1:
            self._batch[-1] = wire.repeat_launch(self._run_entry, self._run_count)
        self._run_entry = None
        self._run_count = 0

    def free_later(self, handle: int):
        """Queues a free of `handle` (safe from finalizers, without the lock)."""
        self._frees.append(handle)

    def free_graph_later(self, handle: int):
        """Queues a free of graph `handle` (safe from finalizers)."""
        self._graph_frees.append(handle)

    def free_object_later(self, handle: int):
        """Queues a free of object `handle` (a hash grid; safe from finalizers).

        Unlike an array's, an object's id is a plain number a later launch may
        still pass: the free goes before the next command added (or at the end
        of the batch), so such a launch fails as for any unknown id."""
        self._object_frees.append(handle)

    def _queue_object_frees(self):
        while self._object_frees:
            try:
                h = self._object_frees.popleft()
            except IndexError:
                break
            cmd = runtime_pb2.Command()
            cmd.free_object.object = h
            self._batch.append(cmd)

    @property
    def capturing(self) -> bool:
        return self._capture is not None

    def begin_capture(self):
        """Records commands instead of sending them; queued work goes first."""
        if self._capture is not None:
            raise RuntimeError(f"a graph capture is already active on device '{self.device}'")
        self.flush()
        self._capture = runtime_pb2.CreateGraphRequest()
        self._capture_refs = []

    def end_capture(self):
        """Stops recording; returns the recorded commands."""
        if self._capture is None:
            raise RuntimeError(f"no graph capture is active on device '{self.device}' "
                               f"(call wp.capture_begin first)")
        commands = self._capture.commands
        self._capture = None
        # Returned with the commands: the caller holds them until the daemon
        # has the graph.
        refs, self._capture_refs = self._capture_refs, []
        return commands, refs

    def begin_nested_capture(self):
        """Inside a capture: records the next commands apart (a capture_if or
        capture_while body, graph.py) until end_nested_capture; returns what
        that call restores."""
        if self._capture is None:
            raise RuntimeError(f"no graph capture is active on device '{self.device}'")
        saved = self._capture, self._capture_refs
        self._capture, self._capture_refs = runtime_pb2.CreateGraphRequest(), []
        return saved

    def end_nested_capture(self, saved):
        """Ends a nested recording: returns its (commands, refs) and resumes
        the enclosing capture."""
        commands, refs = self._capture.commands, self._capture_refs
        self._capture, self._capture_refs = saved
        return commands, refs

    def flush(self, wait: bool = False) -> bool:
        """Sends the queued commands (and frees) in one Submit; no-op when empty.

        Waits for the answer (and for a Submit still in flight) before it
        returns. With `wait`, the Submit also waits for the stream to drain
        and raises its sticky error. Returns whether a Submit was sent.
        """
        self.wait_pending()
        if self.stream_id == 0:
            self._join_side_streams()
            self.wait_pending()  # a wait that filled the batch sent it without waiting
        data = self._take_request(wait)
        if data is None:
            return False
        # The answer brings the kernel output of finished launches (all of
        # them with `wait`), printed by call_stream.
        resp = self._runtime.call_stream("Submit", data, self.device)
        self.last_sequence = resp.sequence
        return True

    def wait_for(self, other: "Stream"):
        """Queues a wait for what `other` (another stream of this session) was
        sent so far: `other` is flushed first, so the daemon knows it."""
        other.flush()
        self.add_wait(other, other.last_sequence)

    def add_wait(self, other: "Stream", sequence: int):
        """Queues a WaitStream for `other`'s commands up to `sequence` (none
        for 0: nothing was sent there)."""
        if sequence == 0:
            return
        cmd = self.add()
        cmd.wait.device = other.device
        cmd.wait.stream = other.stream_id
        cmd.wait.sequence = sequence

    def join_side_streams(self):
        """Queues, on the device's default stream (a no-op on others), waits for what was
        sent to the device's other streams since they were last joined: the commands
        queued after them run after that work (the null stream's order in Warp)."""
        if self.stream_id == 0:
            self._join_side_streams()

    def _join_side_streams(self):
        side = self._runtime.side_streams.get(self.device)
        if not side:
            return
        for other in list(side):
            if other.queued or other._pending is not None or other.last_sequence > other.joined_sequence:
                self.wait_for(other)
                other.joined_sequence = other.last_sequence
            # A wp.Stream garbage-collected (streams.py): joined, its id is free again.
            if other.abandoned and self._runtime.streams.get(self.device) is not other:
                side.remove(other)

    def _flush_full(self):
        """Sends a full batch without waiting for the answer (see the module doc)."""
        self.wait_pending()
        if self.stream_id == 0:
            # Its frees may name arrays another stream's unsent commands use.
            for other in self._runtime.side_streams.get(self.device, ()):
                other.flush()
        data = self._take_request(False)
        if data is not None:
            self._pending = self._runtime.start_stream_call("Submit", data)

    def wait_pending(self):
        """Waits for the Submit in flight, if any; raises its failure."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            self.last_sequence = self._runtime.finish_stream_call(pending, self.device).sequence

    def _take_request(self, wait: bool):
        """The serialized Submit of the batch and the queued frees (the batch
        is then empty), or None when there is nothing to send."""
        self._end_run()
        batch = self._batch
        while self._frees:
            try:
                h = self._frees.popleft()
            except IndexError:
                break
            cmd = runtime_pb2.Command()
            cmd.free.array = h
            batch.append(cmd)
        while self._graph_frees:
            try:
                h = self._graph_frees.popleft()
            except IndexError:
                break
            cmd = runtime_pb2.Command()
            cmd.free_graph.graph = h
            batch.append(cmd)
        self._queue_object_frees()
        if not batch:
            return None
        self._batch = []
        self.in_flight = not wait
        self.submits += 1
        head = runtime_pb2.SubmitRequest(session=self._runtime.session, device=self.device,
                                         stream=self.stream_id).SerializeToString()
        parts = [head]
        for c in batch:
            parts.append(c if c.__class__ is bytes else wire.command(c.SerializeToString()))
        if wait:
            parts.append(wire.SUBMIT_SYNCHRONIZE)
        return b"".join(parts)

    def synchronize(self):
        """Sends the queued commands and waits for the device stream to drain.

        One round trip: queued commands go in a Submit that also waits; with
        nothing queued, a Synchronize. Raises the stream's sticky error (e.g.
        KernelError for a fault).
        """
        if self.flush(wait=True):  # also waits for a Submit in flight
            return
        self.in_flight = False
        # The default stream: all of the device's streams (it waited for them
        # in the flush above, if it sent anything); another: only itself.
        self._runtime.call_stream("Synchronize",
                                  runtime_pb2.SynchronizeRequest(session=self._runtime.session,
                                                                 device=self.device,
                                                                 one_stream=self.stream_id != 0,
                                                                 stream=self.stream_id),
                                  self.device)

    def read_times(self, slots):
        """Waits for the stream as synchronize() does, then reads the session's
        time slots `slots` (RecordTime): [(nanoseconds, tag)] in order."""
        self.flush(wait=True)
        self.in_flight = False
        resp = self._runtime.call_stream("Synchronize",
                                         runtime_pb2.SynchronizeRequest(session=self._runtime.session,
                                                                        device=self.device,
                                                                        one_stream=self.stream_id != 0,
                                                                        stream=self.stream_id,
                                                                        read_times=list(slots)),
                                         self.device)
        return list(zip(resp.times_ns, resp.time_tags))

    def drop(self):
        """Forgets everything queued (the session is gone)."""
        self._batch = []
        self._run_entry = None
        self._run_count = 0
        self._pending = None
        self._frees.clear()
        self._graph_frees.clear()
        self._object_frees.clear()
        self._capture = None
        self.in_flight = False
