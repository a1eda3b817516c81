// The warpd C++ client (find_package(warpd), target warpd::client):
// warpd::Client (connection, session, arrays, modules, launches, graphs),
// warpd::Tape, and the kernel IR builder warpd::ir. clients/cpp/README.md.
#pragma once

#include "warpd/client/client.h"  // IWYU pragma: export
#include "warpd/client/ir.h"      // IWYU pragma: export
