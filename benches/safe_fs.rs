//! `cargo bench --bench safe_fs`: what reading a source file off the runtime
//! costs against the plain blocking read it replaced (issue 14, item 1), on
//! the stdio server's one-thread runtime, for a small and a large source.

use std::path::PathBuf;

use divan::Bencher;
use lean_beam_mcp::safe_fs::{self, Links, Oversize};

fn main() {
    divan::main();
}

/// A source file of `bytes` bytes in the temp dir.
fn source(bytes: usize) -> PathBuf {
    let path = std::env::temp_dir().join(format!("beam-bench-{}-{bytes}.lean", std::process::id()));
    let line = "theorem t (n : Nat) : n + 0 = n := by simp\n";
    std::fs::write(&path, line.repeat(bytes / line.len() + 1)).unwrap();
    path
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const SIZES: &[usize] = &[4 * 1024, 256 * 1024];

#[divan::bench(args = SIZES)]
fn blocking_std_read(bencher: Bencher, bytes: usize) {
    let path = source(bytes);
    bencher.bench_local(|| std::fs::read(&path).unwrap());
    let _ = std::fs::remove_file(path);
}

#[divan::bench(args = SIZES)]
fn read_regular_off_runtime(bencher: Bencher, bytes: usize) {
    let path = source(bytes);
    let rt = runtime();
    bencher.bench_local(|| {
        rt.block_on(safe_fs::read_regular(
            &path,
            Links::Refuse,
            safe_fs::DEFAULT_MAX_FILE_BYTES,
            Oversize::Refuse,
        ))
        .unwrap()
    });
    let _ = std::fs::remove_file(path);
}
