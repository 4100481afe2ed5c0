//! Where a value is counted in pado's latency histograms: HdrHistogram's layout for
//! three significant digits and a unit of 1 µs, fixed.
//!
//! Every pado histogram has the same parameters, so a count's index in the array *is*
//! its value class: the encoded form (HdrHistogram V2) lists counts by index, and
//! decoding or adding is an add at that index, with no value to re-bucket. Buckets are
//! powers of two of 2048 sub-buckets (the lower half of each above the first is
//! covered by the bucket before it), so every value from 0 to `u64::MAX` has an index
//! below [`MAX_LEN`], and a value's class is at most 1/2048 of it wide.

/// log2 of half the sub-bucket count (1024 of 2048 sub-buckets).
const SUB_HALF_MAGNITUDE: u32 = 10;
/// Half the sub-bucket count.
const SUB_HALF: usize = 1 << SUB_HALF_MAGNITUDE;
/// Values below this are counted one per slot (bucket 0).
const SUB_MASK: u64 = (2 * SUB_HALF as u64) - 1;
/// 64 − log2(2048): a value's bucket from its leading zeros.
const LEADING_ZERO_BASE: u32 = 53;
/// The highest bucket (values of 2^63 and above).
const MAX_BUCKET: u32 = 53;
/// Slots that cover every u64 value.
pub(crate) const MAX_LEN: usize = (MAX_BUCKET as usize + 2) * SUB_HALF;

/// Bucket of a value: how many powers of two it is above what bucket 0 holds.
#[inline]
fn bucket_of_value(v: u64) -> u32 {
    LEADING_ZERO_BASE - (v | SUB_MASK).leading_zeros()
}

/// The slot that counts `v` (HdrHistogram's `index_for`).
#[inline]
pub(crate) fn index_of(v: u64) -> usize {
    let b = bucket_of_value(v);
    (((b + 1) as usize) << SUB_HALF_MAGNITUDE) + (v >> b) as usize - SUB_HALF
}

/// Bucket of a slot: its values are counted in classes 2^bucket wide.
#[inline]
pub(crate) fn bucket_of_index(i: usize) -> u32 {
    ((i >> SUB_HALF_MAGNITUDE) as u32).saturating_sub(1)
}

/// The lowest value counted at slot `i` (HdrHistogram's `value_for`).
#[inline]
pub(crate) fn lowest_at(i: usize) -> u64 {
    let b = bucket_of_index(i);
    let sub = if i < 2 * SUB_HALF {
        i
    } else {
        (i & (SUB_HALF - 1)) + SUB_HALF
    };
    (sub as u64) << b
}

/// Width of the value class of slot `i`.
#[inline]
fn range_at(i: usize) -> u64 {
    1u64 << bucket_of_index(i)
}

/// The highest value counted at slot `i` (HdrHistogram's `highest_equivalent`;
/// `u64::MAX` for the top class).
#[inline]
pub(crate) fn highest_at(i: usize) -> u64 {
    lowest_at(i)
        .checked_add(range_at(i))
        .map_or(u64::MAX, |next| next - 1)
}

/// The middle of slot `i`'s class (HdrHistogram's `median_equivalent`): what the mean
/// counts each value as (`LatencyHistogram::mean_us` sums it bucket by bucket).
#[cfg(test)]
fn median_at(i: usize) -> u64 {
    lowest_at(i) + (range_at(i) >> 1)
}

/// Slots a histogram whose highest count is at `i` holds: whole buckets, at least two
/// halves (HdrHistogram's auto-resized length for the same values).
#[inline]
pub(crate) fn len_for(i: usize) -> usize {
    (bucket_of_index(i) as usize + 2) * SUB_HALF
}

/// The slots of the bucket that holds slot `i`, `start..end`: the unit a histogram's
/// storage grows by (the first bucket is two halves).
#[inline]
pub(crate) fn bucket_slots(i: usize) -> (usize, usize) {
    let b = bucket_of_index(i) as usize;
    if b == 0 {
        (0, 2 * SUB_HALF)
    } else {
        ((b + 1) * SUB_HALF, (b + 2) * SUB_HALF)
    }
}

/// The "highest trackable value" the V2 header carries for a histogram of `len`
/// slots: what HdrHistogram itself writes for a histogram that auto-resized to that
/// length (2, its starting bound, before any resize), so a general V2 reader sizes
/// its array to hold every count.
pub(crate) fn high_for(len: usize) -> u64 {
    if len <= 2 * SUB_HALF {
        2
    } else {
        highest_at(len - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout is HdrHistogram's for pado's parameters: every value lands in the
    /// slot the library puts it in, with the same class bounds.
    #[test]
    fn the_layout_is_hdrhistograms() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        h.auto(true);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut values: Vec<u64> = (0..5000u64).collect();
        values.extend([
            2047,
            2048,
            2049,
            4095,
            4096,
            1 << 40,
            u64::MAX / 2,
            u64::MAX,
        ]);
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
            let i = index_of(v);
            assert!(i < MAX_LEN, "{v}");
            assert_eq!(lowest_at(i), h.lowest_equivalent(v), "{v}");
            if lowest_at(i).checked_add(range_at(i)).is_some() {
                assert_eq!(highest_at(i), h.highest_equivalent(v), "{v}");
            } else {
                // The library says u64::MAX for that value only, MAX - 1 for the
                // rest of the top class; pado, MAX for the class.
                assert_eq!(highest_at(i), u64::MAX);
            }
            assert_eq!(median_at(i), h.median_equivalent(v), "{v}");
            assert!(lowest_at(i) <= v && v <= highest_at(i), "{v}");
            assert_eq!(index_of(lowest_at(i)), i);
            assert!(len_for(i) > i);
            let (start, end) = bucket_slots(i);
            assert!(start <= i && i < end && end <= len_for(i), "{v}");
            assert_eq!(range_at(start), range_at(end - 1));
        }
        assert_eq!(index_of(u64::MAX), MAX_LEN - 1);
    }
}
