//! WASI entry point of the smoke test: prints each case, exits non-zero on the first failure.

fn main() {
    match append_wasm_smoke::run_all() {
        Ok(passed) => {
            for p in &passed {
                println!("ok {p}");
            }
            println!("{} cases passed", passed.len());
        }
        Err(e) => {
            eprintln!("FAILED: {e}");
            std::process::exit(1);
        }
    }
}
