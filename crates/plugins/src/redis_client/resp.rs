//! RESP2 on the wire: commands written straight into a connection's output buffer, and replies read as
//! the numbers the counters need.
//!
//! Every reply the rate-limiting plugins read is a number, a list of numbers, or nothing to keep: a
//! script's `{granted, count...}`, `INCRBY`'s count, `MGET`'s counters (absent ones nil), `+OK`. So a
//! reply is parsed into a flat list of `Option<i64>` (nested arrays flattened, a bulk string read as a
//! decimal, nil as `None`, a status as nothing), with no intermediate value tree.

/// Writes a command's array header: `args` arguments follow (the command name is the first).
pub fn command(out: &mut Vec<u8>, args: usize) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(args).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Writes one argument as a bulk string.
pub fn arg(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(bytes.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Writes a number argument in decimal.
pub fn arg_number(out: &mut Vec<u8>, n: u64) {
    arg(out, itoa::Buffer::new().format(n).as_bytes());
}

/// One reply at the start of a buffer.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    /// Not all of it has arrived yet; nothing was added to the numbers.
    Incomplete,
    /// A whole reply, `len` bytes long; `error` is the text of its (first) error reply.
    Reply { len: usize, error: Option<String> },
}

/// Parses the reply at the start of `buf`, appending its numbers to `numbers`. An error is a byte stream
/// that is not RESP2: the connection cannot be read any further.
pub fn parse(buf: &[u8], numbers: &mut Vec<Option<i64>>) -> Result<Parsed, String> {
    let mark = numbers.len();
    let parsed = parse_values(buf, numbers);
    if !matches!(parsed, Ok(Parsed::Reply { .. })) {
        numbers.truncate(mark);
    }
    parsed
}

fn parse_values(buf: &[u8], numbers: &mut Vec<Option<i64>>) -> Result<Parsed, String> {
    let mut pos = 0;
    let mut error = None;
    // Values still to read: the reply, then each array's elements as its header is read.
    let mut left = 1usize;
    while left > 0 {
        let Some((kind, line, next)) = line_at(buf, pos) else {
            return Ok(Parsed::Incomplete);
        };
        left -= 1;
        pos = next;
        match kind {
            b'+' => {}
            b'-' => {
                error.get_or_insert_with(|| String::from_utf8_lossy(line).into_owned());
            }
            b':' => numbers.push(Some(integer(line)?)),
            b'$' => match usize::try_from(integer(line)?) {
                Err(_) => numbers.push(None),
                Ok(len) => {
                    let Some(body) = buf.get(pos..pos + len + 2) else {
                        return Ok(Parsed::Incomplete);
                    };
                    numbers.push(integer(&body[..len]).ok());
                    pos += len + 2;
                }
            },
            b'*' => left += usize::try_from(integer(line)?).unwrap_or(0),
            other => return Err(format!("not a RESP reply (type byte {other:#04x})")),
        }
    }
    Ok(Parsed::Reply { len: pos, error })
}

/// The type byte and the rest of the line starting at `pos`, and where the next line starts.
fn line_at(buf: &[u8], pos: usize) -> Option<(u8, &[u8], usize)> {
    let rest = buf.get(pos..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    Some((rest[0], &rest[1..end], pos + end + 2))
}

/// A decimal integer (optionally negative), as RESP writes lengths and integers.
fn integer(text: &[u8]) -> Result<i64, String> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', digits)) => (true, digits),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 {
        return Err(format!(
            "not a RESP integer: {:?}",
            String::from_utf8_lossy(text)
        ));
    }
    let mut n: i64 = 0;
    for d in digits {
        match d {
            b'0'..=b'9' => {
                n = n
                    .checked_mul(10)
                    .and_then(|n| n.checked_add(i64::from(d - b'0')))
                    .ok_or("a RESP integer out of range")?;
            }
            _ => {
                return Err(format!(
                    "not a RESP integer: {:?}",
                    String::from_utf8_lossy(text)
                ));
            }
        }
    }
    Ok(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(buf: &[u8]) -> (Parsed, Vec<Option<i64>>) {
        let mut numbers = vec![Some(7)];
        let parsed = parse(buf, &mut numbers).unwrap();
        (parsed, numbers)
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        command(&mut out, 3);
        arg(&mut out, b"INCRBY");
        arg(&mut out, b"k");
        arg_number(&mut out, 12);
        assert_eq!(out, b"*3\r\n$6\r\nINCRBY\r\n$1\r\nk\r\n$2\r\n12\r\n");
    }

    #[test]
    fn replies_become_numbers() {
        let reply = b"*3\r\n:1\r\n$2\r\n42\r\n$-1\r\n:9";
        let (p, numbers) = parsed(reply);
        assert_eq!(
            p,
            Parsed::Reply {
                len: 21,
                error: None
            }
        );
        assert_eq!(numbers, [Some(7), Some(1), Some(42), None]);
        assert_eq!(
            parsed(b"+OK\r\n"),
            (
                Parsed::Reply {
                    len: 5,
                    error: None
                },
                vec![Some(7)]
            )
        );
        assert_eq!(parsed(b":-3\r\n").1, [Some(7), Some(-3)]);
        let (p, _) = parsed(b"-NOSCRIPT No matching script\r\n");
        let error = Some("NOSCRIPT No matching script".to_string());
        assert_eq!(p, Parsed::Reply { len: 30, error });
    }

    #[test]
    fn a_partial_reply_waits_and_adds_nothing() {
        let reply = b"*2\r\n:1\r\n$2\r\n42\r\n";
        for cut in 0..reply.len() {
            assert_eq!(
                parsed(&reply[..cut]),
                (Parsed::Incomplete, vec![Some(7)]),
                "{cut}"
            );
        }
        assert_eq!(
            parsed(reply).0,
            Parsed::Reply {
                len: reply.len(),
                error: None
            }
        );
    }

    #[test]
    fn garbage_is_refused() {
        assert!(parse(b"HTTP/1.1 400\r\n", &mut Vec::new()).is_err());
        assert!(parse(b":12x\r\n", &mut Vec::new()).is_err());
    }
}
