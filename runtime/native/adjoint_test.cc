// Coverage of the native adjoints (warpd/adjoint_builtins.h): every builtin the
// list names has a check that asserts its adjoint (a finite-difference case or
// an explicit check in adjoint_<family>_test.cc), every checked builtin is
// listed, and every builtin Warp 1.19 differentiates (in the value-type groups)
// is either listed or pending.
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "adjoint_cases.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "warpd/adjoint_builtins.h"

namespace warpd_adjoint_test {
namespace {

using Entry = std::pair<std::string, std::string>;  // family, builtin name

struct FamilyChecks {
  const char* family;
  void (*cases)(Suite<double>&);
  void (*explicit_checks)(std::set<std::string>&);
};

const FamilyChecks kFamilies[] = {
    {"scalar", &ScalarFamilyCases, &ScalarFamilyExplicitChecks},
    {"vec", &VecFamilyCases, &VecFamilyExplicitChecks},
    {"mat", &MatFamilyCases, &MatFamilyExplicitChecks},
    {"quat", &QuatFamilyCases, &QuatFamilyExplicitChecks},
    {"transform", &TransformFamilyCases, &TransformFamilyExplicitChecks},
    {"spatial", &SpatialFamilyCases, &SpatialFamilyExplicitChecks},
    {"noise", &NoiseFamilyCases, &NoiseFamilyExplicitChecks},
};

// The (family, name) pairs some test asserts.
std::set<Entry> Checked() {
  std::set<Entry> out;
  for (const FamilyChecks& f : kFamilies) {
    Suite<double> s;
    f.cases(s);
    std::set<std::string> covered = s.names();
    f.explicit_checks(covered);
    for (const std::string& name : covered) out.insert({f.family, name});
  }
  return out;
}

TEST(AdjointCoverageTest, ListedBuiltinsAreCheckedAndCheckedOnesListed) {
  const std::set<Entry> checked = Checked();
  std::set<Entry> listed;
  for (const auto& b : warpd::native::kAdjointBuiltins) {
    const Entry e{std::string(b.family), std::string(b.name)};
    EXPECT_TRUE(listed.insert(e).second) << b.family << " " << b.name << " is listed twice";
    EXPECT_TRUE(checked.count(e)) << b.family << " adjoint of " << b.name
                                  << " is listed in warpd/adjoint_builtins.h but no test checks it";
  }
  for (const Entry& e : checked) {
    EXPECT_TRUE(listed.count(e)) << e.first << " adjoint of " << e.second
                                 << " is checked but missing from kAdjointBuiltins";
  }
  for (const auto& b : warpd::native::kAdjointPending) {
    const Entry e{std::string(b.family), std::string(b.name)};
    EXPECT_FALSE(checked.count(e)) << b.family << " " << b.name << " is pending but has a checked adjoint";
  }
}

// Names of the builtins with a differentiable overload in Warp's registry
// dump, outside the groups whose adjoints are not value-type math. The file
// is pretty-printed JSON with one-space indents: a builtin starts at
// ` "name": {`, its group and each overload's `"differentiable": ...` follow.
std::set<std::string> WarpDifferentiable() {
  std::ifstream in(WARPD_FIXTURES_DIR "/warp_builtins_1.19.json");
  EXPECT_TRUE(in.good()) << "cannot read " << WARPD_FIXTURES_DIR "/warp_builtins_1.19.json";
  const std::set<std::string> skipped_groups = {"Tile Primitives", "Geometry", "Volumes", "Textures",
                                                "Random"};
  const std::set<std::string> array_builtins = {"atomic_add", "atomic_sub", "atomic_min",
                                                "atomic_max"};
  std::set<std::string> out;
  std::string line, name, group;
  while (std::getline(in, line)) {
    if (line.size() > 4 && line.compare(0, 2, " \"") == 0 && line.compare(line.size() - 4, 4, "\": {") == 0) {
      name = line.substr(2, line.size() - 6);
      group.clear();
      continue;
    }
    const size_t g = line.find("\"group\": \"");
    if (g != std::string::npos) {
      group = line.substr(g + 10, line.rfind('"') - g - 10);
      continue;
    }
    if (line.find("\"differentiable\": true") != std::string::npos && !name.empty() &&
        name[0] != '_' && !skipped_groups.count(group) && !array_builtins.count(name)) {
      out.insert(name);
    }
  }
  return out;
}

TEST(AdjointCoverageTest, EveryWarpDifferentiableBuiltinIsListedOrPending) {
  const std::set<std::string> warp = WarpDifferentiable();
  ASSERT_GT(warp.size(), 50u) << "the fixture parse found too few builtins";
  std::set<std::string> known;
  for (const auto& b : warpd::native::kAdjointBuiltins) known.insert(std::string(b.name));
  for (const auto& b : warpd::native::kAdjointPending) known.insert(std::string(b.name));
  for (const auto& b : warpd::native::kAdjointInCodegen) known.insert(std::string(b.name));
  for (const std::string& name : warp) {
    EXPECT_TRUE(known.count(name)) << name
                                   << " is differentiable in Warp 1.19 but in none of kAdjointBuiltins, "
                                      "kAdjointPending and kAdjointInCodegen (warpd/adjoint_builtins.h)";
  }
}

// The harness itself: a wrong gradient and an overwriting adjoint both fail.
void WrongCases(Suite<double>& s) {
  s.Add("wrong", +[](const double& x) { return x * x; },
        +[](const double& x, const double&, double& adj_x, const double& adj_ret) { adj_x += x * adj_ret; },
        {{1.5}});
}
void OverwritingCases(Suite<double>& s) {
  // Right on the first call, adds nothing on the second.
  s.Add("forgets", +[](const double& x) { return 3 * x; },
        +[](const double&, const double&, double& adj_x, const double& adj_ret) {
          static int calls = 0;
          if (calls++ % 2 == 0) adj_x += 3 * adj_ret;
        },
        {{1.5}});
}

TEST(AdjointHarnessTest, CatchesWrongAndNonAccumulatingAdjoints) {
  EXPECT_NONFATAL_FAILURE(
      {
        Suite<double> s;
        WrongCases(s);
      },
      "finite differences");
  EXPECT_NONFATAL_FAILURE(
      {
        Suite<double> s;
        OverwritingCases(s);
      },
      "not accumulated");
}

}  // namespace
}  // namespace warpd_adjoint_test
