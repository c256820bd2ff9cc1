fn main() {
    // Like other Unix filters, end quietly when the reader of stdout goes away
    // (`gpucts abi layout f.yaml | head`) instead of panicking on EPIPE.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(gpucts::cli::main());
}
