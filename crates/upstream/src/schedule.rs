//! nginx's smooth weighted round-robin order, one full cycle precomputed: the order of the balancer's
//! round-robin ([`crate::balancer`]) and of the addresses of weighted SRV answers ([`crate::dns`]). Below
//! both, so neither imports the other for it.

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// nginx's smooth weighted round-robin, unrolled for one full cycle (weights reduced by their gcd, and
/// scaled down when a cycle would be longer than 10,000 picks). Returns indices into `weights`.
pub fn smooth_schedule(weights: &[u32]) -> Vec<u32> {
    let g = weights.iter().copied().fold(0, gcd).max(1);
    let mut w: Vec<i64> = weights.iter().map(|x| (*x / g) as i64).collect();
    let total: i64 = w.iter().sum();
    if total == 0 {
        return Vec::new();
    }
    if total > 10_000 {
        let scale = total as f64 / 10_000.0;
        w = w
            .iter()
            .map(|x| match *x {
                0 => 0,
                x => ((x as f64 / scale).round() as i64).max(1),
            })
            .collect();
    }
    let total: i64 = w.iter().sum();
    let mut current = vec![0i64; w.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, wi) in current.iter_mut().zip(&w) {
            *c += wi;
        }
        let mut best = 0;
        for (i, c) in current.iter().enumerate() {
            if *c > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        out.push(best as u32);
    }
    out
}

#[cfg(test)]
mod tests;
