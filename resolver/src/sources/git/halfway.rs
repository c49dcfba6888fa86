//! A kept tree's NAR read back with the export's fault step in the middle, so a kill
//! there leaves half a tree in staging, as an export from git objects would.

/// Reads a kept NAR, stopping at the fault step `git-export-mid` once half of it is read
/// (and so half the tree written), as an export from git objects stops there mid-tree.
pub(super) struct HalfwayPause<'a> {
    rest: &'a [u8],
    half: usize,
}

impl<'a> HalfwayPause<'a> {
    pub(super) fn new(nar: &'a [u8]) -> Self {
        Self {
            rest: nar,
            half: nar.len() / 2,
        }
    }
}

impl std::io::Read for HalfwayPause<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = if self.half > 0 {
            buf.len().min(self.half)
        } else {
            buf.len()
        };
        let read = self.rest.read(&mut buf[..n])?;
        if self.half > 0 {
            self.half -= read;
            if self.half == 0 {
                berth_store::fault::pause_at(berth_store::fault::GIT_EXPORT_MID);
            }
        }
        Ok(read)
    }
}
