//! Byte-level tokenizer shipped with the VLA: every UTF-8 byte is a token, plus three special
//! tokens. It needs no vocabulary file, so a checkpoint carries it completely (its name and
//! maximum length are stored in the checkpoint's metadata).

/// Number of byte tokens (ids `0..256` are the bytes themselves).
pub const BYTE_TOKENS: usize = 256;
/// Padding token id (positions past the end of the text; masked out of attention).
pub const PAD_TOKEN: u32 = 256;
/// Beginning-of-sequence token id (first token of every encoded text).
pub const BOS_TOKEN: u32 = 257;
/// End-of-sequence token id (after the last byte).
pub const EOS_TOKEN: u32 = 258;
/// Vocabulary size: 256 bytes and the three special tokens.
pub const VOCAB_SIZE: usize = 259;
/// Name of the tokenizer as stored in checkpoint metadata.
pub const TOKENIZER_NAME: &str = "embodia-byte-v1";

/// Errors of [`ByteTokenizer`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenizerError {
    /// The text does not fit in `max_len` tokens (BOS and EOS included).
    #[error("instruction {index} is {bytes} bytes; at most {max} fit in `max_text_len` {max_len} (BOS and EOS take 2)")]
    TooLong {
        /// Position of the text in the batch (0 for a single text).
        index: usize,
        /// Its length in bytes.
        bytes: usize,
        /// Most bytes that fit.
        max: usize,
        /// The tokenizer's maximum length, tokens.
        max_len: usize,
    },
    /// `max_len` below 2 leaves no room for BOS and EOS.
    #[error("`max_text_len` is {0}; it must be at least 2 (BOS and EOS)")]
    MaxLen(usize),
}

/// Token ids of a batch of texts, padded to a common length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBatch {
    /// Texts in the batch.
    pub batch: usize,
    /// Tokens per text after padding (the tokenizer's `max_len`).
    pub len: usize,
    /// Token ids, row-major `[batch, len]`: `BOS, bytes…, EOS, PAD…`.
    pub ids: Vec<u32>,
    /// Attention mask, `[batch, len]`: `true` for a real token (BOS, bytes, EOS), `false` for
    /// padding (the Hugging Face `attention_mask` convention).
    pub mask: Vec<bool>,
}

/// Byte-level tokenizer with a fixed maximum length (BOS and EOS included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteTokenizer {
    max_len: usize,
}

impl ByteTokenizer {
    /// A tokenizer producing `max_len` tokens per text (≥ 2).
    pub fn new(max_len: usize) -> Result<Self, TokenizerError> {
        if max_len < 2 {
            return Err(TokenizerError::MaxLen(max_len));
        }
        Ok(Self { max_len })
    }

    /// Tokens per encoded text.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Vocabulary size ([`VOCAB_SIZE`]).
    pub fn vocab_size(&self) -> usize {
        VOCAB_SIZE
    }

    /// Encodes one text to `max_len` ids and its mask (`true` = real token); errors if it does
    /// not fit.
    pub fn encode(&self, text: &str) -> Result<(Vec<u32>, Vec<bool>), TokenizerError> {
        self.encode_at(0, text, false)
    }

    /// Like [`ByteTokenizer::encode`], but cuts the text to the bytes that fit instead of
    /// failing (the cut may split a UTF-8 character; [`ByteTokenizer::decode`] is lossy there).
    pub fn encode_truncated(&self, text: &str) -> (Vec<u32>, Vec<bool>) {
        self.encode_at(0, text, true).unwrap_or_else(|_| (vec![PAD_TOKEN; self.max_len], vec![false; self.max_len]))
    }

    fn encode_at(&self, index: usize, text: &str, truncate: bool) -> Result<(Vec<u32>, Vec<bool>), TokenizerError> {
        let bytes = text.as_bytes();
        let max = self.max_len - 2;
        if bytes.len() > max && !truncate {
            return Err(TokenizerError::TooLong { index, bytes: bytes.len(), max, max_len: self.max_len });
        }
        let bytes = &bytes[..bytes.len().min(max)];
        let mut ids = Vec::with_capacity(self.max_len);
        ids.push(BOS_TOKEN);
        ids.extend(bytes.iter().map(|&b| b as u32));
        ids.push(EOS_TOKEN);
        let real = ids.len();
        ids.resize(self.max_len, PAD_TOKEN);
        let mask = (0..self.max_len).map(|i| i < real).collect();
        Ok((ids, mask))
    }

    /// Encodes a batch of texts; the error names the first text that does not fit.
    pub fn encode_batch(&self, texts: &[&str]) -> Result<TokenBatch, TokenizerError> {
        let mut ids = Vec::with_capacity(texts.len() * self.max_len);
        let mut mask = Vec::with_capacity(texts.len() * self.max_len);
        for (i, text) in texts.iter().enumerate() {
            let (t, m) = self.encode_at(i, text, false)?;
            ids.extend(t);
            mask.extend(m);
        }
        Ok(TokenBatch { batch: texts.len(), len: self.max_len, ids, mask })
    }

    /// Decodes ids back to text: byte tokens are kept, special and out-of-range ids dropped,
    /// invalid UTF-8 replaced by U+FFFD. `decode(encode(s)) == s` for every `s` that fits.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().filter(|&&id| (id as usize) < BYTE_TOKENS).map(|&id| id as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_bos_bytes_eos_pad() {
        let tok = ByteTokenizer::new(8).unwrap();
        let (ids, mask) = tok.encode("hi").unwrap();
        assert_eq!(
            ids,
            vec![BOS_TOKEN, b'h' as u32, b'i' as u32, EOS_TOKEN, PAD_TOKEN, PAD_TOKEN, PAD_TOKEN, PAD_TOKEN]
        );
        assert_eq!(mask, vec![true, true, true, true, false, false, false, false]);
    }
}
