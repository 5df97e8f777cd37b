//! The binary's global allocator: mimalloc, asked for a plain block wherever one will do.
//!
//! A load run allocates and frees a few small blocks per request on every partition thread.
//! `mimalloc::MiMalloc` hands every Rust allocation to `mi_malloc_aligned`, whose fast path
//! serves a block only while its size class's page has one on its free list; when the list
//! is empty and the block size is not a power of two, it falls back to over-allocating and
//! aligning the block by hand, and freeing such a block takes mimalloc's slow path too. Under
//! callgrind that was about 3.6 allocations per `load` request, at about 250 instructions each.
//! Every mimalloc block is aligned to at least a word, so a layout that asks for no more than
//! that gets `mi_malloc`, whose empty-list path refills the page instead; larger alignments
//! (cache-padded atomics, for one) still go to the aligned call.

use std::alloc::{GlobalAlloc, Layout};

use libmimalloc_sys as mi;

/// The alignment every mimalloc block has: a word.
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc, with plain calls for word-aligned layouts. See the [module docs](self).
pub(crate) struct Mimalloc;

// SAFETY: every call passes mimalloc a layout it can satisfy: `mi_malloc`, `mi_zalloc` and
// `mi_realloc` return word-aligned blocks (enough for `align <= WORD`), the `_aligned` calls
// honour any power-of-two alignment, and `mi_free` takes a block from any of them.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from one of the calls above.
        unsafe { mi::mi_free(ptr.cast()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from one of the calls above with `layout`'s alignment.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}
