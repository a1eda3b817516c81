"""Warp's streams and events: wp.Stream, wp.Event, wp.ScopedStream and friends.

A wp.Stream is one of the session's streams on a CUDA device of the daemon
(SubmitRequest.stream 1 to 63; the device's default stream is 0): work sent
to it is ordered on its own and may run beside the device's other streams.
An event is recorded on a stream: it stands for the work sent to that stream
so far (the daemon's sequence number of its last command, learnt by sending
the stream's batch). Waiting for an event queues a WaitStream command: the
waiting stream runs nothing after it until the recorded work has run, and
holds no daemon thread meanwhile. As in Warp, streams and events exist on
CUDA devices only.

Timing events (enable_timing, get_event_elapsed_time) are stamped by the
daemon when the stream reaches them (after the work before them finished
on the device), not on the GPU's clock. Not supported (they raise, saying
so): interprocess events, the cuda_stream handle
(warpd's streams live in the daemon), and external streams. `is_complete`
waits for the work instead of asking whether it is done. A stream's error
stays its own: a stream waiting for a failed one still runs.
"""

from __future__ import annotations

import collections
import itertools

import weakref

from . import context
from .device import Device
from .stream import Stream as _ClientStream

_MAX_STREAMS = 63  # per device and session, besides the default one


def _cuda_device(device, what: str) -> Device:
    dev = context.runtime().device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"{what}: device {dev} is not a CUDA device (warpd, as Warp, has streams and "
                           f"events on CUDA devices only)")
    return dev


def client_stream(rt, device_name: str, stream) -> _ClientStream:
    """The client stream work for `device_name` goes to: `stream` (a wp.Stream
    of that device), else the device's current one."""
    if stream is None:
        return rt.stream(device_name)
    if not isinstance(stream, Stream):
        raise TypeError(f"stream must be a wp.Stream, got {type(stream).__name__}")
    if stream.device.alias != device_name:
        raise RuntimeError(f"stream of device {stream.device} cannot run work on device {device_name}")
    return stream._client


class Event:
    """A point in a stream's work (Warp's wp.Event): see the module doc."""

    def __init__(self, device=None, enable_timing: bool = False, interprocess: bool = False):
        self.device = _cuda_device(device, "wp.Event")
        if interprocess:
            raise NotImplementedError("wp.Event(interprocess=True): warpd's events live in the daemon")
        self.enable_timing = bool(enable_timing)
        self._recorded = None  # (client stream, sequence)
        # Timing: the session's time slot in the daemon this event stamps
        # (a RecordTime command at each record), and the tag of its last stamp.
        self._slot = _take_time_slot() if self.enable_timing else None
        self._tag = 0

    def __del__(self):
        slot = getattr(self, "_slot", None)
        if slot is not None:
            self._slot = None
            _free_time_slots.append(slot)

    @property
    def is_complete(self) -> bool:
        """Whether the recorded work has run (True for an event never recorded).
        Unlike Warp's, it waits for that work: the daemon has no query of a
        stream's progress yet, so the answer is always True once it returns."""
        if self._recorded is None:
            return True
        client, sequence = self._recorded
        return _completed(client) >= sequence

    def synchronize(self):
        """Waits until the recorded work has run (raising its stream's error)."""
        if self._recorded is not None:
            rt = context.runtime()
            with rt.lock:
                self._recorded[0].synchronize()

    def _record(self, client: _ClientStream):
        if self._slot is not None:
            if client.capturing:
                raise RuntimeError("a timing event (wp.Event(enable_timing=True)) cannot be recorded in a graph "
                                   "capture on warpd: the daemon stamps its time as the stream runs, outside graphs")
            self._tag = next(_time_tags)
            cmd = client.add()
            cmd.record_time.slot = self._slot
            cmd.record_time.tag = self._tag
        client.flush()  # the daemon numbers the stream's commands: learn the last one
        self._recorded = (client, client.last_sequence)


# The daemon keeps 4096 time slots per session (RecordTime): one per live
# timing event. Tags tell a slot's stamps apart when it is reused; the slot
# freed longest ago is reused first, so a stamp of a dropped event still
# queued on a busy stream is not likely to land on a new event's slot.
_free_time_slots = collections.deque(range(4096))
_time_tags = itertools.count(1)


def _take_time_slot() -> int:
    if not _free_time_slots:
        raise RuntimeError("warpd keeps at most 4096 timing events (wp.Event(enable_timing=True)) alive at once")
    return _free_time_slots.popleft()


