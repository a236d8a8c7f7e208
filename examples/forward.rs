//! A zero-logic stdio forwarder: `forward CMD ARGS...` runs CMD and copies
//! bytes stdin → CMD's stdin and CMD's stdout → stdout, nothing else.
//!
//! It is the floor of `scripts/bench-lean.py`: any server that sits between a
//! client and `lean --server` pays at least these two extra pipe hops. It uses
//! what the stdio server uses (a current-thread tokio runtime, pipes
//! registered with the reactor), so the figure is this machine's cost of a
//! hop, not a property of lean-beam-mcp.

use std::os::fd::AsFd;
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: forward CMD [ARGS...]");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut to_child = child.stdin.take().expect("piped stdin");
        let mut from_child = child.stdout.take().expect("piped stdout");
        let mut input =
            pipe::Receiver::from_owned_fd(std::io::stdin().as_fd().try_clone_to_owned()?)?;
        let mut output =
            pipe::Sender::from_owned_fd(std::io::stdout().as_fd().try_clone_to_owned()?)?;
        let back = tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = from_child.read(&mut buf).await?;
                if n == 0 {
                    return Ok::<(), std::io::Error>(());
                }
                output.write_all(&buf[..n]).await?;
            }
        });
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = input.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            to_child.write_all(&buf[..n]).await?;
        }
        drop(to_child);
        back.await.map_err(std::io::Error::other)??;
        child.wait().await.map(drop)
    })
}
