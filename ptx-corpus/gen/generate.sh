#!/bin/sh
# Regenerate ptx-corpus/gen/out/ (see generate.py). Needs the managed CUDA wheels
# (`cargo run -- toolchain install`) and, for every producer, clang-19 llvm-19 clang-14
# llvm-14 gcc-12-offload-nvptx from Debian; a missing producer is skipped.
set -eu
cd "$(dirname "$0")/../.."
exec python3 ptx-corpus/gen/generate.py "$@"
