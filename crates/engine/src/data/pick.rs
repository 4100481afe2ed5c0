//! Per-VU picking state and the weighted choice between feeds.

use super::DataError;

/// A VU's picking state for one feed, made by [`super::Feed::cursor`].
///
/// Only `pick: unique` uses it (the VU's own share of rows and where it is in it); the
/// other modes keep no per-VU state, but every VU holds a cursor anyway so that the
/// caller does not branch on the mode. It is four integers: cheap to keep one per VU per
/// feed and to clone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedCursor {
    /// First row of this VU's share.
    pub(crate) base: u64,
    /// Distance between rows of the share (the total VU count).
    pub(crate) stride: u64,
    /// Rows in the share (≥ 1 for a non-empty feed).
    pub(crate) share: u64,
    /// Next position within the share.
    pub(crate) next: u64,
}

impl FeedCursor {
    /// The share of VU `vu` of `total_vus` in a feed of `len` rows: rows
    /// `vu, vu + total, vu + 2·total, ...` below `len`. A VU whose index is at or past
    /// `len` (fewer rows than VUs) gets the share of VU `vu % len`.
    pub(crate) fn unique_share(vu: u64, total_vus: u64, len: u64) -> FeedCursor {
        if len == 0 {
            return FeedCursor::default();
        }
        let stride = total_vus.max(1);
        let base = vu % len;
        // ceil((len - base) / stride) without overflow: base < len, so len - base ≥ 1.
        let share = (len - base - 1) / stride + 1;
        FeedCursor {
            base,
            stride,
            share,
            next: 0,
        }
    }

    /// The next row of the share, wrapping within it.
    #[inline]
    pub(crate) fn next_unique(&mut self) -> u64 {
        let row = self.base + self.next * self.stride;
        self.next += 1;
        if self.next >= self.share {
            self.next = 0;
        }
        row
    }

    /// How many rows this VU's share holds (for `pick: unique`): after that many picks
    /// it starts over with its own rows. Lets a caller warn when a test outlasts its
    /// unique data.
    pub fn share_len(&self) -> u64 {
        self.share
    }
}

/// A weighted choice between entries (feeds), for the template function
/// `pick(hot_posts: 80, all_posts: 20)`: each use chooses an entry with probability
/// weight / sum of weights. Weights are relative (need not sum to 100). Built once when
/// templates are compiled; choosing is a draw and a short search, no allocation.
#[derive(Clone, Debug)]
pub struct WeightedFeeds {
    /// The caller's feed index of each entry.
    items: Vec<usize>,
    /// Running sums of the weights, same order.
    cumulative: Vec<f64>,
}

impl WeightedFeeds {
    /// Entries as (feed index, weight). Fails when there are none or a weight is not a
    /// finite number greater than 0 (a zero weight is almost always a mistake, and a
    /// negative or NaN one would break the draw).
    pub fn new(items: Vec<(usize, f64)>) -> Result<Self, DataError> {
        if items.is_empty() {
            return Err(DataError::NoWeights);
        }
        let mut total = 0.0;
        let mut cumulative = Vec::with_capacity(items.len());
        for (index, &(_, weight)) in items.iter().enumerate() {
            if !(weight > 0.0 && weight.is_finite()) {
                return Err(DataError::BadWeight { index, weight });
            }
            total += weight;
            cumulative.push(total);
        }
        if !total.is_finite() {
            // Each weight is finite but the sum overflowed.
            return Err(DataError::BadWeight {
                index: items.len() - 1,
                weight: items[items.len() - 1].1,
            });
        }
        Ok(WeightedFeeds {
            items: items.into_iter().map(|(i, _)| i).collect(),
            cumulative,
        })
    }

    /// The feed index of the chosen entry.
    #[inline]
    pub fn choose(&self, rng: &mut fastrand::Rng) -> usize {
        let total = self.cumulative[self.cumulative.len() - 1];
        let r = rng.f64() * total;
        let i = self.cumulative.partition_point(|&c| c <= r);
        // Rounding can leave r at the total; the last entry takes it.
        self.items[i.min(self.items.len() - 1)]
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Always false (construction rejects an empty list); here for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_validated() {
        assert!(matches!(
            WeightedFeeds::new(vec![]),
            Err(DataError::NoWeights)
        ));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = WeightedFeeds::new(vec![(0, 1.0), (1, bad)]).unwrap_err();
            assert!(matches!(e, DataError::BadWeight { index: 1, .. }), "{e}");
        }
        assert!(WeightedFeeds::new(vec![(0, f64::MAX), (1, f64::MAX)]).is_err());
    }

    #[test]
    fn choice_follows_weights() {
        let w = WeightedFeeds::new(vec![(3, 80.0), (9, 20.0)]).unwrap();
        let mut rng = fastrand::Rng::with_seed(42);
        let n = 100_000;
        let mut threes = 0;
        for _ in 0..n {
            match w.choose(&mut rng) {
                3 => threes += 1,
                9 => {}
                other => panic!("unexpected {other}"),
            }
        }
        let share = threes as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.01, "{share}");
        let one = WeightedFeeds::new(vec![(5, 0.001)]).unwrap();
        assert_eq!(one.choose(&mut rng), 5);
    }

    #[test]
    fn unique_shares_are_disjoint_and_wrap() {
        let len = 20;
        let total = 7;
        let mut seen = std::collections::HashSet::new();
        for vu in 0..total {
            let mut c = FeedCursor::unique_share(vu, total, len);
            let first: Vec<u64> = (0..c.share_len()).map(|_| c.next_unique()).collect();
            for &r in &first {
                assert!(r < len && r % total == vu);
                assert!(seen.insert(r), "row {r} twice");
            }
            // Wraps within its own share.
            let again: Vec<u64> = (0..c.share_len()).map(|_| c.next_unique()).collect();
            assert_eq!(first, again);
        }
        assert_eq!(seen.len() as u64, len);
    }
}
