//! Compact, read-only row storage.
//!
//! A feed may be a 1 GB CSV shared by thousands of VUs, so rows are not kept as
//! `Vec<Vec<String>>` (24 bytes of `String` header plus an allocation per field, and
//! allocator overhead on top: several times the file size). Instead all rows live in
//! one byte arena, row-major, and one offset per row says where each row ends:
//!
//! ```text
//! row = varint(len f0) f0 varint(len f1) f1 ... varint(len f(n-2)) f(n-2) f(n-1)
//! ```
//!
//! The last field's length is implied by the row's end, so a single-column feed stores
//! only its bytes; every other field costs one length byte while it is shorter than 128
//! bytes — the same as the separator it replaces in the file. Row ends are `u32` until
//! the arena passes 4 GiB, then `u64`. Reading a field walks at most `columns - 1`
//! varints: a few byte loads, no allocation.

/// Where rows end in the arena: `u32` while the arena is below 4 GiB (halving the index
/// for the common case), `u64` beyond.
enum Offsets {
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl Offsets {
    fn push(&mut self, v: u64) {
        match self {
            Offsets::U32(o) => match u32::try_from(v) {
                Ok(v32) => o.push(v32),
                Err(_) => {
                    let mut wide: Vec<u64> = Vec::with_capacity(o.capacity().max(o.len() + 1));
                    wide.extend(o.iter().map(|&x| u64::from(x)));
                    wide.push(v);
                    *self = Offsets::U64(wide);
                }
            },
            Offsets::U64(o) => o.push(v),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> usize {
        match self {
            Offsets::U32(o) => o[i] as usize,
            Offsets::U64(o) => o[i] as usize,
        }
    }

    fn len(&self) -> usize {
        match self {
            Offsets::U32(o) => o.len(),
            Offsets::U64(o) => o.len(),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Offsets::U32(o) => o.shrink_to_fit(),
            Offsets::U64(o) => o.shrink_to_fit(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Offsets::U32(o) => o.capacity() * 4,
            Offsets::U64(o) => o.capacity() * 8,
        }
    }
}

/// Rows of byte fields (validated UTF-8 by the loaders), read-only once built.
pub(crate) struct Table {
    arena: Vec<u8>,
    row_ends: Offsets,
    ncols: usize,
}

impl Table {
    /// Number of rows.
    pub(crate) fn rows(&self) -> u64 {
        self.row_ends.len() as u64
    }

    /// The bytes of field `col` of row `row`. Panics when either is out of range (the
    /// caller picks rows with [`super::Feed::pick`] and columns by name, so that is a
    /// bug, not bad input).
    #[inline]
    pub(crate) fn field(&self, row: u64, col: usize) -> &[u8] {
        assert!(col < self.ncols, "column {col} out of range");
        let r = row as usize;
        let start = if r == 0 { 0 } else { self.row_ends.get(r - 1) };
        let end = self.row_ends.get(r);
        let a = &self.arena[start..end];
        let mut pos = 0;
        for _ in 0..col {
            let (len, p) = read_varint(a, pos);
            pos = p + len;
        }
        if col + 1 == self.ncols {
            &a[pos..]
        } else {
            let (len, p) = read_varint(a, pos);
            &a[p..p + len]
        }
    }

    /// Heap bytes held (capacities, not lengths: that is what the process pays).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.arena.capacity() + self.row_ends.heap_bytes()
    }
}

/// Builds a [`Table`] row by row.
pub(crate) struct TableBuilder {
    arena: Vec<u8>,
    row_ends: Offsets,
    ncols: usize,
}

impl TableBuilder {
    /// A builder for rows of `ncols` fields; `arena_hint` is the expected total of field
    /// bytes (the file size for files: fields never take more than the file, give or
    /// take a length byte per long field), reserved up front so that the arena does not
    /// grow by doubling to twice what it needs.
    pub(crate) fn new(ncols: usize, arena_hint: u64) -> TableBuilder {
        debug_assert!(ncols > 0);
        // Reserving is only a hint: a bogus size must not abort the process.
        let hint = usize::try_from(arena_hint).unwrap_or(0).min(1 << 40);
        let mut arena = Vec::new();
        let _ = arena.try_reserve_exact(hint);
        TableBuilder {
            arena,
            row_ends: Offsets::U32(Vec::new()),
            ncols,
        }
    }

    /// Appends one row. `fields` must yield exactly `ncols` fields (checked by the
    /// loaders, which report the line).
    pub(crate) fn push_row<'a, I>(&mut self, fields: I)
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        let mut n = 0;
        for f in fields {
            n += 1;
            if n < self.ncols {
                push_varint(&mut self.arena, f.len() as u64);
            }
            self.arena.extend_from_slice(f);
        }
        debug_assert_eq!(n, self.ncols, "row with the wrong number of fields");
        self.row_ends.push(self.arena.len() as u64);
    }

    /// Number of rows so far.
    pub(crate) fn rows(&self) -> u64 {
        self.row_ends.len() as u64
    }

    /// The finished table, with spare capacity given back.
    pub(crate) fn finish(mut self) -> Table {
        self.arena.shrink_to_fit();
        self.row_ends.shrink_to_fit();
        Table {
            arena: self.arena,
            row_ends: self.row_ends,
            ncols: self.ncols,
        }
    }
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint at `pos`; returns (value, position after it).
#[inline]
fn read_varint(b: &[u8], mut pos: usize) -> (usize, usize) {
    let mut v: u64 = 0;
    let mut shift = 0;
    loop {
        let byte = b[pos];
        pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return (v as usize, pos);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_including_long_and_empty() {
        let long = vec![b'x'; 300];
        let mut b = TableBuilder::new(3, 0);
        b.push_row([&b"a"[..], b"", b"c"]);
        b.push_row([&long[..], "검색 엔진".as_bytes(), b""]);
        b.push_row([&b""[..], b"", b""]);
        let t = b.finish();
        assert_eq!(t.rows(), 3);
        assert_eq!(t.field(0, 0), b"a");
        assert_eq!(t.field(0, 1), b"");
        assert_eq!(t.field(0, 2), b"c");
        assert_eq!(t.field(1, 0), &long[..]);
        assert_eq!(t.field(1, 1), "검색 엔진".as_bytes());
        assert_eq!(t.field(1, 2), b"");
        assert_eq!(t.field(2, 1), b"");
    }

    #[test]
    fn offsets_widen_past_u32() {
        let mut o = Offsets::U32(vec![1, 2]);
        o.push(u64::from(u32::MAX) + 5);
        assert!(matches!(o, Offsets::U64(_)));
        assert_eq!(o.get(0), 1);
        assert_eq!(o.get(2) as u64, u64::from(u32::MAX) + 5);
    }

    #[test]
    fn i64_formatting() {
        for v in [0, 7, -7, 10, 1234567890, i64::MIN, i64::MAX] {
            let mut out = Vec::new();
            crate::render::push_int(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
    }
}
