//! A bound on the work of reading a Parquet file's Thrift structures (its footer and its page
//! headers), checked before the `parquet` crate reads them.
//!
//! The crate's Thrift reader skips the fields it does not know, and skips a list of booleans
//! without reading a byte per element: a corrupt page header that declares a list of 2^31
//! booleans costs it about a second, and a list of such lists (one byte each) costs that per
//! element, hours for a small file (found by `embodia bench fuzz`). This module walks the same
//! structures the same way, counting every list element and struct field, and refuses a
//! structure that holds more of them than it has bytes: in a file a Thrift writer wrote, each
//! one takes at least one byte, so a sound file is never refused and a reader's work stays
//! proportional to the file's size.
//!
//! The walk follows Thrift's compact protocol as the `parquet` crate reads it: field headers
//! with a delta or a full zigzag id; booleans carried in the field header; lists (sets and maps
//! do not occur in Parquet and are refused); at most 64 levels of nesting.

/// Why a structure was refused, in words for an error message.
pub(crate) type Refusal = String;

/// Deepest nesting the walk follows, as the `parquet` crate's skip.
const MAX_DEPTH: u32 = 64;

/// The compact protocol's type codes.
mod code {
    pub const STOP: u8 = 0;
    pub const BOOL_TRUE: u8 = 1;
    pub const BOOL_FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const STRUCT: u8 = 12;
}

/// Checks the Thrift struct at the start of `bytes` (a Parquet footer's `FileMetaData`).
pub(crate) fn check_struct(bytes: &[u8]) -> Result<(), Refusal> {
    let mut walk = Walk::new(bytes);
    walk.structure(MAX_DEPTH)?;
    Ok(())
}

/// Checks the page header at the start of `bytes` and reads its length in bytes and the
/// compressed size of the page that follows it (field 3, `compressed_page_size`).
pub(crate) fn check_page_header(bytes: &[u8]) -> Result<(usize, i64), Refusal> {
    let mut walk = Walk::new(bytes);
    let mut compressed_size = None;
    let mut last_id = 0i16;
    while let Some((kind, id)) = walk.field_header(last_id)? {
        if id == 3 && kind == code::I32 {
            compressed_size = Some(walk.zigzag()?);
        } else {
            walk.value(kind, MAX_DEPTH - 1)?;
        }
        last_id = id;
    }
    let size = compressed_size.ok_or("a page header without its compressed_page_size")?;
    Ok((walk.pos, size))
}

/// A walk over compact-protocol bytes with a budget of elements: one per byte of the input.
struct Walk<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// List elements and struct fields still allowed.
    budget: usize,
}

