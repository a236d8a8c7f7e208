//! Starting a child that dies with us.

use std::sync::OnceLock;

use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// Spawn `command` in its own process group with the parent-death signal set
/// (Linux), on the long-lived spawner thread.
///
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not
/// the process. Tokio may run a future on a blocking-pool thread that exits
/// when idle, which would kill a healthy child; a dedicated thread that lives
/// as long as the process makes the signal mean "our process died".
///
/// Used for the Lean server ([`crate::lsp::LspClient`]) and for the batch
/// compiler of checkpoints and prefix bases, so that both die with the server.
pub async fn spawn_supervised(mut command: Command) -> std::io::Result<Child> {
    #[cfg(unix)]
    {
        command.process_group(0);
        let parent = std::process::id();
        // SAFETY: the closure runs between fork and exec and only makes syscalls
        // (prctl, getppid); it allocates nothing and takes no locks.
        unsafe {
            command.pre_exec(move || super::sys::set_parent_death_signal(parent));
        }
    }
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = oneshot::channel();
    spawner()
        .send(Box::new(move || {
            let _rt = handle.enter();
            let _ = tx.send(command.spawn());
        }))
        .map_err(|_| std::io::Error::other("spawner thread is gone"))?;
    rx.await
        .map_err(|_| std::io::Error::other("spawner thread dropped the request"))?
}

type SpawnJob = Box<dyn FnOnce() + Send>;

fn spawner() -> std::sync::mpsc::Sender<SpawnJob> {
    static SPAWNER: OnceLock<std::sync::mpsc::Sender<SpawnJob>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<SpawnJob>();
            std::thread::Builder::new()
                .name("process-spawner".into())
                .spawn(move || {
                    for job in rx {
                        job();
                    }
                })
                .expect("cannot start the process-spawner thread");
            tx
        })
        .clone()
}
