// warpd runtime: kernel output text kept until someone reads it, bounded in
// bytes and, optionally, charged to a memory account.
//
// Text printed by kernels (kernel_output.h) collects in three places: a
// repeated launch's runs, a graph replay's commands, and a stream's output
// waiting for the client. Each keeps at most `max_bytes`; with an account
// (a stream's, its session's), every kept byte is also charged there, so a
// tenant's unread output counts against its memory limit, and text whose
// charge is refused is dropped like text past the bound. Once anything was
// dropped, everything is dropped until Take, so the note Take appends stands
// where the gap is:
//   [warpd: 1234 bytes of kernel output dropped: more than 1048576 bytes were waiting to be read]
//
//   OutputBuffer out(1 << 20, session_account);
//   out.Append(command->TakeOutput());
//   std::string text = out.Take("more than 1048576 bytes were waiting to be read");
//
// Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/memory/memory_account.h"

namespace warpd::runtime {

class OutputBuffer {
 public:
  explicit OutputBuffer(size_t max_bytes, std::shared_ptr<MemoryAccount> account = nullptr)
      : max_bytes_(max_bytes), account_(std::move(account)) {}
  ~OutputBuffer() { Clear(); }
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  void Append(std::string text);

  // The kept text, then, when anything was dropped, one note: "[warpd: N
  // bytes of kernel output<of> dropped: <why>]\n", where `why` explains the
  // bound (a refused charge names the memory limit instead). Empties the
  // buffer and releases its charge.
  std::string Take(std::string_view of, std::string_view why);

  // Forgets everything, releasing the charge.
  void Clear();

  size_t size() const { return text_.size(); }
  bool empty() const { return text_.empty() && dropped_ == 0; }

 private:
  const size_t max_bytes_;
  const std::shared_ptr<MemoryAccount> account_;
  std::string text_;
  uint64_t charged_ = 0;  // bytes charged to account_: text_.size()
  uint64_t dropped_ = 0;  // bytes
  std::string refusal_;  // why a charge was refused, if one was
};

}  // namespace warpd::runtime