def _completed(client: _ClientStream) -> int:
    """How far the daemon has run `client`'s stream (by synchronizing it: the
    protocol has no query of progress, so this answers only after the work)."""
    rt = context.runtime()
    with rt.lock:
        client.synchronize()
        return client.last_sequence


def _free_id(side: list):
    used = {c.stream_id for c in side}
    return next((i for i in range(1, _MAX_STREAMS + 1) if i not in used), None)


class Stream:
    """One of the session's streams on a CUDA device (Warp's wp.Stream)."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if "cuda_stream" in kwargs:
            raise NotImplementedError("wp.Stream(cuda_stream=...): warpd's streams live in the daemon; an "
                                      "external CUDA stream cannot join them")
        self.device = _cuda_device(device, "wp.Stream")
        if priority not in (-1, 0):
            raise ValueError(f"stream priority must be 0 (low) or -1 (high), got {priority}")
        self.priority = priority
        rt = context.runtime()
        with rt.lock:
            side = rt.side_streams.setdefault(self.device.alias, [])
            free = _free_id(side)
            if free is None and any(c.abandoned for c in side):
                rt.default_stream(self.device.alias).flush()  # joins the dropped ones, freeing their ids
                free = _free_id(side)
            if free is None:
                raise RuntimeError(f"at most {_MAX_STREAMS} wp.Stream objects per device exist at once "
                                   f"in a warpd session")
            self._client = _ClientStream(rt, self.device.alias, free)
            side.append(self._client)
        self.cached_event = None

    def __del__(self):
        # Garbage collection may run anywhere, even inside a batch's update:
        # only mark the stream; the device's default stream waits for it once
        # more at its next flush and then lets its id go (stream.py).
        client = getattr(self, "_client", None)
        if client is not None and client.stream_id != 0:
            client.abandoned = True

    @property
    def cuda_stream(self):
        raise NotImplementedError("Stream.cuda_stream: warpd's streams live in the daemon, with no CUDA "
                                  "handle in this process")

    @property
    def is_capturing(self) -> bool:
        return self._client.capturing

    @property
    def is_complete(self) -> bool:
        """Whether all work sent to the stream has run. Unlike Warp's, it waits
        for that work (see Event.is_complete)."""
        _completed(self._client)
        return True

    def record_event(self, event: Event | None = None) -> Event:
        """Records `event` (a new one when None) at this point of the stream."""
        if event is None:
            event = Event(self.device)
        elif event.device != self.device:
            raise RuntimeError(f"event of device {event.device} cannot be recorded on a stream of "
                               f"device {self.device}")
        rt = context.runtime()
        with rt.lock:
            event._record(self._client)
        return event

    def wait_event(self, event: Event):
        """Work sent to this stream from now on waits for the work `event` recorded."""
        if event._recorded is None:
            return  # as CUDA: an event never recorded is complete
        rt = context.runtime()
        with rt.lock:
            client, sequence = event._recorded
            if client is not self._client:  # a stream's own earlier work is ordered already
                self._client.add_wait(client, sequence)

    def wait_stream(self, other_stream: "Stream", event: Event | None = None):
        """Work sent to this stream from now on waits for the work sent to
        `other_stream` so far."""
        if event is None:
            if other_stream.cached_event is None:
                other_stream.cached_event = Event(other_stream.device)
            event = other_stream.cached_event
        other_stream.record_event(event)
        self.wait_event(event)

    def synchronize(self):
        """Waits until the work sent to the stream has run."""
        rt = context.runtime()
        with rt.lock:
            self._client.synchronize()

    def __eq__(self, other):
        return isinstance(other, Stream) and other._client is self._client

    def __hash__(self):
        return id(self._client)

    def __repr__(self):
        return f"<warpd Stream {self._client.stream_id} on {self.device}>"


# The wp.Stream object of each client stream, for get_stream (weakly: a
# stream nobody holds goes; the default streams get one made on demand).
_wrappers: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _wrapper_of(client: _ClientStream, device: Device) -> Stream:
    w = _wrappers.get(id(client))
    if w is not None and w._client is client:
        return w
    _adopt(client)
    w = Stream.__new__(Stream)
    w.device, w.priority, w.cached_event, w._client = device, 0, None, client
    _wrappers[id(client)] = w
    return w


def _adopt(client: _ClientStream):
    """A client stream that has a wp.Stream again (a new wrapper of it): no
    longer abandoned, and among its device's streams again if it was let go."""
    if client.stream_id == 0:
        return
    client.abandoned = False
    side = client._runtime.side_streams.setdefault(client.device, [])
    if client not in side:
        side.append(client)


