//! The libc calls process supervision needs and std/tokio do not offer.
//!
//! Neither std nor tokio can (1) signal a whole process group — `Child::kill`
//! reaches only the leader, but Lean's file workers are the server's children
//! and must die with it —, (2) ask the kernel to SIGKILL a child when its
//! parent dies (`PR_SET_PDEATHSIG`), which is what keeps a `lean` tree from
//! outliving a crashed or SIGKILLed MCP server, nor (3) wait for the exit of
//! a process that is not our child (a file worker is Lean's): a pidfd turns
//! readable when it exits. All are plain syscall wrappers with integer
//! arguments (and one `pollfd` on the stack); nothing else is unsafe.

use std::io;

/// The signal every kill here sends.
#[cfg(unix)]
pub const SIGKILL: i32 = libc::SIGKILL;
#[cfg(not(unix))]
pub const SIGKILL: i32 = 9;

/// Send `sig` to every process of process group `pgid`. `ESRCH` (group already
/// empty) counts as success.
#[cfg(unix)]
pub fn kill_process_group(pgid: u32, sig: i32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid).map_err(|_| io::Error::other("pgid out of range"))?;
    if pgid <= 1 {
        // -0 is our own group and -1 is every process we may signal: never.
        return Err(io::Error::other("refusing to signal process group <= 1"));
    }
    // SAFETY: kill(2) takes two integers and touches no memory of ours.
    let rc = unsafe { libc::kill(-pgid, sig) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        // Nothing left in the group.
        Ok(())
    } else {
        Err(err)
    }
}

/// Send `sig` to the single process `pid` (never to a group, never to ourselves).
/// `ESRCH` (already gone) counts as success.
#[cfg(unix)]
pub fn kill_process(pid: u32, sig: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::other("pid out of range"))?;
    if pid <= 1 || pid as u32 == std::process::id() {
        return Err(io::Error::other("refusing to signal pid <= 1 or ourselves"));
    }
    // SAFETY: as above.
    let rc = unsafe { libc::kill(pid, sig) };
    if rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
pub fn kill_process(_pid: u32, _sig: i32) -> io::Result<()> {
    Err(io::Error::other("signals are only supported on Unix"))
}

#[cfg(not(unix))]
pub fn kill_process_group(_pgid: u32, _sig: i32) -> io::Result<()> {
    Err(io::Error::other(
        "process groups are only supported on Unix",
    ))
}

/// In a freshly forked child (`pre_exec`): have the kernel SIGKILL us when the
/// thread that forked us dies, then make sure that has not already happened.
/// Async-signal-safe: two syscalls, no allocation.
#[cfg(target_os = "linux")]
pub fn set_parent_death_signal(expected_parent: u32) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG, sig) reads only its integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if std::os::unix::process::parent_id() != expected_parent {
        // The parent died between fork and prctl: the signal will never come.
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn set_parent_death_signal(_expected_parent: u32) -> io::Result<()> {
    Ok(())
}

/// A pidfd of process `pid` (Linux 5.3+): it turns readable when the process
/// exits. `None` when the kernel has none or the process is gone.
#[cfg(target_os = "linux")]
pub fn pidfd_open(pid: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open(2) takes two integers and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the descriptor was just made for us and nobody else owns it.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

#[cfg(not(target_os = "linux"))]
pub fn pidfd_open(_pid: u32) -> Option<std::os::fd::OwnedFd> {
    None
}

/// Block until `fd` is readable or `limit` passes; whether it became readable.
#[cfg(unix)]
pub fn wait_readable(fd: &std::os::fd::OwnedFd, limit: std::time::Duration) -> bool {
    use std::os::fd::AsRawFd;
    let deadline = std::time::Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut pollfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one pollfd on our stack, its count 1.
        let rc = unsafe { libc::poll(&mut pollfd, 1, ms) };
        if rc > 0 {
            return pollfd.revents & libc::POLLIN != 0;
        }
        if rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}
