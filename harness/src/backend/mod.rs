//! Backends: the only code that talks to tools, drivers and devices. Areas reach hardware and
//! compilers through these; a backend knows nothing of areas.

pub mod cuda;
pub mod host;
pub mod kmod;
pub mod process;
pub mod producer;
#[cfg(feature = "rdma")]
pub mod rdma;
pub mod toolchain;