def get_stream(device=None) -> Stream:
    """The stream work on `device` (a CUDA device) goes to now."""
    dev = _cuda_device(device, "wp.get_stream")
    rt = context.runtime()
    return _wrapper_of(rt.stream(dev), dev)


def set_stream(stream: Stream, device=None, sync: bool = False):
    """Makes `stream` the one work on its device goes to. With `sync`, it
    first waits for the device's current stream."""
    if device is not None and context.runtime().device(device) != stream.device:
        raise RuntimeError(f"stream of device {stream.device} cannot be made current on device {device}")
    rt = context.runtime()
    with rt.lock:
        current = rt.stream(stream.device)
        if sync and current is not stream._client:
            stream._client.wait_for(current)
        _wrappers.setdefault(id(stream._client), stream)
        _adopt(stream._client)
        rt.streams[stream.device.alias] = stream._client


class ScopedStream:
    """Makes `stream` current within a `with` block (Warp's wp.ScopedStream):
    on entry (with `sync_enter`) it waits for the previous stream; on exit the
    previous stream is current again, waiting for `stream` with `sync_exit`."""

    def __init__(self, stream: Stream | None, sync_enter: bool = True, sync_exit: bool = False):
        self.stream = stream
        self.sync_enter = sync_enter
        self.sync_exit = sync_exit
        self._saved = None

    def __enter__(self):
        if self.stream is None:
            return self.stream
        rt = context.runtime()
        with rt.lock:
            self._saved = rt.stream(self.stream.device)
        from .utils import ScopedDevice  # noqa: PLC0415 - utils imports context

        self._device = ScopedDevice(self.stream.device)
        self._device.__enter__()
        set_stream(self.stream, sync=self.sync_enter)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return
        rt = context.runtime()
        with rt.lock:
            if self.sync_exit:
                self._saved.wait_for(self.stream._client)
            rt.streams[self.stream.device.alias] = self._saved
        self._device.__exit__(*exc)


def record_event(event: Event | None = None) -> Event:
    """Records `event` on the current stream of the current device."""
    return get_stream().record_event(event)


def wait_event(event: Event):
    """The current stream waits for `event`."""
    get_stream().wait_event(event)


def wait_stream(other_stream: Stream, event: Event | None = None):
    """The current stream waits for the work sent to `other_stream` so far."""
    get_stream().wait_stream(other_stream, event)


def synchronize_stream(stream_or_device=None):
    """Waits for a stream's work (a wp.Stream, or a device's current stream)."""
    if isinstance(stream_or_device, Stream):
        stream_or_device.synchronize()
    else:
        get_stream(stream_or_device).synchronize()


def synchronize_event(event: Event):
    """Waits until the work `event` recorded has run."""
    event.synchronize()


def get_event_elapsed_time(start_event: Event, end_event: Event, synchronize: bool = True) -> float:
    """Milliseconds between two recorded timing events (Warp's): the daemon
    stamped each when its stream reached it, after the work before it had
    finished on the device, so the difference is the work's time with the
    daemon's scheduling in it (microseconds). It always waits for the events'
    streams, whatever `synchronize` says; their errors are raised."""
    for e, what in ((start_event, "start_event"), (end_event, "end_event")):
        if not isinstance(e, Event):
            raise TypeError(f"{what} must be a wp.Event, got {type(e).__name__}")
        if not e.enable_timing:
            raise RuntimeError(f"{what} was made without enable_timing=True: it has no time")
        if e._recorded is None:
            raise RuntimeError(f"{what} was never recorded")
    rt = context.runtime()
    with rt.lock:
        start_client, end_client = start_event._recorded[0], end_event._recorded[0]
        if start_client is not end_client:
            start_client.synchronize()
        (s_ns, s_tag), (e_ns, e_tag) = end_client.read_times([start_event._slot, end_event._slot])
    for (ns, tag), e, what in ((s_ns, s_tag), start_event, "start_event"), ((e_ns, e_tag), end_event, "end_event"):
        if tag != e._tag or ns == 0:
            raise RuntimeError(f"{what} has no time: its stream did not run its record")
    return (e_ns - s_ns) / 1e6
