//! Companion kernel module backend (`/dev/gpucts`).
