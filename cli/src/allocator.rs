//! The process's allocator: mimalloc (v3), reached through `libmimalloc-sys`, with the
//! alignment a request needs passed on only when it needs one.
//!
//! Why not the `mimalloc` crate's `MiMalloc`: it sends every allocation through
//! `mi_malloc_aligned`, and mimalloc v3's aligned path takes its fast path only while the size
//! class at hand has a free block ready; otherwise a request whose rounded size is not a power
//! of two (most of them, and every one over 1 KiB) is over-allocated by its alignment, into a
//! larger size class, through the generic path (mimalloc_rust#170 proposes the same dispatch
//! upstream). Under the bench's A2A `SendMessage` load that was 25 of a send's ~240
//! allocations, and ~26 instructions of wrapper per allocation. Here a request that mimalloc's
//! plain `mi_malloc` already aligns goes to it; the rest keep the aligned calls.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// mimalloc's allocator for the process (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct MiMalloc;

/// The alignment mimalloc gives every block of at least this many bytes (`MI_MAX_ALIGN_SIZE`,
/// C's `max_align_t`): a smaller block is aligned to its own size class, a multiple of eight.
const PLAIN_ALIGN: usize = 16;

/// Whether `mi_malloc(size)` returns a block aligned as `align` asks: the rule the standard
/// library's own `System` allocator applies to C's `malloc`, whose guarantee `mi_malloc` keeps.
fn plain(size: usize, align: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

/// A block for `layout` from `plain_call` (of a size) when its alignment suffices, else from
/// `aligned_call` (of a size and an alignment).
///
/// # Safety
/// `plain_call` and `aligned_call` are mimalloc's allocation calls of those arguments.
#[inline]
unsafe fn allocate(
    layout: Layout,
    plain_call: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned_call: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: the caller's calls, with the layout's size (and alignment)
    unsafe {
        if plain(layout.size(), layout.align()) {
            plain_call(layout.size()).cast()
        } else {
            aligned_call(layout.size(), layout.align()).cast()
        }
    }
}

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes blocks of the
// plain and of the aligned calls alike); a block from a plain call is aligned as its layout
// asks, by `plain`'s rule; every other request passes its alignment to mimalloc.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation calls, with the layout's size (and alignment)
        unsafe { allocate(layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`
        unsafe { allocate(layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator; mimalloc's plain realloc takes an aligned
        // block too, and its result is aligned by `plain`'s rule for the new size
        unsafe {
            if plain(new_size, layout.align()) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size to 4 KiB at every alignment to 4 KiB, allocated (plain and zeroed), grown
    /// and shrunk: each block aligned as asked, its bytes writable, zeroed when asked.
    #[test]
    fn every_block_is_aligned_as_its_layout_asks() {
        let a = MiMalloc;
        let mut kept = Vec::new();
        for align in (0..=12).map(|s| 1usize << s) {
            for size in (1..=4096usize).filter(|s| s % 7 == 0 || s.is_power_of_two() || s % align == 0) {
                let Ok(layout) = Layout::from_size_align(size, align) else {
                    continue;
                };
                // SAFETY: a non-zero size; each block written within its size and freed once
                unsafe {
                    let p = a.alloc_zeroed(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0));
                    p.write_bytes(0xA5, size);
                    let grown = a.realloc(p, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown {size} align {align}");
                    assert!(std::slice::from_raw_parts(grown, size).iter().all(|&b| b == 0xA5));
                    let shrunk = a.realloc(
                        grown,
                        Layout::from_size_align_unchecked(size * 3, align),
                        size.div_ceil(2),
                    );
                    assert_eq!(shrunk as usize % align, 0, "shrunk {size} align {align}");
                    let q = a.alloc(layout);
                    assert_eq!(q as usize % align, 0, "size {size} align {align}");
                    // kept a while, so that size classes run out of ready blocks
                    kept.push((q, layout));
                    a.dealloc(shrunk, Layout::from_size_align_unchecked(size.div_ceil(2), align));
                }
            }
        }
        for (q, layout) in kept {
            // SAFETY: allocated above with this layout
            unsafe { a.dealloc(q, layout) }
        }
    }
}
