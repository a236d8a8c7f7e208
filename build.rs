//! Generates `$OUT_DIR/operations.rs` from `operations.toml` (see codegen/).

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=operations.toml");
    let source = std::fs::read_to_string("operations.toml").expect("read operations.toml");
    let code = match lean_beam_codegen::generate(&source) {
        Ok(code) => code,
        Err(err) => {
            // The build stops here with the table entry named.
            eprintln!("{err}");
            println!("cargo::error={err}");
            std::process::exit(1);
        }
    };
    record_build_identity();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("operations.rs");
    std::fs::write(out, code).expect("write operations.rs");
}

/// Facts for `beam_version`'s build identity.
fn record_build_identity() {
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "unknown".into());
    println!("cargo::rustc-env=LEAN_BEAM_PROFILE={}", env("PROFILE"));
    println!("cargo::rustc-env=LEAN_BEAM_TARGET={}", env("TARGET"));
    let rustc = std::process::Command::new(env("RUSTC"))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env=LEAN_BEAM_RUSTC={rustc}");
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string());
    if let Some(commit) = commit {
        println!("cargo::rustc-env=LEAN_BEAM_GIT_COMMIT={commit}");
    }
    // A new commit on the current branch moves the branch's ref, not HEAD.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            // A missing path would make Cargo rerun this script on every build.
            if std::path::Path::new(&path).exists() {
                println!("cargo::rerun-if-changed={path}");
            }
        }
    }
}
