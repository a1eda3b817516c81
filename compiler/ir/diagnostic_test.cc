#include "compiler/ir/diagnostic.h"

#include <gtest/gtest.h>

namespace warpd::ir {
namespace {

TEST(DiagnosticTest, PartsSurviveACopyOfTheStatus) {
  absl::Status st = UserError({ErrorCategory::kValue, "k.py:3:5", "slice step cannot be zero"},
                              "k.py:3:5: error: slice step cannot be zero (in kernel 'k')");
  absl::Status copy = st;
  EXPECT_EQ(copy.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(copy.message(), "k.py:3:5: error: slice step cannot be zero (in kernel 'k')");
  UserErrorParts p = PartsOf(copy);
  EXPECT_EQ(p.category, ErrorCategory::kValue);
  EXPECT_EQ(p.location, "k.py:3:5");
  EXPECT_EQ(p.text, "slice step cannot be zero");
}

TEST(DiagnosticTest, AnErrorWithoutLocationIsItsText) {
  UserErrorParts p = PartsOf(UserError(ErrorCategory::kKey, "Referencing undefined symbol: x"));
  EXPECT_EQ(p.category, ErrorCategory::kKey);
  EXPECT_EQ(p.location, "");
  EXPECT_EQ(p.text, "Referencing undefined symbol: x");
}

TEST(DiagnosticTest, APlainStatusIsGeneral) {
  UserErrorParts p = PartsOf(absl::InvalidArgumentError("a.py:1:1: error: bad"));
  EXPECT_EQ(p.category, ErrorCategory::kGeneral);
  EXPECT_EQ(p.location, "");
  EXPECT_EQ(p.text, "a.py:1:1: error: bad");
}

TEST(DiagnosticTest, EveryCategoryRoundTrips) {
  for (ErrorCategory c : {ErrorCategory::kGeneral, ErrorCategory::kType, ErrorCategory::kValue,
                          ErrorCategory::kAttribute, ErrorCategory::kKey, ErrorCategory::kIndex})
    EXPECT_EQ(PartsOf(UserError(c, "x")).category, c);
}

}  // namespace
}  // namespace warpd::ir
