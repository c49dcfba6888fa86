//! I/O errors of a cache, named after the cache.

use std::io;

use super::{Cache, CacheError};

/// An I/O result of one cache, whose error is then named after the cache.
pub(super) trait InCache<T> {
    /// The result, an error naming `cache`.
    fn in_cache(self, cache: &Cache) -> Result<T, CacheError>;
}

impl<T> InCache<T> for io::Result<T> {
    fn in_cache(self, cache: &Cache) -> Result<T, CacheError> {
        self.map_err(|source| CacheError::Io {
            cache: cache.label.clone(),
            source,
        })
    }
}
