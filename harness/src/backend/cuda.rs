//! CUDA driver backend (cudarc, loaded at run time).
