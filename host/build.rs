//! Embeds the component when `PAIMON_COMPACT_COMPONENT` names a built `.wasm` at build time, so
//! the `paimon-compact` binary is self-contained. Without it, the binary looks for the
//! component at run time (`--component`, the same variable, or next to the executable).

fn main() {
    println!("cargo:rustc-check-cfg=cfg(embedded_component)");
    println!("cargo:rerun-if-env-changed=PAIMON_COMPACT_COMPONENT");
    if let Ok(path) = std::env::var("PAIMON_COMPACT_COMPONENT") {
        let p = std::path::Path::new(&path);
        if p.is_file() {
            let abs = p.canonicalize().expect("canonical component path");
            println!("cargo:rerun-if-changed={}", abs.display());
            println!("cargo:rustc-cfg=embedded_component");
            println!("cargo:rustc-env=PAIMON_COMPACT_EMBEDDED={}", abs.display());
        } else {
            println!("cargo:warning=PAIMON_COMPACT_COMPONENT={path} is not a file; the component is not embedded");
        }
    }
}
