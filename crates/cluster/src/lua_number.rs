//! Numbers printed the way LuaJIT's `tostring` (and `string.buffer:put`) prints them, used by the config
//! hash whenever it meets a JSON number.
//!
//! Why this exists: Kong hashes the Lua table it is about to send, and a Lua number is a double. LuaJIT
//! prints a double like C's `%.14g` (14 significant digits; fixed notation when the decimal exponent is in
//! -4..14, otherwise `d.ddde+XX` with at least two exponent digits; trailing zeros dropped), with one twist
//! found by running LuaJIT: a value exactly halfway between two 14-digit results is rounded away from zero
//! (`10000000000000.5` prints `10000000000001`), where Rust's formatter rounds half to even. So `1`, `1.0`
//! and `1e0` all print `1`, `0.1` prints `0.1`, `1e15` prints `1e+15`, `123456789012345` prints
//! `1.2345678901235e+14`... (see the tests), and JSON integers beyond 2^53 lose precision exactly as in Lua.

/// Appends `x` as LuaJIT prints it.
pub fn push_lua_number(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        // LuaJIT prints "nan" or "-nan"; JSON cannot carry either, so the sign is not modelled.
        out.extend_from_slice(b"nan");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // Fast path: integers of at most 14 digits print exactly, in fixed notation.
    if x.fract() == 0.0 && x.abs() < 1e14 {
        out.extend_from_slice((x as i64).to_string().as_bytes());
        return;
    }
    if x < 0.0 {
        out.push(b'-');
    }
    let (digits, exp) = significant_digits(x.abs());
    if !(-4..14).contains(&exp) {
        push_scientific(out, &digits, exp);
    } else {
        push_fixed(out, &digits, exp);
    }
}

/// The 14 significant digits of `ax` (> 0) and its decimal exponent, rounded as LuaJIT rounds.
fn significant_digits(ax: f64) -> ([u8; 14], i32) {
    // Rust's `{:.13e}` is correctly rounded, ties to even; LuaJIT's ties go away from zero. The two differ
    // only when the exact value has exactly 15 significant digits and the last is a 5.
    let fifteen = format!("{ax:.14e}");
    let (m15, _) = split_exp(&fifteen);
    let tie = m15.ends_with('5') && is_exact_tie(ax);
    let s = format!("{ax:.13e}");
    let (mantissa, mut exp) = split_exp(&s);
    let mut digits = [0u8; 14];
    for (d, c) in digits
        .iter_mut()
        .zip(mantissa.bytes().filter(u8::is_ascii_digit))
    {
        *d = c - b'0';
    }
    if tie {
        // Recompute from the 15-digit form (exact here): truncate to 14 digits, then round up.
        let (m15, e15) = split_exp(&fifteen);
        for (d, c) in digits
            .iter_mut()
            .zip(m15.bytes().filter(u8::is_ascii_digit))
        {
            *d = c - b'0';
        }
        exp = e15;
        if round_up(&mut digits) {
            exp += 1;
        }
    }
    (digits, exp)
}

/// True when `ax`'s exact decimal expansion ends at its 15th significant digit (so `{:.14e}` is exact).
fn is_exact_tie(ax: f64) -> bool {
    // 767 digits cover any double's exact expansion; only reached for tie candidates.
    let exact = format!("{ax:.767e}");
    let (m, _) = split_exp(&exact);
    let digits: Vec<u8> = m.bytes().filter(u8::is_ascii_digit).collect();
    digits[14] == b'5' && digits[15..].iter().all(|&d| d == b'0')
}

/// Adds one unit in the last place; true when it carried out of the first digit (9.99.. → 1.00..).
fn round_up(digits: &mut [u8; 14]) -> bool {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return false;
        }
    }
    digits[0] = 1;
    true
}

fn split_exp(s: &str) -> (&str, i32) {
    let (m, e) = s.split_once('e').expect("formatted with {:e}");
    (m, e.parse().expect("exponent is an integer"))
}

/// Number of digits once trailing zeros are dropped (at least 1).
fn significant_len(digits: &[u8; 14]) -> usize {
    digits.iter().rposition(|&d| d != 0).map_or(1, |i| i + 1)
}

fn push_scientific(out: &mut Vec<u8>, digits: &[u8; 14], exp: i32) {
    let n = significant_len(digits);
    out.push(b'0' + digits[0]);
    if n > 1 {
        out.push(b'.');
        out.extend(digits[1..n].iter().map(|d| b'0' + d));
    }
    out.push(b'e');
    out.push(if exp < 0 { b'-' } else { b'+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push(b'0');
    }
    out.extend_from_slice(e.to_string().as_bytes());
}

fn push_fixed(out: &mut Vec<u8>, digits: &[u8; 14], exp: i32) {
    let n = significant_len(digits);
    if exp < 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend(digits[..n].iter().map(|d| b'0' + d));
        return;
    }
    let int_len = exp as usize + 1;
    out.extend(digits[..int_len].iter().map(|d| b'0' + d));
    if n > int_len {
        out.push(b'.');
        out.extend(digits[int_len..n].iter().map(|d| b'0' + d));
    }
}

#[cfg(test)]
mod tests;
