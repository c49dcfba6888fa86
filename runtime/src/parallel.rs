//! Work over many items on a few threads, the results in the items' order: a harness
//! plan's paths checked and written (the work is the kernel's: path lookups, `stat`,
//! copies, which runs on every core at once), the review's reading of each plugin.

use std::sync::atomic::{AtomicUsize, Ordering};

/// At most this many threads (past a few, the kernel's path lookups contend).
const MAX_THREADS: usize = 4;

/// `each` of every item, on up to [`MAX_THREADS`] threads (no more than the cores) taking
/// blocks of `block` neighbours in turn (a harness plan takes 64 paths, so a folder's stay
/// together; the review one plugin); the results are in `items`' order. After an error,
/// no new block is started, and the first error in `items`' order is returned.
pub fn try_map<T: Sync, R: Send, E: Send>(
    items: &[T],
    block: usize,
    each: impl Fn(&T) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let block = block.max(1);
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(MAX_THREADS)
        .min(items.len().div_ceil(block));
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
                        let start = next.fetch_add(block, Ordering::Relaxed);
                        let Some(chunk) = items.get(start..(start + block).min(items.len())) else {
                            break;
                        };
                        let results: Vec<_> = chunk.iter().map(&each).collect();
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
        for block in [1, 64] {
            let doubled = try_map(&items, block, |i| Ok::<_, ()>(i * 2)).expect("no error");
            assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
            let failed = try_map(&items, block, |i| {
                if *i % 300 == 299 { Err(*i) } else { Ok(*i) }
            });
            assert_eq!(failed, Err(299));
        }
    }
}
