//! A registration (pin-down) cache built the way gpudirect §3.5 describes: on first use of a
//! device buffer, cuMemGetAddressRange gives the whole allocation, which is pinned rounded out
//! to 64 KB (§2.2, §3.5) and stored with its CU_POINTER_ATTRIBUTE_BUFFER_ID; on every later use
//! the buffer id is read again (the tag check) and a different id, or an error, means the
//! allocation was freed or reallocated, so the entry is unpinned and never served.
//!
//! The memory and the pinning are traits so the logic is tested offline with a fake allocator
//! (below) and runs on a GPU with cuMemAlloc and the companion module.

/// gpudirect §3.5: "round the whole pinning to 64KB".
pub(crate) const GPU_PAGE: u64 = 64 * 1024;

/// What the cache asks of the memory (CUDA on a GPU, a fake in tests).
pub(crate) trait Memory {
    /// The driver's error (a `CUresult` on a GPU).
    type Error: std::error::Error;
    /// cuMemGetAddressRange: (base, size) of the allocation containing `p`.
    fn address_range(&self, p: u64) -> Result<(u64, u64), Self::Error>;
    /// cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_BUFFER_ID); `Err` for a freed pointer.
    fn buffer_id(&self, p: u64) -> Result<u64, Self::Error>;
}

/// What the cache asks of the pinning side (the companion module's PIN/UNPIN on a rig).
pub(crate) trait Pinner {
    type Pin: std::fmt::Debug;
    /// The pinning side's error (an errno of PIN on a rig).
    type Error: std::error::Error;
    fn pin(&mut self, va: u64, len: u64) -> Result<Self::Pin, Self::Error>;
    fn unpin(&mut self, pin: Self::Pin);
}

/// Why a lookup served no pin; the memory's and the pinner's errors as their messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RegCacheError {
    #[error("{p:#x}+{len} overflows")]
    Overflow { p: u64, len: u64 },
    /// The buffer id of `p` cannot be read: freed (§3.5's tag check).
    #[error("{p:#x} is not a live buffer: {reason}")]
    NotLive { p: u64, reason: String },
    /// cuMemGetAddressRange failed.
    #[error("{0}")]
    AddressRange(String),
    #[error("allocation {base:#x}+{size} overflows")]
    AllocationOverflow { base: u64, size: u64 },
    #[error("{p:#x}+{len} runs past its allocation {base:#x}+{size}")]
    PastAllocation {
        p: u64,
        len: u64,
        base: u64,
        size: u64,
    },
    #[error("{0}")]
    Pin(String),
}

#[derive(Debug)]
struct Entry<P> {
    start: u64,
    end: u64,
    buffer_id: u64,
    pin: P,
}

/// How a lookup was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The cached pin, its buffer id unchanged.
    Hit,
    /// Nothing cached: the allocation was pinned.
    Miss,
    /// A cached entry's buffer id changed (freed and reallocated): it was unpinned and the new
    /// allocation pinned.
    Stale,
}

/// A served pin, the 64 KB-rounded range it covers, and how it was found.
pub(crate) type Served<'c, Pin> = (&'c Pin, (u64, u64), Lookup);

/// The cache.
#[derive(Debug)]
pub(crate) struct RegCache<P: Pinner> {
    pinner: P,
    entries: Vec<Entry<P::Pin>>,
}

impl<P: Pinner> RegCache<P> {
    pub fn new(pinner: P) -> Self {
        RegCache {
            pinner,
            entries: Vec::new(),
        }
    }

