//! Several requests to Lean in flight at once from one call, without a task
//! each: the futures borrow the call's pinned document, so they are polled
//! together in place.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Await every future, polling them together (their requests are in flight
/// at once); the outputs in the order given.
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}

/// Futures polled together, each output given as it comes with the index
/// it was pushed at; one can be dropped before it finishes (`cancel`),
/// which is how a caller stops the ones it no longer wants.
pub struct AsCompleted<'a, T> {
    futures: Vec<Option<Pin<Box<dyn Future<Output = T> + Send + 'a>>>>,
}

impl<'a, T> AsCompleted<'a, T> {
    pub fn new() -> Self {
        Self {
            futures: Vec::new(),
        }
    }

    /// Add a future; its outputs come with the index returned.
    pub fn push(&mut self, future: impl Future<Output = T> + Send + 'a) -> usize {
        self.futures.push(Some(Box::pin(future)));
        self.futures.len() - 1
    }

    /// Drop the unfinished futures at `indices`: they never give an output.
    pub fn cancel(&mut self, indices: std::ops::Range<usize>) {
        for slot in &mut self.futures[indices] {
            *slot = None;
        }
    }

    /// Take the future at `index` out, unfinished (none if it finished or
    /// was cancelled), to await it alone.
    pub fn take(&mut self, index: usize) -> Option<Pin<Box<dyn Future<Output = T> + Send + 'a>>> {
        self.futures.get_mut(index).and_then(Option::take)
    }

    /// The next output to finish, with its index; none once every future
    /// finished or was cancelled.
    pub async fn next(&mut self) -> Option<(usize, T)> {
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for (i, slot) in self.futures.iter_mut().enumerate() {
                let Some(future) = slot else { continue };
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => {
                        *slot = None;
                        return Poll::Ready(Some((i, value)));
                    }
                    Poll::Pending => pending = true,
                }
            }
            if pending {
                Poll::Pending
            } else {
                Poll::Ready(None)
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::{AsCompleted, join_all};

    #[tokio::test]
    async fn as_completed_gives_outputs_as_they_finish_and_none_once_cancelled() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let (_keep, never) = tokio::sync::oneshot::channel::<u32>();
        let mut running = AsCompleted::new();
        running.push(async move { rx.await.unwrap() });
        running.push(async move {
            tx.send(2).unwrap();
            1
        });
        running.push(async move { never.await.unwrap() });
        assert_eq!(running.next().await, Some((1, 1)));
        assert_eq!(running.next().await, Some((0, 2)));
        // The one that would never finish is dropped: the set is done.
        running.cancel(2..3);
        assert_eq!(running.next().await, None);
    }

    #[tokio::test]
    async fn outputs_keep_the_order_given_whatever_finishes_first() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let late = async move { rx.await.unwrap() };
        let early = async move {
            tx.send(2).unwrap();
            1
        };
        let futures: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = u32>>>> =
            vec![Box::pin(late), Box::pin(early)];
        assert_eq!(join_all(futures).await, [2, 1]);
    }
}
