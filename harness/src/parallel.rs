//! A plan's paths checked and written on a few threads: the work is the kernel's (path
//! lookups, `stat`, copies), which runs on every core at once.

use std::sync::atomic::{AtomicUsize, Ordering};

/// At most this many threads (past a few, the kernel's path lookups contend).
const MAX_THREADS: usize = 4;

/// How many neighbouring items one thread takes at a time: paths of one folder stay
/// together, and the threads still even out over a plan of one large folder.
const BLOCK: usize = 64;

/// `each` of every item, on up to [`MAX_THREADS`] threads taking blocks of neighbours in
/// turn; the results are in `items`' order. After an error, no new block is started, and
/// the first error in `items`' order is returned.
pub(super) fn try_map<T: Sync, R: Send, E: Send>(
    items: &[T],
    each: impl Fn(&T) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(MAX_THREADS)
        .min(items.len().div_ceil(BLOCK));
    if threads <= 1 {
        return items.iter().map(each).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let mut done: Vec<(usize, Vec<Result<R, E>>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut blocks = Vec::new();
                    while !failed.load(Ordering::Relaxed) {
                        let start = next.fetch_add(BLOCK, Ordering::Relaxed);
                        let Some(block) = items.get(start..(start + BLOCK).min(items.len())) else {
                            break;
                        };
                        let results: Vec<_> = block.iter().map(&each).collect();
                        if results.iter().any(Result::is_err) {
                            failed.store(true, Ordering::Relaxed);
                        }
                        blocks.push((start, results));
                    }
                    blocks
                })
            })
            .collect();
        workers
            .into_iter()
            // A panic in `each` is a bug: it is passed on, not turned into an error.
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(start, _)| *start);
    // Blocks after a failed one may be missing; the error comes before any gap.
    done.into_iter().flat_map(|(_, results)| results).collect()
}

#[cfg(test)]
mod tests {
    use super::try_map;

    #[test]
    fn results_keep_their_order_and_the_first_error_wins() {
        let items: Vec<usize> = (0..1000).collect();
        let doubled = try_map(&items, |i| Ok::<_, ()>(i * 2)).expect("no error");
        assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        let failed = try_map(&items, |i| if *i % 300 == 299 { Err(*i) } else { Ok(*i) });
        assert_eq!(failed, Err(299));
    }
}
