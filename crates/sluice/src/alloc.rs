//! The process allocator (mimalloc) and the two things we ask of it beyond allocating: giving the
//! memory of a config load back to the OS, and not doing so on the request path.
//!
//! A load of a large config allocates a few hundred MB for a moment (the parsed document, the new
//! entities and snapshot next to the live ones) on a blocking thread that then goes idle. mimalloc
//! purges freed pages lazily, on that thread's next allocation, so without a nudge the node kept
//! ~2× the memory it needs (measured with the 10k-route config: 355 MB heap after reloads, 165 MB
//! with purging).
//!
//! Purging at once all the time is wrong for the workers, though: a page that empties between two
//! requests is handed back with `madvise` and faulted in again by the next. Measured under wrk
//! (c=50, HTTPS, 1 worker, `perf stat -e page-faults,syscalls:sys_enter_madvise`): 0.3 page faults
//! and 0.05 `madvise` per request; nginx has none. So purging is eager only while a load runs
//! ([`EagerPurge`]) and lazy otherwise (then 1 s, now 10 s: see [`SERVING_PURGE_DELAY_MS`]): 0.002
//! faults and no `madvise` per request, with the heap after reloads of the 10k-route config unchanged
//! (99 MB against 96 MB, `sluice-perf reload`).

use std::sync::atomic::{AtomicUsize, Ordering};

/// `--features system-alloc` builds with the system allocator instead, for heap profilers that hook
/// `malloc` (heaptrack, valgrind's massif); the purge settings below then have nothing to act on.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// mimalloc, asked for alignment only when a layout needs more than every block has.
///
/// The `mimalloc` crate's allocator calls `mi_malloc_aligned` for every layout. That function's quick
/// path covers blocks up to 1 KiB only; a larger one (a request's boxed future, a read buffer) takes its
/// generic path. Counted with callgrind on the no-plugins case: ~10 allocations per request at ~95
/// instructions each. Every mimalloc block is word-aligned (block sizes are whole words), and a size that
/// is a multiple of 16 lands in a bin of such blocks, each 16-aligned (bins above 8 words are all even
/// word counts; a page's first block is 16-aligned). Those layouts go to plain `mi_malloc`; the rest keep
/// the aligned calls.
#[cfg(not(feature = "system-alloc"))]
struct Mimalloc;

/// Whether every block mimalloc returns for `layout`'s size already has `layout`'s alignment.
#[cfg(not(feature = "system-alloc"))]
#[inline(always)]
fn natural(layout: std::alloc::Layout) -> bool {
    layout.align() <= 8 || (layout.align() == 16 && layout.size().is_multiple_of(16))
}

#[cfg(not(feature = "system-alloc"))]
#[allow(unsafe_code)]
// SAFETY: each call hands mimalloc a size (and, where needed, the layout's power-of-two alignment) and
// returns its pointer untouched; `natural` layouts are only sent to the unaligned calls when every block
// mimalloc returns for them has the layout's alignment (see `Mimalloc`). Every block, however it was
// allocated, is freed with `mi_free`, which takes any mimalloc pointer.
unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        match natural(layout) {
            true => libmimalloc_sys::mi_malloc(layout.size()).cast(),
            false => libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast(),
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        match natural(layout) {
            true => libmimalloc_sys::mi_zalloc(layout.size()).cast(),
            false => libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast(),
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        libmimalloc_sys::mi_free(ptr.cast());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        // The new size must keep the layout natural too.
        let grown = std::alloc::Layout::from_size_align_unchecked(size, layout.align());
        match natural(grown) {
            true => libmimalloc_sys::mi_realloc(ptr.cast(), size).cast(),
            false => libmimalloc_sys::mi_realloc_aligned(ptr.cast(), size, layout.align()).cast(),
        }
    }
}

/// mimalloc's `mi_option_purge_delay` (the same index in its v2 and v3 headers; the Rust bindings
/// do not name it).
const OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The purge delay while serving, in milliseconds: pages freed and reused within it stay mapped. 10 ms
/// still let 0.04 pages per request fault back in. mimalloc v3's own default, 1 s, is too short for a
/// stream of changes (DB mode's writes on other nodes, a data plane's deltas): each change frees the
/// replaced snapshot's parts and allocates the next one's, and with 1 s the worker purged the freed
/// ranges (`madvise` on the request path, 96-284 per 7 s at a write every ~100 ms) and the next apply
/// faulted them back in: ~75 of its ~130 page faults per change on 10,000 routes, some as huge pages
/// zeroed whole. With 10 s: 2,200-4,060 faults per 7 s of writes instead of 6,160-9,500, 0-51 `madvise`
/// (`perf stat -p` on node B under `sluice-perf db`'s load). Whole loads purge at once anyway
/// ([`EagerPurge`]).
const SERVING_PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// How many [`EagerPurge`] guards are alive (loads are serialised, but the count keeps nesting safe).
static EAGER: AtomicUsize = AtomicUsize::new(0);

/// Bumped by every [`EagerPurge::start`], so a lingering restore from an earlier load can tell that a
/// newer one began.
static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// How long purging stays eager after the last guard is dropped: the admin thread still writes and
/// frees the `POST /config` reply (the whole config echoed back), and requests that started on the
/// old snapshot still release it from the workers.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

fn set_purge_delay(ms: std::ffi::c_long) {
    #[allow(unsafe_code)]
    // SAFETY: `mi_option_set` takes plain integers and only stores the option value, which
    // mimalloc reads afresh at each free.
    unsafe {
        libmimalloc_sys::mi_option_set(OPTION_PURGE_DELAY, ms);
    }
}

/// Sets the serving purge delay. Call first thing in `main`.
pub fn configure() {
    set_purge_delay(SERVING_PURGE_DELAY_MS);
}

/// While alive, pages freed by any thread go back to the OS at once instead of after a delay
/// measured on the freeing thread's next allocation (a loader thread may not allocate again for a
/// long time). Hold one on the loading thread for the whole of a config load, parse to release of
/// the old snapshot: dropping it also returns what that thread's heap no longer uses.
pub struct EagerPurge(());

impl EagerPurge {
    pub fn start() -> Self {
        GENERATION.fetch_add(1, Ordering::AcqRel);
        if EAGER.fetch_add(1, Ordering::AcqRel) == 0 {
            set_purge_delay(0);
        }
        EagerPurge(())
    }
}

impl Drop for EagerPurge {
    /// Returns this thread's unused memory. The last guard out also restores the delay after
    /// [`LINGER`] (on the tokio runtime it runs in, so no thread is created and abandoned) unless
    /// another load began meanwhile; outside a runtime (the load at start, before anything was
    /// served) at once.
    fn drop(&mut self) {
        release_unused_memory();
        if EAGER.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let generation = GENERATION.load(Ordering::Acquire);
        let restore = move || {
            if EAGER.load(Ordering::Acquire) == 0
                && GENERATION.load(Ordering::Acquire) == generation
            {
                set_purge_delay(SERVING_PURGE_DELAY_MS);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(LINGER).await;
                    restore();
                });
            }
            Err(_) => restore(),
        }
    }
}

/// Frees what this thread's heap holds but no longer uses, and returns it to the OS.
fn release_unused_memory() {
    #[allow(unsafe_code)]
    // SAFETY: `mi_collect` takes no pointers and only walks mimalloc's own per-thread structures;
    // it is documented as safe to call at any time from any thread.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}
