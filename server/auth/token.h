// warpd server: bearer tokens: making them, hashing them, reading them from a
// call's metadata.
//
// A token is 32 random bytes (getrandom) in hex. The daemon never stores a
// tenant's token, only its SHA-256 (hex), so a leaked tenants file or memory
// dump of the config does not grant access. Clients send the token in the
// `authorization` metadata as "Bearer <token>".
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warpd::server {

// A new random token (64 lower-case hex characters).
absl::StatusOr<std::string> NewToken();

// True for 64 lower-case hex characters (the form token hashes are kept in).
bool IsHexSha256(std::string_view text);

// The token of an `authorization` metadata value "Bearer <token>" (the
// scheme is case-insensitive); empty when the value has another form.
// Tokens are at most 512 bytes of printable ASCII.
std::string_view BearerToken(std::string_view authorization);

}  // namespace warpd::server
