//! What `/proc` says about a process: memory high-water mark and resident set,
//! open file descriptors, state and command line (the figures the
//! hostile-input and fault-injection tests bound). Linux only.

/// A `kB` field of `/proc/<pid>/status` (`VmHWM`, `VmRSS`, …), in bytes.
pub fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Peak resident set size (`VmHWM`), bytes.
pub fn hwm(pid: u32) -> u64 {
    status_kb(pid, "VmHWM").unwrap_or_else(|| panic!("no VmHWM for pid {pid}"))
}

/// Current resident set size (`VmRSS`), bytes.
pub fn rss(pid: u32) -> u64 {
    status_kb(pid, "VmRSS").unwrap_or_else(|| panic!("no VmRSS for pid {pid}"))
}

/// Open file descriptors.
#[allow(dead_code)] // only http_contract counts them
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// `(state, ppid, pgid)` from `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Option<(char, u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    Some((
        state,
        fields.get(1)?.parse().ok()?,
        fields.get(2)?.parse().ok()?,
    ))
}

pub fn is_alive(pid: u32) -> bool {
    matches!(stat(pid), Some((state, _, _)) if state != 'Z' && state != 'X')
}

/// The command line of `pid`, NULs as spaces.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .trim_end()
                .to_string()
        })
        .unwrap_or_default()
}

/// Send `signal` to `pid` with kill(1) (the tests have no libc binding).
pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid} failed");
}
