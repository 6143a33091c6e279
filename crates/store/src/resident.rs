//! Keeping the store's map out of the process's resident memory between loads.
//!
//! The store is written once per config load and read at start; requests never read it. Yet every page
//! a write or a full read touches stays mapped into the process, so the map counted in the node's RSS at
//! about twice the config's stored size (LMDB writes each new config next to the previous one). After
//! a whole-config write or read, [`MapPages::release`] drops those pages from the process's page
//! tables: their content stays in the data file and the kernel's page cache, and the next access faults
//! them back in, as it would after a restart.

use std::ops::Range;

/// The address range of the environment's file mapping.
#[derive(Clone, Debug)]
pub(crate) struct MapPages {
    range: Range<usize>,
}

impl MapPages {
    /// The mapping that contains `inside` (any byte LMDB handed out from the map), found in
    /// `/proc/self/maps`; None where that file does not exist or no mapping contains it.
    pub(crate) fn containing(inside: *const u8) -> Option<MapPages> {
        let addr = inside as usize;
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        maps.lines().find_map(|line| {
            let (start, end) = line.split_whitespace().next()?.split_once('-')?;
            let range =
                usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?;
            range.contains(&addr).then_some(MapPages { range })
        })
    }

    /// Drops the map's pages from this process's resident set (not from the file or the page cache).
    pub(crate) fn release(&self) {
        #[cfg(target_os = "linux")]
        #[allow(unsafe_code)]
        // SAFETY: the range is exactly LMDB's shared, file-backed mapping of the data file (found by an
        // address inside it). `MADV_DONTNEED` on a shared file mapping only unmaps pages: their content
        // stays in the page cache and the file (pages a concurrent writer dirtied stay dirty and are
        // written back), and any later access, by LMDB readers or the writer, faults the same bytes
        // back in. No Rust reference into the map is invalidated: its bytes do not change.
        unsafe {
            libc::madvise(
                self.range.start as *mut libc::c_void,
                self.range.len(),
                libc::MADV_DONTNEED,
            );
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
impl MapPages {
    /// Resident kB of the mapping, from `/proc/self/smaps`.
    pub(crate) fn resident_kb(&self) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let header = format!("{:x}-{:x} ", self.range.start, self.range.end);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&header));
        lines
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(u64::MAX)
    }
}
