//! Handing freed memory back to the system between the stages of a prepare.
//!
//! glibc's allocator keeps what a program frees for its next allocations, so a process's
//! resident set only ever grows: after the BM25 and knowledge-graph stages of a million-chunk
//! prepare have dropped their tables, their pages stay resident, and the next stage's
//! allocations land beside them instead of in them once the heap is fragmented. `malloc_trim`
//! returns every free page (not only the top of the heap) to the system, so each stage starts
//! from what is live. It changes no value the program computes.
//!
//! This is the workspace's one module with `unsafe` code: a call into the C library.

/// Returns the pages the allocator holds free to the system (glibc on Linux; elsewhere
/// nothing: other allocators return memory on their own terms).
#[allow(unsafe_code)]
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer and only walks the allocator's own free lists,
    // under its own locks; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Moves `strings` into fresh allocations side by side, once what they were allocated among is
/// freed. A corpus read passage by passage interleaves each passage's small strings (its id)
/// with its large ones (its text): when the texts are dropped, one live id on each page keeps
/// every page of them resident, which no trim can return. Gathered into one buffer, the old
/// allocations freed and returned, and then made again, the strings fill a few contiguous pages.
/// Their values are unchanged.
pub fn regather(strings: &mut [&mut String]) {
    let lens: Vec<usize> = strings.iter().map(|s| s.len()).collect();
    let mut all = String::with_capacity(lens.iter().sum());
    for s in strings.iter_mut() {
        all.push_str(s);
        **s = String::new();
    }
    release_freed();
    let mut at = 0;
    for (s, n) in strings.iter_mut().zip(lens) {
        **s = all[at..at + n].to_string();
        at += n;
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// The resident set, KiB (`VmRSS`).
    fn rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn pages_freed_below_live_memory_go_back_to_the_system() {
        // 256 MiB in small blocks (kept by the allocator, not mapped one by one), then a block
        // allocated after them that stays live: freeing the small ones leaves a hole below
        // it, which only `malloc_trim` returns (trimming the heap's top cannot reach it)
        let small: Vec<Box<[u8; 1024]>> = (0..262_144).map(|i| Box::new([i as u8; 1024])).collect();
        let live = Box::new([1u8; 1024]);
        drop(small);
        let before = rss_kib();
        super::release_freed();
        let after = rss_kib();
        assert_eq!(live[1023], 1);
        assert!(
            before - after.min(before) > 128 * 1024,
            "{before} KiB before, {after} KiB after"
        );
    }

    #[test]
    fn small_strings_left_among_freed_texts_are_regathered_and_the_pages_returned() {
        // 256 MiB of texts, each followed by the small id of its passage
        let mut texts = Vec::new();
        let mut ids = Vec::new();
        for i in 0..65_536u32 {
            texts.push("x".repeat(4000));
            ids.push(format!("p{i:07}"));
        }
        let want = ids.clone();
        drop(texts);
        super::release_freed();
        let pinned = rss_kib();
        let mut refs: Vec<&mut String> = ids.iter_mut().collect();
        super::regather(&mut refs);
        super::release_freed();
        let after = rss_kib();
        assert_eq!(ids, want, "values unchanged");
        assert!(
            pinned - after.min(pinned) > 128 * 1024,
            "{pinned} KiB with the ids among the freed texts, {after} KiB regathered"
        );
    }
}
