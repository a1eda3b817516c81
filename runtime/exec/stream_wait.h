// warpd runtime: a command that makes its stream wait for another stream of
// the same session (Warp's stream.wait_event / wait_stream; CUDA's
// cuStreamWaitEvent): nothing after it runs until `target` has run (or
// skipped, or dropped) its commands up to `sequence`. It runs nothing
// itself; the stream parks on it without holding a thread (stream.h).
//
//   batch.push_back(MakeStreamWait(other_stream, 42));
//
// A target stream that is gone has nothing left to wait for. The caller
// checks `sequence` <= target->submitted(): a wait for work not yet
// submitted could close a cycle of waits.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/exec/command.h"

namespace warpd::runtime {

std::unique_ptr<Command> MakeStreamWait(const std::shared_ptr<Stream>& target, uint64_t sequence);

}  // namespace warpd::runtime
