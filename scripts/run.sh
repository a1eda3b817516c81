#!/usr/bin/env bash
# Sets up and builds warpd, then runs the daemon in the foreground with the
# local defaults (CPU device, 127.0.0.1:7788 and a Unix socket). Extra
# arguments go to the daemon: scripts/run.sh --log-level debug
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
exec "$root/build/bin/warpd" "$@"
