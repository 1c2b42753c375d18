//! [`Fenwick`]: running sums over positions that grow at the end and change anywhere.
//!
//! Why: the epoch decision of a growing conversation needs, every round, sums over the
//! eligible tool results before the recent window (their chars, their tokens, their
//! stubs' tokens) and the first of them. Eligibility changes for a few results per round
//! (a new one, one an epoch of content has now passed, the answers of a call just
//! repeated), so the sums are kept in a binary indexed tree: a change and a prefix sum
//! each cost O(log n), where a pass over the results cost O(n) every round.

/// Sums of `u64` values at positions `0..len`, with O(log n) updates, prefix sums and
/// appends. Arithmetic wraps, so a value may be taken back out by adding its negation;
/// true sums (which fit in a `u64`) come out exact.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fenwick {
    /// `tree[k - 1]`: the sum of positions `k - lowbit(k) .. k` (1-based `k`).
    tree: Vec<u64>,
}

fn lowbit(k: usize) -> usize {
    k & k.wrapping_neg()
}

impl Fenwick {
    /// Positions held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.tree.len()
    }

    /// Appends a position holding `value`.
    pub(crate) fn push(&mut self, value: u64) {
        let k = self.tree.len() + 1;
        // The new node covers `k - lowbit(k) .. k`: the positions before `k - 1` in that
        // range are already summed, as a difference of two prefixes.
        let covered = self.prefix(k - 1).wrapping_sub(self.prefix(k - lowbit(k)));
        self.tree.push(covered.wrapping_add(value));
    }

    /// Adds `delta` (wrapping) to the value at `position`.
    pub(crate) fn add(&mut self, position: usize, delta: u64) {
        let mut k = position + 1;
        while k <= self.tree.len() {
            self.tree[k - 1] = self.tree[k - 1].wrapping_add(delta);
            k += lowbit(k);
        }
    }

    /// The sum of positions `0..end` (`end` past the length: all of them).
    pub(crate) fn prefix(&self, end: usize) -> u64 {
        let mut k = end.min(self.tree.len());
        let mut sum = 0u64;
        while k > 0 {
            sum = sum.wrapping_add(self.tree[k - 1]);
            k -= lowbit(k);
        }
        sum
    }

    /// The first position `p` whose prefix `0..=p` sums to at least `target`, for
    /// non-negative values; `None` when the whole sum is short of it.
    pub(crate) fn first_reaching(&self, target: u64) -> Option<usize> {
        if target == 0 {
            return (!self.tree.is_empty()).then_some(0);
        }
        let mut position = 0usize;
        let mut remaining = target;
        let mut step = self.tree.len().checked_next_power_of_two()?;
        while step > 0 {
            let next = position + step;
            if next <= self.tree.len() && self.tree[next - 1] < remaining {
                position = next;
                remaining -= self.tree[next - 1];
            }
            step /= 2;
        }
        (position < self.tree.len()).then_some(position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sums_and_searches_agree_with_a_plain_vector(
            ops in prop::collection::vec((0u8..3, 0usize..64, 0u64..1_000), 0..200)
        ) {
            let mut tree = Fenwick::default();
            let mut plain: Vec<u64> = Vec::new();
            for (op, at, value) in ops {
                match op {
                    0 => {
                        tree.push(value);
                        plain.push(value);
                    }
                    1 if !plain.is_empty() => {
                        let at = at % plain.len();
                        // Set the value: take the old one out, put the new one in.
                        tree.add(at, value.wrapping_sub(plain[at]));
                        plain[at] = value;
                    }
                    _ => {}
                }
                prop_assert_eq!(tree.len(), plain.len());
                for end in 0..=plain.len() + 1 {
                    prop_assert_eq!(tree.prefix(end), plain.iter().take(end).sum::<u64>());
                }
                let target = value % (plain.iter().sum::<u64>() + 2);
                let expected = (0..plain.len()).find(|&p| plain[..=p].iter().sum::<u64>() >= target);
                prop_assert_eq!(tree.first_reaching(target), expected, "target {}", target);
            }
        }
    }
}
