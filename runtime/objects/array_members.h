// warpd runtime: array members of struct values (Warp's `@wp.struct` with an
// `a: wp.array(...)` member), in kernel arguments and in array elements.
//
// In memory such a member is a 64-byte wp::array_t descriptor (112 bytes,
// wp::indexedarray_t, for an indexedarray) holding raw pointers, which only
// the daemon may ever write: a client names the arrays by their handles in
// the slot (BindArraySlot; 0: no array), and
// BindArrayMembers replaces every handle by the descriptor of the array it
// resolves to in the caller's session, checking its type and device. A
// descriptor never goes back to a client either: on their way out
// (downloads) RevealArrayMembers writes each slot back as a client writes it,
// the handles of the session's arrays the descriptors point to (0 for
// none, or for an array the client no longer has a handle of).
//
// An array whose elements hold such structs ("descriptor array") is made
// only by the daemon, from daemon-private memory (never mapped into a
// client, never made persistent, never viewed with another dtype or off its
// element grid, never copied to or from another dtype: those are checked
// where they are done), so its descriptors are the ones written here or
// copied by kernels from other descriptors. Its HeldArrays keep the arrays
// those descriptors point to alive, as Warp's Python references do: the
// ones bound into its elements, and after each launch or copy that may
// have written it, every array that command could read a descriptor from.
// Cycles (an array holding itself, two holding each other) are broken by
// the session that made them when it closes (HeldArrays::Clear).
//
//   std::vector<std::shared_ptr<const Array>> bound;
//   RETURN_IF_ERROR(BindArrayMembers(dtype, bytes, lookup, "cpu", &bound, what));
//   RETURN_IF_ERROR(array->held()->Add(bound, array.get()));
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/types/type.h"
#include "runtime/memory/memory_account.h"

namespace warpd::runtime {

class Array;

// Resolves an array handle found in a struct value (the session's handle
// table: another session's handles are NOT_FOUND).
using ArrayLookup = absl::FunctionRef<absl::StatusOr<std::shared_ptr<const Array>>(uint64_t handle)>;

// Calls fn(member type, byte offset) for every array member of struct `t` at
// any depth, `base` bytes into the value; stops at the first error.
absl::Status ForEachArrayMember(types::TypeRef t, uint64_t base,
                                absl::FunctionRef<absl::Status(types::TypeRef, uint64_t)> fn);

// Binds one array slot of type `at` (an array or indexedarray type): a
// plain array's 64-byte slot holds the array's handle in its first 8 bytes;
// an indexedarray's 112-byte slot holds the data array's handle there and
// dimension d's index array's handle at 64 + 8 d (0: that dimension is not
// indexed). The slot becomes wp::array_t / wp::indexedarray_t, whose shape
// the daemon computes (an index array's length, else data's extent); index
// arrays must be contiguous 1-D int32 arrays. Every array is appended to
// `bound`. Errors as BindArrayMembers'.
absl::Status BindArraySlot(types::TypeRef at, std::byte* slot, ArrayLookup lookup, const std::string& device,
                           std::vector<std::shared_ptr<const Array>>* bound, absl::FunctionRef<std::string()> what);

// Binds the array members of one value of type `t` (a struct that
// holds_array(), `t->size()` bytes at `value`): each slot's handle becomes
// the resolved array's descriptor (a zero handle: an empty descriptor), and
// the array is appended to `bound`. Errors name the value with what():
// NOT_FOUND for an unknown handle, INVALID_ARGUMENT for an array of another
// type or device. The slots already bound stay bound on error; callers
// discard the value then.
absl::Status BindArrayMembers(types::TypeRef t, std::byte* value, ArrayLookup lookup, const std::string& device,
                              std::vector<std::shared_ptr<const Array>>* bound,
                              absl::FunctionRef<std::string()> what);

// An array a client knows by a handle (its session's).
struct KnownArray {
  std::shared_ptr<const Array> array;
  uint64_t handle = 0;
};

// Rewrites every array-member slot of the `count` elements of type `dtype`
// at `bytes` (whole elements, back to back) as BindArraySlot reads it: a
// slot whose descriptor is exactly that of an array of `known` (its data,
// ndim, shape and strides) gets that array's handle, an indexedarray's slot
// also its index arrays' handles (by their data), and every other byte of
// the slot is zeroed. A descriptor matching none (empty, a view taken in a
// kernel, an array whose handle is gone) reads as handle 0. No pointer
// survives.
void RevealArrayMembers(types::TypeRef dtype, std::byte* bytes, uint64_t count, absl::Span<const KnownArray> known);

// The arrays a descriptor array's elements may point to (see above).
// Each entry is charged kEntryBytes to `account` (the owning session's, so a
// tenant cannot grow these sets past its memory quota: a launch given many
// descriptor arrays and many arrays makes each hold all of them); none when
// it is null (tests). Thread-safe.
class HeldArrays {
 public:
  // What one held array costs: its map slot (key and shared_ptr) with the
  // map's spare capacity.
  static constexpr uint64_t kEntryBytes = 64;

  explicit HeldArrays(std::shared_ptr<MemoryAccount> account = nullptr) : account_(std::move(account)) {}
  ~HeldArrays();
  HeldArrays(const HeldArrays&) = delete;
  HeldArrays& operator=(const HeldArrays&) = delete;

  // Adds each array of `arrays` but `self` (an array never holds itself),
  // and every array those hold in turn (so holding an array keeps what its
  // descriptors point to, without a chain of holders). Arrays already held
  // are not added twice. RESOURCE_EXHAUSTED, adding none, when the new
  // entries do not fit in the account.
  absl::Status Add(absl::Span<const std::shared_ptr<const Array>> arrays, const Array* self);
  // The arrays held now.
  std::vector<std::shared_ptr<const Array>> Snapshot() const;
  size_t size() const;
  // Lets go of every array (the owning session closed) and of their charge.
  void Clear();

 private:
  const std::shared_ptr<MemoryAccount> account_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<const Array*, std::shared_ptr<const Array>> arrays_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::runtime
