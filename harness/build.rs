//! The binary embeds `suites/` and `ptx-corpus/` (src/data.rs): rebuild when a file there
//! changes, as cargo does not know what `include_dir!` read.
fn main() {
    println!("cargo:rerun-if-changed=../suites");
    println!("cargo:rerun-if-changed=../ptx-corpus");
    println!("cargo:rerun-if-changed=build.rs");
}
