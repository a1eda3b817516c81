// The adjoint test families (adjoint_<family>_test.cc), for the coverage test
// in adjoint_test.cc: each family's float64 finite-difference cases and its
// explicit checks, which add the builtin names they assert to `covered`.
#pragma once

#include <set>
#include <string>

#include "adjoint_test_util.h"

namespace warpd_adjoint_test {

void ScalarFamilyCases(Suite<double>& s);
void ScalarFamilyExplicitChecks(std::set<std::string>& covered);
void VecFamilyCases(Suite<double>& s);
void VecFamilyExplicitChecks(std::set<std::string>& covered);
void MatFamilyCases(Suite<double>& s);
void MatFamilyExplicitChecks(std::set<std::string>& covered);
// The decompositions (adjoint_svd_test.cc), family "mat" too.
void DecompFamilyCases(Suite<double>& s);
void DecompExplicitChecks(std::set<std::string>& covered);
void QuatFamilyCases(Suite<double>& s);
void QuatFamilyExplicitChecks(std::set<std::string>& covered);
void TransformFamilyCases(Suite<double>& s);
void TransformFamilyExplicitChecks(std::set<std::string>& covered);
void SpatialFamilyCases(Suite<double>& s);
void SpatialFamilyExplicitChecks(std::set<std::string>& covered);
void NoiseFamilyCases(Suite<double>& s);
void NoiseFamilyExplicitChecks(std::set<std::string>& covered);

}  // namespace warpd_adjoint_test
