//! Go's `sort.SliceStable` algorithm (insertion-sorted blocks of 20, then in-place symmetric
//! merges). With a consistent order any stable sort agrees with it; reproducing the exact steps
//! matters when the comparison is not an order, as with NaN `q` values.

const BLOCK: usize = 20;

/// Sorts `v` stably with `less`, making exactly the moves Go's stable sort makes.
pub(crate) fn stable_sort_by<T>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = v.len();
    let mut start = 0;
    while start + BLOCK <= n {
        insertion(v, start, start + BLOCK, &less);
        start += BLOCK;
    }
    insertion(v, start, n, &less);
    let mut size = BLOCK;
    while size < n {
        let mut a = 0;
        while a + 2 * size <= n {
            sym_merge(v, a, a + size, a + 2 * size, &less);
            a += 2 * size;
        }
        if a + size < n {
            sym_merge(v, a, a + size, n, &less);
        }
        size *= 2;
    }
}

fn insertion<T>(v: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&v[j], &v[j - 1]) {
            v.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// Merges the sorted runs `v[a..m]` and `v[m..b]` (SymMerge of Kim and Kutzner).
fn sym_merge<T>(v: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        // Insert v[a] into the right run: find the first element not less than it.
        let (mut lo, mut hi) = (m, b);
        while lo < hi {
            let h = (lo + hi) / 2;
            if less(&v[h], &v[a]) {
                lo = h + 1;
            } else {
                hi = h;
            }
        }
        for k in a..lo - 1 {
            v.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        // Insert v[m] into the left run after every element not greater than it.
        let (mut lo, mut hi) = (a, m);
        while lo < hi {
            let h = (lo + hi) / 2;
            if !less(&v[m], &v[h]) {
                lo = h + 1;
            } else {
                hi = h;
            }
        }
        let mut k = m;
        while k > lo {
            v.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&v[p - c], &v[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(v, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(v, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(v, mid, end, b, less);
    }
}

/// Rotates `v[a..b]` so that `v[m..b]` comes first, by block swaps.
fn rotate<T>(v: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(v, m - i, m, j);
            i -= j;
        } else {
            swap_range(v, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(v, m - i, m, i);
}

fn swap_range<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for k in 0..n {
        v.swap(a + k, b + k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn agrees_with_std_stable_sort(v in prop::collection::vec((0u8..8, any::<u16>()), 0..200)) {
            let mut ours = v.clone();
            stable_sort_by(&mut ours, |a, b| a.0 > b.0);
            let mut std = v;
            std.sort_by_key(|e| std::cmp::Reverse(e.0));
            prop_assert_eq!(ours, std);
        }
    }

    #[test]
    fn nan_blocks_moves_in_insertion_sort() {
        let mut v = [0.5f32, f32::NAN, 0.9];
        stable_sort_by(&mut v, |a, b| a > b);
        // 0.9 cannot pass the NaN, so nothing moves.
        assert_eq!(v[0], 0.5);
        assert!(v[1].is_nan());
        assert_eq!(v[2], 0.9);
    }
}
