# Tests of the runtime/native headers (headers_test.cc). Included from
# runtime/native/CMakeLists.txt after warpd_native_embedded is defined.
#
# Each header is compiled on its own with the host clang (the LLVM that the
# CPU JIT embeds, freestanding) and, with WARPD_WITH_CUDA, with NVRTC + ptxas;
# the builtins' host numerics are checked against independent references.

# The clang++ of the LLVM the CPU JIT links (find_package(LLVM) at the top
# level sets LLVM_TOOLS_BINARY_DIR), else clang++-<that version> on PATH.
find_program(WARPD_HOST_CLANGXX NAMES clang++ clang++-${WARPD_LLVM_VERSION}
  PATHS ${LLVM_TOOLS_BINARY_DIR} /usr/lib/llvm-${WARPD_LLVM_VERSION}/bin NO_DEFAULT_PATH)
find_program(WARPD_HOST_CLANGXX NAMES clang++-${WARPD_LLVM_VERSION} clang++)
if(NOT WARPD_HOST_CLANGXX)
  message(WARNING "No clang++ found: native_headers_test's host-clang checks will fail")
  set(WARPD_HOST_CLANGXX "")
endif()

set(_warpd_headers_test_libs warpd_native_embedded Threads::Threads)
if(WARPD_WITH_CUDA)
  # Test-only edge upward (runtime/native -> compiler/backend): the NVRTC half
  # of STYLE rule 7 needs the backend's NVRTC loader. The target is defined
  # later (compiler/ is added after runtime/native); CMake resolves it at
  # generate time.
  list(APPEND _warpd_headers_test_libs warpd_backend_cuda absl::status absl::statusor)
endif()
warpd_test(native_headers_test ${CMAKE_CURRENT_LIST_DIR}/headers_test.cc
  LIBS ${_warpd_headers_test_libs})
target_compile_definitions(native_headers_test PRIVATE
  WARPD_NATIVE_DIR="${CMAKE_CURRENT_LIST_DIR}"
  WARPD_HOST_CLANGXX="${WARPD_HOST_CLANGXX}"
  WARPD_WITH_CUDA=$<BOOL:${WARPD_WITH_CUDA}>)

# Host numerics of the value-type families, one test file per family header
# (mat.h, svd.h, quat.h + transform.h + spatial.h, rand.h + noise.h, scalar math,
# bfloat16),
# against independent references computed in the tests.
foreach(_family mat svd quat rand scalar_math bfloat16)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${_family}_test.cc)
    warpd_test(native_${_family}_test ${CMAKE_CURRENT_LIST_DIR}/${_family}_test.cc
      LIBS warpd_native_embedded Threads::Threads)
  endif()
endforeach()
if(TARGET native_rand_test)
  target_compile_definitions(native_rand_test PRIVATE WARPD_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures")
endif()

# The adjoints (warpd/native/adjoint/): float64 finite differences, the
# lower-precision instantiations, Warp's subgradients, and coverage against
# warpd/adjoint_builtins.h and Warp 1.19's differentiable builtins.
warpd_test(native_adjoint_test
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_scalar_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_vec_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_mat_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_svd_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_noise_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_quat_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/adjoint_transform_test.cc
  LIBS warpd_native_embedded Threads::Threads)
target_compile_definitions(native_adjoint_test PRIVATE WARPD_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures")
