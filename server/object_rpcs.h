// warpd server: CreateHashGrid, CreateBvh and CreateMesh (runtime.proto): a session's server-side
// objects that kernels query by id (runtime/objects/geometry_object.h).
//
// Checks the request (dims each >= 1 and at most 2^31 - 1 cells in all, a
// float dtype, a usable CPU device), allocates the grid's cell table from
// the session's private pool (charged to its memory account:
// RESOURCE_EXHAUSTED past it) and adds the grid to the session's objects,
// and so to its launch tables. Builds and frees are stream commands
// (submit.cc). Errors: INVALID_ARGUMENT, NOT_FOUND (device),
// UNIMPLEMENTED (a CUDA device), RESOURCE_EXHAUSTED, UNAUTHENTICATED when
// the session has closed. Thread-safe.
#pragma once

#include "absl/status/status.h"
#include "server/daemon_state.h"
#include "server/session.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

absl::Status CreateHashGrid(DaemonState* state, Session& session, const v1::CreateHashGridRequest& req,
                            v1::CreateHashGridResponse* resp);

// CreateBvh: the lowers/uppers arrays must be the session's, on a usable CPU
// device (NOT_FOUND, INVALID_ARGUMENT as for CreateHashGrid); the tree's
// buffers are allocated from the session's private pool. The BVH is made
// unbuilt: the client's BuildTree command follows.
absl::Status CreateBvh(DaemonState* state, Session& session, const v1::CreateBvhRequest& req,
                       v1::CreateBvhResponse* resp);

// CreateMesh: points, indices (and velocities, when nonzero) must be the
// session's arrays on a usable CPU device (NOT_FOUND, INVALID_ARGUMENT as
// for CreateBvh); made unbuilt, the client's BuildTree command follows.
absl::Status CreateMesh(DaemonState* state, Session& session, const v1::CreateMeshRequest& req,
                        v1::CreateMeshResponse* resp);

}  // namespace warpd::server
