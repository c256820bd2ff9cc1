//! Relations over at most 64 events, one bit row per event.

pub type Rel = Vec<u64>;

pub fn empty(n: usize) -> Rel {
    vec![0; n]
}

pub fn has(r: &Rel, a: usize, b: usize) -> bool {
    r[a] >> b & 1 == 1
}

pub fn set(r: &mut Rel, a: usize, b: usize) {
    r[a] |= 1 << b;
}

pub fn union(a: &Rel, b: &Rel) -> Rel {
    a.iter().zip(b).map(|(x, y)| x | y).collect()
}

pub fn inter(a: &Rel, b: &Rel) -> Rel {
    a.iter().zip(b).map(|(x, y)| x & y).collect()
}

pub fn compose(a: &Rel, b: &Rel) -> Rel {
    a.iter()
        .map(|&row| {
            let mut out = 0u64;
            let mut bits = row;
            while bits != 0 {
                let j = bits.trailing_zeros() as usize;
                out |= b[j];
                bits &= bits - 1;
            }
            out
        })
        .collect()
}

/// Transitive closure (Warshall).
pub fn closure(r: &Rel) -> Rel {
    let mut c = r.clone();
    let n = c.len();
    for k in 0..n {
        let rk = c[k];
        for row in c.iter_mut() {
            if *row >> k & 1 == 1 {
                *row |= rk;
            }
        }
    }
    c
}

pub fn acyclic(r: &Rel) -> bool {
    let c = closure(r);
    (0..c.len()).all(|i| !has(&c, i, i))
}