impl<'a> Walk<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0, budget: bytes.len() }
    }

    fn spend(&mut self, elements: usize) -> Result<(), Refusal> {
        self.budget = self.budget.checked_sub(elements).ok_or_else(|| {
            format!(
                "a Thrift structure declares more list elements and fields than its {} bytes can hold",
                self.bytes.len()
            )
        })?;
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, Refusal> {
        let b = *self.bytes.get(self.pos).ok_or("a Thrift structure runs past its end")?;
        self.pos += 1;
        Ok(b)
    }

    fn skip(&mut self, n: usize) -> Result<(), Refusal> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        self.pos = end.ok_or("a Thrift value runs past the end of its structure")?;
        Ok(())
    }

    /// An unsigned LEB128 varint (at most 10 bytes).
    fn varint(&mut self) -> Result<u64, Refusal> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a Thrift varint longer than 10 bytes".into())
    }

    fn zigzag(&mut self) -> Result<i64, Refusal> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// The next field's type code and id; `None` at the struct's stop byte.
    fn field_header(&mut self, last_id: i16) -> Result<Option<(u8, i16)>, Refusal> {
        let b = self.byte()?;
        let kind = b & 0x0f;
        if kind == code::STOP {
            return Ok(None);
        }
        self.spend(1)?;
        let delta = b >> 4;
        let id = if delta == 0 { self.zigzag()? as i16 } else { last_id.wrapping_add(i16::from(delta)) };
        Ok(Some((kind, id)))
    }

    fn structure(&mut self, depth: u32) -> Result<(), Refusal> {
        let mut last_id = 0i16;
        while let Some((kind, id)) = self.field_header(last_id)? {
            self.value(kind, depth - 1)?;
            last_id = id;
        }
        Ok(())
    }

    /// A value of type `kind`, as the `parquet` crate skips it.
    fn value(&mut self, kind: u8, depth: u32) -> Result<(), Refusal> {
        if depth == 0 {
            return Err(format!("Thrift structures nested deeper than {MAX_DEPTH} levels"));
        }
        match kind {
            // A boolean field's value is in its header; the crate skips a list's booleans too.
            code::BOOL_TRUE | code::BOOL_FALSE => Ok(()),
            code::BYTE => self.skip(1),
            code::I16 | code::I32 | code::I64 => self.varint().map(drop),
            code::DOUBLE => self.skip(8),
            code::BINARY => {
                let len = self.varint()?;
                self.skip(usize::try_from(len).unwrap_or(usize::MAX))
            }
            code::LIST => {
                let header = self.byte()?;
                let short = usize::from(header >> 4);
                let size = if short == 15 { usize::try_from(self.varint()?).unwrap_or(usize::MAX) } else { short };
                let element = header & 0x0f;
                self.spend(size)?;
                for _ in 0..size {
                    self.value(element, depth - 1)?;
                }
                Ok(())
            }
            code::STRUCT => self.structure(depth),
            other => Err(format!("Thrift type {other}, which Parquet does not use")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact-protocol list header of `size` elements of type `element`.
    fn list_header(size: u64, element: u8) -> Vec<u8> {
        if size < 15 {
            return vec![(size as u8) << 4 | element];
        }
        let mut out = vec![0xf0 | element];
        let mut v = size;
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn a_sound_page_header_gives_its_length_and_compressed_size() {
        // type = 0 (field 1, i32), uncompressed 100 (field 2), compressed 80 (field 3), stop.
        let header = [0x15, 0x00, 0x15, 200, 1, 0x15, 160, 1, 0x00];
        assert_eq!(check_page_header(&header), Ok((header.len(), 80)));
        // A list of three booleans (which the reader skips without reading them) followed by
        // the stop byte, in a structure of more bytes than elements, is within bounds.
        let mut with_list = vec![0x19];
        with_list.extend(list_header(3, code::BOOL_TRUE));
        with_list.extend([0; 4]);
        check_struct(&with_list).unwrap();
    }

    #[test]
    fn a_list_of_billions_of_booleans_is_refused_before_it_is_walked() {
        let mut header = vec![0x19]; // field 1: a list
        header.extend(list_header(2_000_000_000, code::BOOL_TRUE));
        header.push(0);
        let e = check_struct(&header).unwrap_err();
        assert!(e.contains("more list elements and fields than its"), "{e}");
        // A list of lists of 14 booleans each: each inner list fits in the budget alone, the
        // whole does not.
        let mut nested = vec![0x19];
        nested.extend(list_header(40, code::LIST));
        for _ in 0..40 {
            nested.extend(list_header(14, code::BOOL_TRUE));
        }
        nested.push(0);
        assert!(check_struct(&nested).is_err());
    }

    #[test]
    fn truncated_deep_and_unknown_structures_are_refused() {
        assert!(check_page_header(&[0x15, 0x00]).is_err(), "no stop byte");
        assert!(check_page_header(&[0x15, 0x00, 0x00]).is_err(), "no compressed size");
        assert!(check_struct(&[0x18, 0xff, 0xff, 0x03]).is_err(), "binary past the end");
        assert!(check_struct(&[0x1b, 0x00]).unwrap_err().contains("type 11"), "a map");
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 70).chain(std::iter::repeat_n(0, 70)).collect();
        assert!(check_struct(&deep).unwrap_err().contains("deeper than 64"));
    }
}
