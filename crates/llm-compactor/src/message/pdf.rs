//! How many pages an inline PDF has, read from its base64 without a PDF library.
//!
//! Why: a PDF is billed per page. Anthropic turns every page into its text and a picture
//! of it (a page of text is ~2,100-2,500 tokens, a scanned page ~1,600); OpenAI's file
//! inputs do the same. Counted as one flat media figure, a 50-page PDF that bills
//! ~120k tokens would look like 1,600, and an agent that reads two of them (Claude Code's
//! `Read` returns a PDF as a `document` block) would overflow its window with the
//! compactor none the wiser. So a PDF payload costs [`PDF_PAGE_TOKENS`] per page.
//!
//! The page count is read, not parsed: the payload is decoded and the page objects
//! (`/Type /Page`, not `/Pages`) are counted; a linearized ("fast web view") PDF also
//! states its page count (`/N`) in its first object, and the larger of the two is taken.
//! A PDF that keeps its objects in compressed object streams (pdfTeX's default, among
//! others) and is not linearized shows neither; its pages are then estimated from its
//! size, [`PDF_BYTES_PER_PAGE`] bytes a page. All are estimates: a page object left over
//! by an incremental update is counted too (the safe side: a compaction a little early,
//! never an overflow), and the calibrated counter replaces the estimate with the
//! provider's bill as soon as one is known.

/// Tokens one PDF page is counted as: Claude's measured text page (2,100-2,500 tokens,
/// text plus the page's picture), rounded to the high side of that range's middle.
pub const PDF_PAGE_TOKENS: usize = 2_400;

/// Decoded bytes a page is taken for when a PDF shows no page objects (they are in
/// compressed object streams): a text page with its share of embedded fonts and figures.
pub const PDF_BYTES_PER_PAGE: usize = 50_000;

/// The base64 of `%PDF`: every PDF file starts with it.
const PDF_MAGIC_BASE64: &str = "JVBER";

/// The estimated pages of `payload` when it is a base64 PDF (bare, or the data of a
/// `data:` URL), else `None`. At least one page.
///
/// ```
/// use llm_compactor::message::pdf::pdf_pages;
/// assert_eq!(pdf_pages("iVBORw0KGgo="), None); // a PNG
/// assert_eq!(pdf_pages("JVBERi0xLjQK"), Some(1)); // "%PDF-1.4\n"
/// ```
pub fn pdf_pages(payload: &str) -> Option<usize> {
    let data = payload
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
        .map_or(payload, |(_, data)| data);
    if !data.starts_with(PDF_MAGIC_BASE64) {
        return None;
    }
    let scanned = scan(data);
    let stated = scanned.page_objects.max(scanned.linearized_pages.unwrap_or(0));
    let pages = if stated > 0 {
        stated
    } else {
        scanned.decoded.div_ceil(PDF_BYTES_PER_PAGE)
    };
    Some(pages.max(1))
}

/// What [`scan`] read of a PDF.
struct Scanned {
    /// Its page objects.
    page_objects: usize,
    /// The page count its linearization dictionary states, if it has one.
    linearized_pages: Option<usize>,
    /// Its decoded length.
    decoded: usize,
}

/// Decoded bytes held at once: the payload is decoded a window at a time, so a count
/// of a conversation holding a large PDF allocates this, not a copy of the document.
const WINDOW: usize = 1 << 16;

/// Bytes carried from one window into the next, so that a page object split across the
/// two is seen whole in the second (its marker and the whitespace inside it).
const CARRY: usize = 64;

/// The page objects, the linearized page count and the decoded length of the base64
/// PDF `data`.
fn scan(data: &str) -> Scanned {
    let mut decoder = Decoder::new(data);
    let mut window = Vec::with_capacity(WINDOW + CARRY);
    let mut objects = 0;
    let mut linearized_pages = None;
    let mut first = true;
    loop {
        let done = decoder.fill(&mut window, WINDOW + CARRY);
        if std::mem::take(&mut first) {
            linearized_pages = linearized(&window);
        }
        // A marker that starts in the carried tail is judged in the next window, where
        // what follows it is there to read.
        let judged = if done { window.len() } else { window.len() - CARRY };
        objects += page_objects(&window, judged);
        if done {
            return Scanned {
                page_objects: objects,
                linearized_pages,
                decoded: decoder.decoded,
            };
        }
        window.drain(..judged);
    }
}

/// The page objects of a PDF's bytes that start before `before`: `/Type`, optional
/// whitespace, `/Page`, then a byte that does not continue the name (so `/Pages`, the
/// page tree's nodes, is not one).
fn page_objects(bytes: &[u8], before: usize) -> usize {
    memchr::memmem::find_iter(bytes, b"/Type")
        .take_while(|&at| at < before)
        .filter(|&at| {
            let rest = &bytes[at + 5..];
            let value = rest
                .iter()
                .position(|&b| !is_pdf_space(b))
                .map_or(&[][..], |skip| &rest[skip..]);
            value.starts_with(b"/Page") && value.get(5).is_none_or(|&b| !is_name_byte(b))
        })
        .count()
}

