// warpd: early-return helpers for absl::Status / absl::StatusOr, for every
// layer (the one set of status macros).
//
//   WARPD_RETURN_IF_ERROR(DoThing());
//   WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, sessions.Get(token));
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define WARPD_STATUS_CONCAT_INNER(a, b) a##b
#define WARPD_STATUS_CONCAT(a, b) WARPD_STATUS_CONCAT_INNER(a, b)

#define WARPD_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    ::absl::Status warpd_status_ = (expr);          \
    if (!warpd_status_.ok()) return warpd_status_;  \
  } while (0)

#define WARPD_ASSIGN_OR_RETURN(lhs, expr) \
  WARPD_ASSIGN_OR_RETURN_IMPL(WARPD_STATUS_CONCAT(warpd_statusor_, __LINE__), lhs, expr)

#define WARPD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = *std::move(tmp)
