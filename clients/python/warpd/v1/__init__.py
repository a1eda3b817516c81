"""Generated gRPC/protobuf modules for warpd.v1 (made by scripts/setup.sh)."""