/// Where a linearized PDF's parameter dictionary must be: within its first 1,024 bytes
/// (ISO 32000 Annex F).
const LINEARIZED_WITHIN: usize = 1_024;

/// The page count (`/N`) of the linearization dictionary at the head of a PDF's bytes,
/// if it has one: `/Linearized`, then within the same dictionary `/N` and an integer.
fn linearized(bytes: &[u8]) -> Option<usize> {
    let head = &bytes[..bytes.len().min(LINEARIZED_WITHIN)];
    let at = memchr::memmem::find(head, b"/Linearized")?;
    let dictionary = &bytes[at..];
    let dictionary = &dictionary[..memchr::memmem::find(dictionary, b">>")?];
    memchr::memmem::find_iter(dictionary, b"/N")
        .map(|n| &dictionary[n + 2..])
        .find(|rest| rest.first().is_some_and(|&b| !is_name_byte(b)))
        .and_then(|rest| {
            let rest = &rest[rest.iter().position(|&b| !is_pdf_space(b))?..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
        })
}

/// PDF whitespace (ISO 32000 §7.2.3).
fn is_pdf_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0')
}

/// A byte that continues a PDF name: anything but whitespace and the delimiters.
fn is_name_byte(byte: u8) -> bool {
    !is_pdf_space(byte)
        && !matches!(
            byte,
            b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
        )
}

/// A base64 decoder (standard or URL-safe alphabet, line breaks skipped) that stops at
/// the padding or at the first byte outside the alphabets. Four characters at a time
/// where they are all data (the body of a payload), one at a time around a line break.
struct Decoder<'a> {
    text: &'a [u8],
    at: usize,
    buffer: u32,
    bits: u32,
    /// Bytes decoded so far.
    decoded: usize,
}

/// What a byte of base64 text is: its 6 bits (below 64), [`SKIP`] or [`STOP`].
const SEXTETS: [u8; 256] = sextets();
const SKIP: u8 = 0xfe;
const STOP: u8 = 0xff;