    /// The pin covering `p..p+len`, and how it was found. A pointer whose buffer id cannot be
    /// read (freed) drops every entry covering it and is an error.
    pub fn get(
        &mut self,
        mem: &impl Memory,
        p: u64,
        len: u64,
    ) -> Result<Served<'_, P::Pin>, RegCacheError> {
        let end = p
            .checked_add(len.max(1))
            .ok_or(RegCacheError::Overflow { p, len })?;
        let id = match mem.buffer_id(p) {
            Ok(id) => id,
            Err(e) => {
                self.evict(|e| e.start <= p && p < e.end);
                return Err(RegCacheError::NotLive {
                    p,
                    reason: e.to_string(),
                });
            }
        };
        let mut how = Lookup::Miss;
        if let Some(i) = self
            .entries
            .iter()
            .position(|e| e.start <= p && end <= e.end)
        {
            if self.entries[i].buffer_id == id {
                let e = &self.entries[i];
                return Ok((&e.pin, (e.start, e.end), Lookup::Hit));
            }
            how = Lookup::Stale;
        }
        // whatever overlaps the new allocation belongs to an older one: never serve it again
        let (base, size) = mem
            .address_range(p)
            .map_err(|e| RegCacheError::AddressRange(e.to_string()))?;
        let start = base & !(GPU_PAGE - 1);
        let stop = base
            .checked_add(size)
            .and_then(|e| e.checked_add(GPU_PAGE - 1))
            .ok_or(RegCacheError::AllocationOverflow { base, size })?
            & !(GPU_PAGE - 1);
        if end > base + size {
            return Err(RegCacheError::PastAllocation { p, len, base, size });
        }
        if self
            .entries
            .iter()
            .any(|e| e.start < stop && start < e.end && e.buffer_id != id)
        {
            how = Lookup::Stale;
        }
        self.evict(|e| e.start < stop && start < e.end);
        let pin = self
            .pinner
            .pin(start, stop - start)
            .map_err(|e| RegCacheError::Pin(e.to_string()))?;
        self.entries.push(Entry {
            start,
            end: stop,
            buffer_id: id,
            pin,
        });
        let i = self.entries.len() - 1;
        let e = &self.entries[i];
        Ok((&e.pin, (start, stop), how))
    }

    fn evict(&mut self, f: impl Fn(&Entry<P::Pin>) -> bool) {
        let (gone, kept): (Vec<_>, Vec<_>) = self.entries.drain(..).partition(|e| f(e));
        self.entries = kept;
        for e in gone {
            self.pinner.unpin(e.pin);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Unpin everything and hand the pinner back.
    pub(crate) fn into_pinner(mut self) -> P {
        self.evict(|_| true);
        let RegCache { pinner, .. } = self;
        pinner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A fake cuMemAlloc: allocations at chosen addresses, a fresh buffer id for each (as
    /// §3.5 says a reallocation gets a different id), errors for freed pointers.
    #[derive(Default)]
    struct FakeMem {
        live: RefCell<Vec<(u64, u64, u64)>>, // base, size, id
        next_id: RefCell<u64>,
    }
    impl FakeMem {
        fn alloc_at(&self, base: u64, size: u64) {
            let mut n = self.next_id.borrow_mut();
            *n += 1;
            self.live.borrow_mut().push((base, size, 0x1000 + *n));
        }
        fn free(&self, base: u64) {
            self.live.borrow_mut().retain(|a| a.0 != base);
        }
        fn find(&self, p: u64) -> Option<(u64, u64, u64)> {
            self.live
                .borrow()
                .iter()
                .copied()
                .find(|a| a.0 <= p && p < a.0 + a.1)
        }
    }
    /// What the driver answers for a pointer into no allocation.
    #[derive(Debug, thiserror::Error)]
    #[error("CUDA_ERROR_INVALID_VALUE")]
    struct InvalidValue;

    impl Memory for FakeMem {
        type Error = InvalidValue;
        fn address_range(&self, p: u64) -> Result<(u64, u64), InvalidValue> {
            self.find(p).map(|a| (a.0, a.1)).ok_or(InvalidValue)
        }
        fn buffer_id(&self, p: u64) -> Result<u64, InvalidValue> {
            self.find(p).map(|a| a.2).ok_or(InvalidValue)
        }
    }

    /// Records pins; each pin remembers the generation of memory it was made on.
    #[derive(Default, Debug)]
    struct FakePins {
        live: Vec<(u64, u64, u32)>,
        made: u32,
    }
    impl Pinner for FakePins {
        type Pin = (u64, u64, u32);
        type Error = std::convert::Infallible;
        fn pin(&mut self, va: u64, len: u64) -> Result<Self::Pin, Self::Error> {
            assert_eq!(va % GPU_PAGE, 0, "§3.2: pins start 64 KB aligned");
            assert_eq!(len % GPU_PAGE, 0, "§3.5: pins are whole 64 KB units");
            self.made += 1;
            let p = (va, len, self.made);
            self.live.push(p);
            Ok(p)
        }
        fn unpin(&mut self, pin: Self::Pin) {
            let before = self.live.len();
            self.live.retain(|p| *p != pin);
            assert_eq!(self.live.len() + 1, before, "unpinned once");
        }
    }

    const MB: u64 = 1 << 20;

    #[test]
    fn first_use_pins_the_whole_allocation_rounded_to_64k() {
        let mem = FakeMem::default();
        mem.alloc_at(0x7_0000_1000, MB + 100); // neither end 64 KB aligned
        let mut c = RegCache::new(FakePins::default());
        let (_, range, how) = c.get(&mem, 0x7_0000_1000 + 5000, 64).expect("get");
        assert_eq!(how, Lookup::Miss);
        // from the allocation's base rounded down to its end rounded up (not the request's)
        assert_eq!(range, (0x7_0000_0000, 0x7_0011_0000));
        assert!(range.1 >= 0x7_0000_1000 + MB + 100);
        let (_, _, how) = c.get(&mem, 0x7_0000_1000, MB).expect("get");
        assert_eq!(
            how,
            Lookup::Hit,
            "another range of the same allocation hits"
        );
        assert_eq!(c.into_pinner().live.len(), 0);
    }

    #[test]
    fn realloc_at_the_same_address_is_never_served_stale() {
        let mem = FakeMem::default();
        mem.alloc_at(0x10_0000, 2 * MB);
        let mut c = RegCache::new(FakePins::default());
        let (&(_, _, gen1), _, _) = c.get(&mem, 0x10_0000, 4096).expect("get");
        mem.free(0x10_0000);
        mem.alloc_at(0x10_0000, 2 * MB); // cuMemFree then cuMemAlloc returning the same VA
        let (&(_, _, gen2), _, how) = c.get(&mem, 0x10_0000, 4096).expect("get");
        assert_eq!(how, Lookup::Stale);
        assert_ne!(
            gen1, gen2,
            "a new pin, not the one made on the freed memory"
        );
        assert_eq!(c.len(), 1);
        let pins = c.into_pinner();
        assert!(pins.live.is_empty());
        assert_eq!(pins.made, 2);
    }

    #[test]
    fn a_freed_pointer_is_an_error_and_its_entry_is_unpinned() {
        let mem = FakeMem::default();
        mem.alloc_at(0x20_0000, MB);
        let mut c = RegCache::new(FakePins::default());
        c.get(&mem, 0x20_0000, 1).expect("get");
        mem.free(0x20_0000);
        assert_eq!(
            c.get(&mem, 0x20_0000, 1).unwrap_err(),
            RegCacheError::NotLive {
                p: 0x20_0000,
                reason: "CUDA_ERROR_INVALID_VALUE".into()
            }
        );
        assert!(c.is_empty(), "the stale entry is gone");
        assert!(c.into_pinner().live.is_empty());
    }

    #[test]
    fn a_smaller_realloc_inside_an_old_entry_gets_its_own_pin() {
        // the old 4 MB entry covers the new 64 KB allocation's range: the id check catches it
        let mem = FakeMem::default();
        mem.alloc_at(0x40_0000, 4 * MB);
        let mut c = RegCache::new(FakePins::default());
        c.get(&mem, 0x40_0000, 1).expect("get");
        mem.free(0x40_0000);
        mem.alloc_at(0x40_0000 + MB, GPU_PAGE);
        let (_, range, how) = c.get(&mem, 0x40_0000 + MB, 10).expect("get");
        assert_eq!(how, Lookup::Stale);
        assert_eq!(range, (0x40_0000 + MB, 0x40_0000 + MB + GPU_PAGE));
        assert_eq!(c.len(), 1);
        let pins = c.into_pinner();
        assert!(pins.live.is_empty());
    }

    #[test]
    fn neighbours_in_different_64k_units_keep_their_pins() {
        let mem = FakeMem::default();
        mem.alloc_at(0x100_0000, GPU_PAGE);
        mem.alloc_at(0x100_0000 + GPU_PAGE, GPU_PAGE);
        let mut c = RegCache::new(FakePins::default());
        c.get(&mem, 0x100_0000, 8).expect("a");
        c.get(&mem, 0x100_0000 + GPU_PAGE, 8).expect("b");
        assert_eq!(c.len(), 2);
        let (_, _, how) = c.get(&mem, 0x100_0000, 8).expect("a again");
        assert_eq!(how, Lookup::Hit);
        // a request running past its allocation is refused, not pinned
        assert!(c.get(&mem, 0x100_0000 + 8, GPU_PAGE).is_err());
        assert!(c.into_pinner().live.is_empty());
    }
}
