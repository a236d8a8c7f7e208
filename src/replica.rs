//! Running as one replica of several behind a load balancer
//! (`deploy/haproxy/haproxy.cfg`): the replica's stable name, and how it
//! drains on SIGTERM.
//!
//! The name is what `beam_version` and `beam_stats` report, so that an agent or
//! an operator can tell which replica answered. It is `--replica-id ID`, else
//! `LEAN_BEAM_REPLICA_ID`, else `<hostname>:<port>` for `--http` (stable across
//! restarts of the same replica; a Kubernetes pod's hostname is its name) and
//! `<hostname>:stdio` otherwise.
//!
//! Draining: SIGTERM (what Kubernetes and HAProxy's operators send) turns the
//! server unhealthy and makes it answer new calls `503` with `Retry-After`,
//! which the load balancer retries on another replica, while the calls it
//! already admitted run to their end, for at most `--drain-secs`. Then it
//! stops as on SIGINT, which skips the drain: the calls still running are
//! cancelled.

use std::future::Future;
use std::time::Duration;

use crate::http::Drain;
pub use crate::identity::{ID_ENV, ReplicaId};
use crate::log_info;

/// The environment variable of the drain's time limit, in seconds.
pub const DRAIN_ENV: &str = "LEAN_BEAM_HTTP_DRAIN_SECS";
/// How long a draining replica waits for its calls by default. Kubernetes
/// allows 30 s before it kills a pod unless told otherwise; the manifests in
/// `deploy/k8s/` give it more.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(25);
/// The replica options of `--http`: `--replica-id` and `--drain-secs`, each
/// also read from its environment variable (the flag wins).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaOptions {
    /// `None`: the default, which needs the bound port.
    pub id: Option<ReplicaId>,
    pub drain: Duration,
}

/// Take the replica options out of the arguments of `--http`, leaving the
/// transport's own options in `args`.
pub fn take_options(
    args: &mut Vec<String>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ReplicaOptions, String> {
    let mut options = ReplicaOptions {
        id: env(ID_ENV)
            .filter(|v| !v.is_empty())
            .map(|v| ReplicaId::new(&v, ID_ENV))
            .transpose()?,
        drain: match env(DRAIN_ENV).filter(|v| !v.is_empty()) {
            Some(v) => drain_secs(DRAIN_ENV, &v)?,
            None => DEFAULT_DRAIN,
        },
    };
    let mut kept = Vec::with_capacity(args.len());
    let mut rest = std::mem::take(args).into_iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--replica-id" | "--drain-secs" => {
                let value = rest
                    .next()
                    .ok_or_else(|| format!("`{arg}` needs a value"))?;
                if arg == "--replica-id" {
                    options.id = Some(ReplicaId::new(&value, "--replica-id")?);
                } else {
                    options.drain = drain_secs("--drain-secs", &value)?;
                }
            }
            _ => kept.push(arg),
        }
    }
    *args = kept;
    Ok(options)
}

fn drain_secs(source: &str, value: &str) -> Result<Duration, String> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{source} takes a number of seconds (0 or more), not `{value}`"))
}

/// How the process was asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGTERM: drain first.
    Terminate,
    /// SIGINT (Ctrl-C): stop now.
    Interrupt,
}

/// The next SIGTERM or SIGINT (Ctrl-C elsewhere).
pub async fn stop_signal() -> StopSignal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
        tokio::select! {
            _ = term.recv() => StopSignal::Terminate,
            _ = int.recv() => StopSignal::Interrupt,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        StopSignal::Interrupt
    }
}