const fn sextets() -> [u8; 256] {
    let mut table = [STOP; 256];
    let mut k = 0;
    while k < 26 {
        table[b'A' as usize + k] = k as u8;
        table[b'a' as usize + k] = 26 + k as u8;
        k += 1;
    }
    let mut d = 0;
    while d < 10 {
        table[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    table[b'+' as usize] = 62;
    table[b'-' as usize] = 62;
    table[b'/' as usize] = 63;
    table[b'_' as usize] = 63;
    table[b'\r' as usize] = SKIP;
    table[b'\n' as usize] = SKIP;
    table
}

impl<'a> Decoder<'a> {
    fn new(text: &'a str) -> Self {
        Decoder {
            text: text.as_bytes(),
            at: 0,
            buffer: 0,
            bits: 0,
            decoded: 0,
        }
    }

    /// Decodes into `out` until it holds `cap` bytes; true when the text is done.
    fn fill(&mut self, out: &mut Vec<u8>, cap: usize) -> bool {
        while out.len() < cap {
            // Four data characters are three bytes, when no bits are pending.
            if self.bits == 0
                && cap - out.len() >= 3
                && let Some(&[a, b, c, d]) = self.text.get(self.at..self.at + 4)
            {
                let (a, b, c, d) = (
                    SEXTETS[a as usize],
                    SEXTETS[b as usize],
                    SEXTETS[c as usize],
                    SEXTETS[d as usize],
                );
                if (a | b | c | d) < 64 {
                    let word = u32::from(a) << 18 | u32::from(b) << 12 | u32::from(c) << 6 | u32::from(d);
                    out.extend_from_slice(&word.to_be_bytes()[1..]);
                    self.at += 4;
                    self.decoded += 3;
                    continue;
                }
            }
            let Some(&byte) = self.text.get(self.at) else {
                return true;
            };
            self.at += 1;
            let sextet = match SEXTETS[byte as usize] {
                SKIP => continue,
                STOP => {
                    self.at = self.text.len();
                    return true;
                }
                sextet => sextet,
            };
            self.buffer = (self.buffer << 6) | u32::from(sextet);
            self.bits += 6;
            if self.bits >= 8 {
                self.bits -= 8;
                out.push((self.buffer >> self.bits) as u8);
                self.buffer &= (1 << self.bits) - 1;
                self.decoded += 1;
            }
        }
        self.at == self.text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standard base64 of `bytes`, with padding.
    fn encode(bytes: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// All of `text` decoded.
    fn decode_base64(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        Decoder::new(text).fill(&mut out, usize::MAX);
        out
    }

    proptest::proptest! {
        /// Whatever follows the PDF magic (any bytes encoded, or any text at all), the
        /// count is at least a page and nothing panics.
        #[test]
        fn any_payload_after_the_magic_is_at_least_a_page(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            text in ".{0,200}",
        ) {
            let mut pdf = b"%PDF-".to_vec();
            pdf.extend_from_slice(&bytes);
            proptest::prop_assert!(pdf_pages(&encode(&pdf)).is_some_and(|pages| pages >= 1));
            let bare = format!("JVBER{text}");
            proptest::prop_assert!(pdf_pages(&bare).is_some_and(|pages| pages >= 1));
        }

        /// Any bytes, encoded and broken into lines anywhere, decode back, in any
        /// window size.
        #[test]
        fn base64_decodes_back_whatever_the_line_breaks_and_windows(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            breaks in proptest::collection::vec(0usize..300, 0..6),
            cap in 1usize..10,
        ) {
            let mut text = encode(&bytes);
            for &at in &breaks {
                text.insert_str(at.min(text.len()), "\r\n");
            }
            let mut decoder = Decoder::new(&text);
            let mut out = Vec::new();
            let mut window = Vec::new();
            loop {
                let done = decoder.fill(&mut window, cap);
                out.append(&mut window);
                if done {
                    break;
                }
            }
            proptest::prop_assert_eq!(decoder.decoded, bytes.len());
            proptest::prop_assert_eq!(out, bytes);
        }
    }

    #[test]
    fn base64_decodes_in_both_alphabets_across_line_breaks() {
        let bytes: Vec<u8> = (0..=255u8).chain(0..=255u8).collect();
        let standard = encode(&bytes);
        assert_eq!(decode_base64(&standard), bytes);
        let wrapped: String = standard
            .as_bytes()
            .chunks(76)
            .map(|line| std::str::from_utf8(line).unwrap())
            .collect::<Vec<_>>()
            .join("\r\n");
        assert_eq!(decode_base64(&wrapped), bytes);
        let url_safe = standard.replace('+', "-").replace('/', "_");
        assert_eq!(decode_base64(&url_safe), bytes);
    }

    #[test]
    fn page_objects_are_counted_and_the_page_tree_is_not() {
        let pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
            2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n\
            3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n\
            4 0 obj <</Type/Page/Parent 2 0 R>> endobj\n\
            5 0 obj << /Type\n/Page>> endobj\n\
            6 0 obj << /Type /PageLabel >> endobj\n%%EOF";
        assert_eq!(page_objects(pdf, pdf.len()), 3);
        assert_eq!(pdf_pages(&encode(pdf)), Some(3));
        assert_eq!(
            pdf_pages(&format!("data:application/pdf;base64,{}", encode(pdf))),
            Some(3)
        );
    }

    #[test]
    fn a_page_object_across_two_windows_is_counted_once() {
        for shift in [0, 1, 2, 3, 5, 20, 40, 63, 64, 65, 100] {
            let mut pdf = b"%PDF-1.4\n".to_vec();
            pdf.resize(WINDOW - shift, b' ');
            pdf.extend_from_slice(b"<< /Type   /Page >> << /Type /Pages >>");
            pdf.resize(2 * WINDOW + 7, b' ');
            pdf.extend_from_slice(b"<</Type/Page>>");
            assert_eq!(pdf_pages(&encode(&pdf)), Some(2), "shift {shift}");
        }
    }

    #[test]
    fn a_linearized_pdf_states_its_pages() {
        // Compressed object streams: no page object to see, but the first object says 12.
        let mut pdf = b"%PDF-1.6\n%\xe2\xe3\xcf\xd3\n17 0 obj\n<</Linearized 1/L 91234/O 19/E 4321/N 12/T 90000/H [ 500 160]>>\nendobj\n".to_vec();
        pdf.extend_from_slice(b"18 0 obj << /Type /ObjStm /N 40 /First 300 /Filter /FlateDecode >> stream\n");
        pdf.resize(91_234, b'x');
        assert_eq!(linearized(&pdf), Some(12));
        assert_eq!(pdf_pages(&encode(&pdf)), Some(12));
        // `/N` of another dictionary, or a name that only starts with N, is not it.
        assert_eq!(linearized(b"%PDF-1.6\n<</Linearized 1/NX 5>> << /N 7 >>"), None);
        assert_eq!(linearized(b"%PDF-1.6\n<< /Type /ObjStm /N 40 >>"), None);
    }

    #[test]
    fn a_pdf_without_visible_page_objects_is_estimated_from_its_size() {
        let mut pdf = b"%PDF-1.7\n1 0 obj << /Type /ObjStm /N 40 /Filter /FlateDecode >> stream\n".to_vec();
        pdf.resize(3 * PDF_BYTES_PER_PAGE + 10, b'x');
        assert_eq!(pdf_pages(&encode(&pdf)), Some(4));
        assert_eq!(pdf_pages(&encode(b"%PDF-1.7\n")), Some(1));
    }

    #[test]
    fn only_a_pdf_has_pages() {
        assert_eq!(pdf_pages(&encode(b"\x89PNG\r\n\x1a\n")), None);
        assert_eq!(pdf_pages("data:image/png;base64,iVBORw0KGgo="), None);
        assert_eq!(pdf_pages(""), None);
    }
}
