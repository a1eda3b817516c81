// warpd server: CreateHashGrid, CreateBvh and CreateMesh (runtime.proto): a session's server-side
// objects that kernels query by id (runtime/objects/geometry_object.h); MakeTree for the
// CreateTree command (submit.cc), which makes BVHs and meshes inside a batch.
//
// Checks the request (dims each >= 1 and at most 2^31 - 1 cells in all, a
// float dtype, a usable device), allocates the grid's cell table from
// the session's private pool (charged to its memory account:
// RESOURCE_EXHAUSTED past it) and adds the grid to the session's objects,
// and so to its launch tables. On a GPU (MirrorsObjects), every object is
// built on the host and mirrored to the session's memory on the device
// (runtime/objects/device_mirror.h), which kernels there query. Builds and
// frees are stream commands (submit.cc). Errors: INVALID_ARGUMENT,
// NOT_FOUND (device), RESOURCE_EXHAUSTED, UNAUTHENTICATED when the session
// has closed. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/objects/array.h"
#include "runtime/objects/bvh.h"
#include "server/daemon_state.h"
#include "server/session.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

// Whether objects on `device` are built on the host and mirrored to its
// memory (a GPU's) rather than made in host memory it addresses (the CPU).
bool MirrorsObjects(const runtime::Device& device);

absl::Status CreateHashGrid(DaemonState* state, Session& session, const v1::CreateHashGridRequest& req,
                            v1::CreateHashGridResponse* resp);

// CreateBvh: the lowers/uppers arrays must be the session's, on a usable
// device (NOT_FOUND, INVALID_ARGUMENT as for CreateHashGrid); the tree's
// buffers are allocated from the session's private pool. The BVH is made
// unbuilt: the client's BuildTree command follows.
absl::Status CreateBvh(DaemonState* state, Session& session, const v1::CreateBvhRequest& req,
                       v1::CreateBvhResponse* resp);

// CreateMesh: points, indices (and velocities, when nonzero) must be the
// session's arrays on a usable device (NOT_FOUND, INVALID_ARGUMENT as
// for CreateBvh); made unbuilt, the client's BuildTree command follows.
absl::Status CreateMesh(DaemonState* state, Session& session, const v1::CreateMeshRequest& req,
                        v1::CreateMeshResponse* resp);

// The session's array a handle names (NOT_FOUND, as HandleTable::Get).
using ArrayGetter = absl::FunctionRef<absl::StatusOr<std::shared_ptr<const runtime::Array>>(uint64_t)>;

// The BVH or mesh of a CreateTree command (its kind's request; `session`
// and `device` fields ignored) on `device`, made as CreateBvh / CreateMesh
// make theirs (the same checks, allocations and charges) with the arrays `arrays` resolves, but not added to the
// session: the caller adds it under the command's id.
absl::StatusOr<std::shared_ptr<runtime::TreeObject>> MakeTree(runtime::Device& device, Session& session,
                                                              const v1::CreateTree& req, ArrayGetter arrays);

}  // namespace warpd::server
