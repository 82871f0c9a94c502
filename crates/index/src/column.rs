//! A column of plain numbers that is either owned (built in memory) or borrowed from a memory-mapped index file.
//!
//! A loaded index serves every column straight from the page cache: nothing is parsed or copied, and pages a
//! query never touches never become part of the process. Writing to a mapped column (only the builder does)
//! copies it first.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use memmap2::Mmap;

/// Makes room for `more` items in `v`, growing by an eighth rather than doubling: a builder's columns can
/// outgrow their guess (long names, many aliases), and a doubled column at the end of a build was its peak.
/// Large blocks grow in place (`mremap`), so the extra growth steps cost no copies.
pub(crate) fn grow_gently<T>(v: &mut Vec<T>, more: usize) {
    if v.len() + more > v.capacity() {
        v.reserve_exact(more.max(v.capacity() / 8).max(4096));
    }
}

/// The element types a column may hold: plain little-endian integers with no padding and no invalid values,
/// so any aligned bytes of the right length are a valid slice of them.
pub trait Plain: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    fn le_to_native(self) -> Self;
    fn to_le(self) -> Self;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            fn le_to_native(self) -> Self {
                <$t>::from_le(self)
            }
            fn to_le(self) -> Self {
                <$t>::to_le(self)
            }
        }
    )*};
}
plain!(u8, u16, u32, u64);

#[derive(Clone)]
pub enum Col<T: Plain> {
    Owned(Vec<T>),
    /// `len` elements at byte `offset` of the map; the offset is aligned for `T` (checked when made).
    Mapped {
        map: Arc<Mmap>,
        offset: usize,
        len: usize,
    },
}

impl<T: Plain> Col<T> {
    /// A view of `bytes` at `offset..offset + bytes_len` of `map`, when it is aligned and a whole number of
    /// elements. On a big-endian machine the bytes are decoded into an owned column instead.
    pub(crate) fn mapped(map: &Arc<Mmap>, offset: usize, bytes_len: usize) -> Option<Col<T>> {
        let size = std::mem::size_of::<T>();
        let end = offset.checked_add(bytes_len)?;
        if end > map.len() || !bytes_len.is_multiple_of(size) {
            return None;
        }
        let bytes = &map[offset..end];
        if cfg!(target_endian = "big") {
            let v = bytes
                .chunks_exact(size)
                .map(|c| {
                    let mut x = T::default();
                    // SAFETY: `x` is a plain integer of exactly `size` bytes, `c` has `size` bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(c.as_ptr(), (&mut x as *mut T).cast(), size)
                    };
                    x.le_to_native()
                })
                .collect();
            return Some(Col::Owned(v));
        }
        if !(bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return None;
        }
        Some(Col::Mapped {
            map: Arc::clone(map),
            offset,
            len: bytes_len / size,
        })
    }

    /// The column as a vector, copied out of the map if it was mapped.
    pub fn make_owned(&mut self) -> &mut Vec<T> {
        if let Col::Mapped { .. } = self {
            *self = Col::Owned(self.deref().to_vec());
        }
        match self {
            Col::Owned(v) => v,
            Col::Mapped { .. } => unreachable!("converted above"),
        }
    }

    pub fn is_mapped(&self) -> bool {
        matches!(self, Col::Mapped { .. })
    }

    /// Drops this column's pages from the process's page table, when it is mapped (they stay in the page
    /// cache; the next read maps them back): for a column read by occasional work, not by queries.
    pub(crate) fn release_pages(&self) {
        #[cfg(unix)]
        if let Col::Mapped { map, offset, len } = self {
            // SAFETY: the map is private and read-only, so dropping its page table entries only makes the next
            // access read the same file bytes again. (The range is widened to whole pages: the neighbouring
            // bytes are read back the same way.)
            let _ = unsafe {
                map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    *offset,
                    *len * std::mem::size_of::<T>(),
                )
            };
        }
    }

    /// The elements as little-endian bytes, for writing.
    pub(crate) fn le_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        let s: &[T] = self;
        if cfg!(target_endian = "big") {
            let mut out = Vec::with_capacity(std::mem::size_of_val(s));
            for &x in s {
                let le = x.to_le();
                // SAFETY: reading the bytes of a plain integer.
                let b = unsafe {
                    std::slice::from_raw_parts((&le as *const T).cast::<u8>(), size_of::<T>())
                };
                out.extend_from_slice(b);
            }
            return out.into();
        }
        // SAFETY: `T` is a plain integer type without padding, so its slice is readable as bytes.
        unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
            .into()
    }
}

impl<T: Plain> Default for Col<T> {
    fn default() -> Self {
        Col::Owned(Vec::new())
    }
}

impl<T: Plain> From<Vec<T>> for Col<T> {
    fn from(v: Vec<T>) -> Self {
        Col::Owned(v)
    }
}

impl<T: Plain> Deref for Col<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Col::Owned(v) => v,
            // SAFETY: `mapped` checked that offset..offset + len * size lies inside the map and is aligned for
            // `T`, and `T` is a plain integer for which every bit pattern is valid. The map is read-only and
            // kept alive by the Arc for as long as this column lives. Index files are replaced by rename, never
            // rewritten in place, so the mapped bytes do not change under us.
            Col::Mapped { map, offset, len } => unsafe {
                std::slice::from_raw_parts(map.as_ptr().add(*offset).cast::<T>(), *len)
            },
        }
    }
}

impl<T: Plain> DerefMut for Col<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.make_owned()
    }
}

impl<T: Plain> std::fmt::Debug for Col<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_mapped() { "mapped" } else { "owned" };
        write!(f, "Col({kind}, {} elements)", self.len())
    }
}