/// Resolves when the HTTP server should stop: at once on `Interrupt`; on
/// `Terminate` only after draining, that is once `admitted_done` (the
/// dispatcher's admitted calls all finished) resolves, `limit` passed, or
/// another signal came.
pub async fn drain_then_stop<S, F>(
    signals: impl Fn() -> S,
    drain: Drain,
    admitted_done: F,
    limit: Duration,
) where
    S: Future<Output = StopSignal>,
    F: Future<Output = ()>,
{
    if signals().await == StopSignal::Interrupt {
        return;
    }
    drain.start();
    log_info!(
        "draining: /health answers 503 and new calls get 503 with Retry-After; waiting up to {limit:?} for the calls in flight"
    );
    let started = std::time::Instant::now();
    tokio::select! {
        () = admitted_done => log_info!("drained in {:?}", started.elapsed()),
        () = tokio::time::sleep(limit) => {
            log_info!("the drain's {limit:?} passed; cancelling the calls still running");
        }
        _ = signals() => log_info!("a second signal: stopping without waiting longer"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_are_visible_ascii() {
        assert!(ReplicaId::new("pod-7:8765", "t").is_ok());
        for bad in ["", "a b", "é", &"x".repeat(129)] {
            assert!(ReplicaId::new(bad, "t").is_err(), "{bad:?}");
        }
        let default = ReplicaId::default_for(Some(9001));
        assert!(default.as_str().ends_with(":9001"), "{default:?}");
        assert!(ReplicaId::default_for(None).as_str().ends_with(":stdio"));
    }

    #[test]
    fn options_are_taken_out_of_the_http_arguments() {
        let no_env = |_: &str| None;
        let mut a = args(&[
            "127.0.0.1:0",
            "--allowed-host",
            "h",
            "--replica-id",
            "r1",
            "--drain-secs",
            "2.5",
        ]);
        let options = take_options(&mut a, no_env).unwrap();
        assert_eq!(a, args(&["127.0.0.1:0", "--allowed-host", "h"]));
        assert_eq!(options.id, Some(ReplicaId::new("r1", "t").unwrap()));
        assert_eq!(options.drain, Duration::from_millis(2500));

        let env = |name: &str| match name {
            ID_ENV => Some("from-env".to_string()),
            DRAIN_ENV => Some("0".to_string()),
            _ => None,
        };
        let mut a = args(&["9000"]);
        let options = take_options(&mut a, env).unwrap();
        assert_eq!(options.id, Some(ReplicaId::new("from-env", "t").unwrap()));
        assert_eq!(options.drain, Duration::ZERO);
        let mut a = args(&["--replica-id", "flag"]);
        assert_eq!(
            take_options(&mut a, env).unwrap().id,
            Some(ReplicaId::new("flag", "t").unwrap()),
            "a flag wins over its variable"
        );

        let mut a = args(&[]);
        assert_eq!(take_options(&mut a, no_env).unwrap().drain, DEFAULT_DRAIN);
        for bad in [
            &["--replica-id"][..],
            &["--replica-id", "a b"],
            &["--drain-secs", "-1"],
            &["--drain-secs", "soon"],
        ] {
            let mut a = args(bad);
            assert!(take_options(&mut a, no_env).is_err(), "{bad:?}");
        }
    }

    /// Terminate on the first call, then never again.
    fn one_sigterm() -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = StopSignal> + Send>> {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        move || {
            let first = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
            Box::pin(async move {
                if first {
                    StopSignal::Terminate
                } else {
                    std::future::pending().await
                }
            })
        }
    }

    #[tokio::test]
    async fn sigint_stops_at_once_without_draining() {
        let drain = Drain::default();
        drain_then_stop(
            || async { StopSignal::Interrupt },
            drain.clone(),
            std::future::pending(),
            Duration::from_secs(600),
        )
        .await;
        assert!(!drain.is_draining());
    }

    #[tokio::test]
    async fn sigterm_drains_until_the_admitted_calls_end() {
        let drain = Drain::default();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let stop = tokio::spawn(drain_then_stop(
            one_sigterm(),
            drain.clone(),
            async {
                let _ = done_rx.await;
            },
            Duration::from_secs(600),
        ));
        while !drain.is_draining() {
            tokio::task::yield_now().await;
        }
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(!stop.is_finished(), "the calls in flight are waited for");
        done_tx.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), stop)
            .await
            .expect("stops once the calls ended")
            .unwrap();
    }

    #[tokio::test]
    async fn the_drain_has_a_time_limit_and_a_second_signal_ends_it() {
        let drain = Drain::default();
        let limit = Duration::from_millis(50);
        let started = std::time::Instant::now();
        drain_then_stop(one_sigterm(), drain.clone(), std::future::pending(), limit).await;
        assert!(drain.is_draining());
        assert!(started.elapsed() >= limit, "waited for the limit");

        let drain = Drain::default();
        tokio::time::timeout(
            Duration::from_secs(30),
            drain_then_stop(
                || async { StopSignal::Terminate },
                drain.clone(),
                std::future::pending(),
                Duration::from_secs(600),
            ),
        )
        .await
        .expect("a second signal stops the drain");
        assert!(drain.is_draining());
    }
}
