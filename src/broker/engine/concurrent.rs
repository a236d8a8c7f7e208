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

#[cfg(test)]
mod tests {
    use super::join_all;

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
