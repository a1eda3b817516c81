// warpd::Tape: records launches, then queues their adjoints in reverse order
// (clients/python/warpd/tape.py does the same for the Python client).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "client_impl.h"

namespace warpd {

Tape::Tape(Client& client) : client_(client) {}

Tape::~Tape() { End(); }

absl::Status Tape::Begin() {
  std::lock_guard<std::recursive_mutex> lock(client_.impl_->mu);
  Tape*& current = client_.impl_->tape;
  if (current != nullptr && current != this) {
    return absl::FailedPreconditionError("another warpd::Tape is recording; tapes do not nest");
  }
  current = this;
  return absl::OkStatus();
}

void Tape::End() {
  std::lock_guard<std::recursive_mutex> lock(client_.impl_->mu);
  if (client_.impl_->tape == this) client_.impl_->tape = nullptr;
}

absl::StatusOr<Tape::Recording> Tape::Record() {
  absl::Status st = Begin();
  if (!st.ok()) return st;
  return Recording(this);
}

absl::Status Tape::Backward(const Array& loss) {
  if (!loss.valid()) return absl::InvalidArgumentError("Tape::Backward: an invalid loss Array");
  if (loss.size() != 1) return absl::InvalidArgumentError("Can only return gradients for scalar loss functions.");
  Array grad = loss.grad();
  if (!grad.valid()) {
    return absl::FailedPreconditionError("The loss array must have requires_grad=True to compute gradients.");
  }
  std::string one;
  if (loss.dtype().kind_case() == v1::TypeRef::kScalar && loss.dtype().scalar() == v1::SCALAR_FLOAT32) {
    float v = 1.0f;
    one.assign(reinterpret_cast<const char*>(&v), sizeof(v));
  } else if (loss.dtype().kind_case() == v1::TypeRef::kScalar && loss.dtype().scalar() == v1::SCALAR_FLOAT64) {
    double v = 1.0;
    one.assign(reinterpret_cast<const char*>(&v), sizeof(v));
  } else {
    return absl::InvalidArgumentError("Tape::Backward: the loss must be a float32 or float64 array");
  }
  loss_ = loss;
  absl::Status st = client_.Fill(grad, one);
  if (!st.ok()) return st;
  // Adjoint launches are not themselves recorded.
  std::lock_guard<std::recursive_mutex> lock(client_.impl_->mu);
  Tape* recording = client_.impl_->tape;
  client_.impl_->tape = nullptr;
  for (auto it = launches_.rbegin(); it != launches_.rend() && st.ok(); ++it) {
    st = client_.LaunchAdjoint(it->kernel, it->dim, it->args, {});
  }
  client_.impl_->tape = recording;
  return st;
}

absl::Status Tape::Zero() {
  std::vector<Array> seen;
  for (const Recorded& r : launches_) {
    for (const Arg& a : r.args) {
      const Array* x = client_.impl_->ArrayArg(a);
      if (x == nullptr || !x->grad().valid()) continue;
      bool dup = false;
      for (const Array& s : seen) dup = dup || s.state_ == x->state_;
      if (!dup) seen.push_back(*x);
    }
  }
  if (loss_.valid()) seen.push_back(loss_);
  for (const Array& a : seen) {
    absl::Status st = client_.Zero(a.grad());
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Tape::Reset() {
  absl::Status st = Zero();
  launches_.clear();
  loss_ = Array();
  return st;
}

}  // namespace warpd
