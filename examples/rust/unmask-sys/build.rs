// Links libunmask: from UNMASK_LIB_DIR when set (a build tree's capi/), else the system's paths.
// At run time the loader finds it as any shared library (LD_LIBRARY_PATH for a build tree).
fn main() {
    println!("cargo:rerun-if-env-changed=UNMASK_LIB_DIR");
    if let Ok(dir) = std::env::var("UNMASK_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=unmask");
}
