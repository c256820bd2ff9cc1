fn main() {
    std::process::exit(gpucts::cli::main());
}
