// Test-only: a warpd.v1 module proto through from_proto and sema, as the
// compiler facade runs them.
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "absl/status/statusor.h"
#include "compiler/ir/from_proto.h"
#include "compiler/sema/sema.h"

namespace warpd::testing {

inline absl::StatusOr<std::unique_ptr<ir::Module>> TypedModule(const v1::Module& proto) {
  auto m = ir::ModuleFromProto(proto);
  if (!m.ok()) return m.status();
  if (auto st = sema::Analyze(**m); !st.ok()) return st;
  return *std::move(m);
}

// The same for modules a test expects to pass: a failure is recorded and
// null returned.
inline std::unique_ptr<ir::Module> Typed(const v1::Module& proto) {
  auto m = TypedModule(proto);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

}  // namespace warpd::testing
