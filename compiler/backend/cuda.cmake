# The CUDA backend's compiler half (NVRTC -> PTX, ptxas check). Included from
# compiler/backend/CMakeLists.txt when WARPD_WITH_CUDA is ON.
#
# Only nvrtc.h is used at build time, for types and prototypes; libnvrtc is
# dlopen'd at run time and never linked, so the daemon starts on machines
# without the toolkit. WARPD_CUDA_ROOT (top-level cache variable) is where
# Nvrtc::Load() and VerifyPtx() look after the loader's search path.
add_library(warpd_backend_cuda STATIC ${CMAKE_CURRENT_LIST_DIR}/cuda_nvrtc.cc)
# PRIVATE, and AFTER the source tree (include_directories comes first): the
# toolkit's include dir must not shadow our headers nor leak to dependents.
target_include_directories(warpd_backend_cuda SYSTEM PRIVATE ${WARPD_CUDA_ROOT}/include)
target_compile_definitions(warpd_backend_cuda PRIVATE WARPD_CUDA_ROOT="${WARPD_CUDA_ROOT}")
target_link_libraries(warpd_backend_cuda
  PUBLIC absl::status absl::statusor
  PRIVATE warpd_common warpd_native_embedded absl::strings absl::cleanup ${CMAKE_DL_LIBS})

warpd_test(cuda_nvrtc_test ${CMAKE_CURRENT_LIST_DIR}/cuda_nvrtc_test.cc
  LIBS warpd_backend_cuda absl::status absl::statusor absl::strings absl::time)
