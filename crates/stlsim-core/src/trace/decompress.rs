//! The bytes of a trace file as its reader sees them: `.gz` and `.zst`
//! decoded on the fly (every member and frame), bzip2 and binary blktrace
//! refused with a line saying what to do, and a count of the file's bytes
//! read so far for the progress bar.

use crate::error::{SimError, SimResult};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The file at `path`, decompressed by its extension (`.gz`, `.zst`), with a
/// count of the (compressed) bytes read so far and the file's size.
pub(crate) fn open_input(path: &str) -> SimResult<(Box<dyn Read + Send>, Arc<AtomicU64>, u64)> {
    let file =
        File::open(path).map_err(|e| SimError::Io(format!("cannot open trace '{path}': {e}")))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let consumed = Arc::new(AtomicU64::new(0));
    let counted = CountingReader {
        inner: file,
        count: Arc::clone(&consumed),
    };
    let lower = path.to_ascii_lowercase();
    let decoded: Box<dyn Read + Send> = if lower.ends_with(".gz") {
        Box::new(flate2::bufread::MultiGzDecoder::new(
            BufReader::with_capacity(1 << 16, counted),
        ))
    } else if lower.ends_with(".zst") {
        Box::new(ZstdReader::new(BufReader::with_capacity(1 << 16, counted)))
    } else {
        let mut plain = BufReader::with_capacity(1 << 16, counted);
        // Checked by content too: a bzip2 file under another name would
        // otherwise be read as text and fail at line 1 on binary garbage.
        let head = plain
            .fill_buf()
            .map_err(|e| SimError::Io(format!("error reading trace '{path}': {e}")))?;
        if lower.ends_with(".bz2") || is_bzip2(head) {
            return Err(bzip2_unsupported(path));
        }
        if is_blktrace(head) {
            return Err(SimError::Io(format!(
                "cannot read trace '{path}': it is blktrace's binary output, which stlsim does not decode \
                 (no maintained library reads it); turn it into text with blkparse (blkparse -i DEV -o DEV.txt) and read that"
            )));
        }
        Box::new(plain)
    };
    Ok((decoded, consumed, size))
}

/// Whether `head` starts a binary blktrace record: the kernel's
/// `BLK_IO_TRACE_MAGIC` (0x65617400) with a version in its low byte (6 or 7
/// in the kernels that wrote them).
fn is_blktrace(head: &[u8]) -> bool {
    head.len() >= 48
        && matches!(head.first_chunk::<4>().map(|m| u32::from_le_bytes(*m)), Some(m) if m & 0xffff_ff00 == 0x6561_7400 && (6..=7).contains(&(m & 0xff)))
}

/// Whether `head` starts a bzip2 stream: `BZh`, the block-size digit, then
/// the magic of a first block or of an empty stream's end.
fn is_bzip2(head: &[u8]) -> bool {
    const BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    head.len() >= 10
        && head.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&head[3])
        && (head[4..10] == BLOCK || head[4..10] == END)
}

/// The one-line refusal of a bzip2 file (the UMass Trace Repository serves
/// its SPC traces as `.spc.bz2`): how to turn it into something readable.
fn bzip2_unsupported(path: &str) -> SimError {
    SimError::Io(format!(
        "cannot read trace '{path}': it is bzip2-compressed, which stlsim does not decode; \
         decompress it (bunzip2 -k FILE) or recompress it as .gz or .zst (bzip2 -dc FILE | gzip > FILE.gz)"
    ))
}

/// Counts the bytes read from the underlying file.
struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A zstd decoder over all frames of a stream (concatenated frames are
/// decoded in turn, skippable frames are skipped). A frame that carries a
/// content checksum is verified when it ends, so a corrupt file is an error
/// rather than silently different requests. Errors are one short sentence
/// (the opener prefixes the file name), not the decoder's debug structures.
struct ZstdReader<R: BufRead> {
    source: R,
    decoder: ruzstd::decoding::FrameDecoder,
    in_frame: bool,
    /// 1-based number of the current (or last) frame, for messages.
    frame: u64,
}

impl<R: BufRead> ZstdReader<R> {
    fn new(source: R) -> Self {
        ZstdReader {
            source,
            decoder: ruzstd::decoding::FrameDecoder::new(),
            in_frame: false,
            frame: 0,
        }
    }

    /// A decoding failure as one line: truncation, a stream that is not
    /// zstd, or corrupt data in frame N.
    fn corrupt(&self, e: impl std::fmt::Display) -> io::Error {
        let text = e.to_string();
        let msg = if text.contains("UnexpectedEof") || text.contains("failed to fill") {
            format!(
                "the zstd data ends inside frame {} (truncated file?)",
                self.frame
            )
        } else if text.contains("BadMagicNumber") {
            if self.frame <= 1 {
                "not zstd data (bad magic number)".to_string()
            } else {
                format!(
                    "garbage after zstd frame {} (bad magic number)",
                    self.frame - 1
                )
            }
        } else {
            format!("corrupt zstd data: frame {} does not decode", self.frame)
        };
        io::Error::new(io::ErrorKind::InvalidData, msg)
    }

    /// At the end of a frame: its content checksum, if it has one, must match.
    fn verify_checksum(&self) -> io::Result<()> {
        let Some(stored) = self.decoder.get_checksum_from_data() else {
            return Ok(());
        };
        match self.decoder.get_calculated_checksum() {
            Some(computed) if computed == stored => Ok(()),
            computed => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "zstd frame {} fails its checksum (stored {stored:#010x}, computed {:#010x}): the file is corrupt",
                    self.frame,
                    computed.unwrap_or(0)
                ),
            )),
        }
    }
}

impl<R: BufRead> Read for ZstdReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        use ruzstd::decoding::BlockDecodingStrategy;
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                let dec = &mut self.decoder;
                while dec.can_collect() < buf.len() && !dec.is_finished() {
                    let need = buf.len() - dec.can_collect();
                    if let Err(e) =
                        dec.decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBytes(need))
                    {
                        return Err(self.corrupt(e));
                    }
                }
                let n = dec.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                if dec.is_finished() && dec.can_collect() == 0 {
                    self.verify_checksum()?;
                    self.in_frame = false;
                } else {
                    continue;
                }
            }
            // Start the next frame, if any.
            if self.source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.frame += 1;
            match self.decoder.reset(&mut self.source) {
                Ok(()) => self.in_frame = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped = io::copy(
                        &mut (&mut self.source).take(u64::from(length)),
                        &mut io::sink(),
                    )?;
                    if skipped < u64::from(length) {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!(
                                "the zstd data ends inside skippable frame {} (truncated file?)",
                                self.frame
                            ),
                        ));
                    }
                }
                Err(e) => return Err(self.corrupt(e)),
            }
        }
    }
}
