//! A zip archive written as a stream (APPNOTE 6.3.x): each entry's local header and deflated
//! data are handed out as soon as the entry is added, and the central directory at the end,
//! so an archive of any size is never held whole. ZIP64 end records are written when the
//! archive has more than 65 535 entries or its central directory starts past 4 GiB (and a
//! ZIP64 extra field for an entry that starts past it); each entry must be below 4 GiB.

use std::io::Write;

use flate2::Compression;
use flate2::write::DeflateEncoder;
use time::OffsetDateTime;

/// The largest value of a 32-bit field; above it, ZIP64.
const MAX32: u64 = 0xFFFF_FFFF;
/// The most entries the classic end record counts.
const MAX16: u64 = 0xFFFF;
/// General purpose flag bit 11: names are UTF-8.
const UTF8_NAMES: u16 = 1 << 11;
/// Compression method 8: deflate.
const DEFLATE: u16 = 8;

/// One entry as the central directory records it.
struct Entry {
    name: Vec<u8>,
    crc: u32,
    compressed: u64,
    size: u64,
    offset: u64,
}

/// A zip archive being written: [`add`](Self::add) each entry, then [`finish`](Self::finish);
/// both answer the bytes to send next.
pub struct ZipStream {
    entries: Vec<Entry>,
    offset: u64,
    time: u16,
    date: u16,
}

impl ZipStream {
    /// An empty archive whose entries are stamped `at` (MS-DOS time, local to UTC).
    pub fn new(at: OffsetDateTime) -> Self {
        let year = u16::try_from(at.year().clamp(1980, 2107) - 1980).unwrap_or(0);
        ZipStream {
            entries: Vec::new(),
            offset: 0,
            time: (u16::from(at.hour()) << 11)
                | (u16::from(at.minute()) << 5)
                | u16::from(at.second() / 2),
            date: (year << 9) | (u16::from(u8::from(at.month())) << 5) | u16::from(at.day()),
        }
    }

    /// The local header and deflated data of an entry `name` holding `data`.
    ///
    /// # Errors
    /// An entry of 4 GiB or more (not written).
    pub fn add(&mut self, name: &str, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data)?;
        let deflated = encoder.finish()?;
        let size = data.len() as u64;
        let compressed = deflated.len() as u64;
        if size >= MAX32 || compressed >= MAX32 {
            return Err(std::io::Error::other("a zip entry of 4 GiB or more"));
        }
        let crc = crc32fast::hash(data);
        let mut out = Vec::with_capacity(30 + name.len() + deflated.len());
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes());
        out.extend_from_slice(&UTF8_NAMES.to_le_bytes());
        out.extend_from_slice(&DEFLATE.to_le_bytes());
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(&self.date.to_le_bytes());
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&(compressed as u32).to_le_bytes());
        out.extend_from_slice(&(size as u32).to_le_bytes());
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&deflated);
        self.entries.push(Entry {
            name: name.as_bytes().to_vec(),
            crc,
            compressed,
            size,
            offset: self.offset,
        });
        self.offset += out.len() as u64;
        Ok(out)
    }

    /// The central directory and the end records.
    pub fn finish(self) -> Vec<u8> {
        let mut out = Vec::new();
        let start = self.offset;
        for e in &self.entries {
            let zip64 = e.offset >= MAX32;
            out.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            out.extend_from_slice(&45u16.to_le_bytes());
            out.extend_from_slice(&(if zip64 { 45u16 } else { 20 }).to_le_bytes());
            out.extend_from_slice(&UTF8_NAMES.to_le_bytes());
            out.extend_from_slice(&DEFLATE.to_le_bytes());
            out.extend_from_slice(&self.time.to_le_bytes());
            out.extend_from_slice(&self.date.to_le_bytes());
            out.extend_from_slice(&e.crc.to_le_bytes());
            out.extend_from_slice(&(e.compressed as u32).to_le_bytes());
            out.extend_from_slice(&(e.size as u32).to_le_bytes());
            out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
            out.extend_from_slice(&(if zip64 { 12u16 } else { 0 }).to_le_bytes());
            out.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
            out.extend_from_slice(&0u32.to_le_bytes()); // external attributes
            out.extend_from_slice(&(e.offset.min(MAX32) as u32).to_le_bytes());
            out.extend_from_slice(&e.name);
            if zip64 {
                out.extend_from_slice(&1u16.to_le_bytes());
                out.extend_from_slice(&8u16.to_le_bytes());
                out.extend_from_slice(&e.offset.to_le_bytes());
            }
        }
        let size = out.len() as u64;
        let count = self.entries.len() as u64;
        if count >= MAX16 || start >= MAX32 || size >= MAX32 {
            let end64 = start + size;
            out.extend_from_slice(&0x0606_4b50u32.to_le_bytes());
            out.extend_from_slice(&44u64.to_le_bytes());
            out.extend_from_slice(&45u16.to_le_bytes());
            out.extend_from_slice(&45u16.to_le_bytes());
            out.extend_from_slice(&[0; 8]); // this disk, the directory's disk
            out.extend_from_slice(&count.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&0x0706_4b50u32.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&end64.to_le_bytes());
            out.extend_from_slice(&1u32.to_le_bytes());
        }
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0; 4]); // this disk, the directory's disk
        out.extend_from_slice(&(count.min(MAX16) as u16).to_le_bytes());
        out.extend_from_slice(&(count.min(MAX16) as u16).to_le_bytes());
        out.extend_from_slice(&(size.min(MAX32) as u32).to_le_bytes());
        out.extend_from_slice(&(start.min(MAX32) as u32).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The archive as `python3 -m zipfile -t` and `unzip` read it is checked by the
    /// workspace tests; here the layout: offsets and counts add up.
    #[test]
    fn layout() {
        let mut z = ZipStream::new(OffsetDateTime::UNIX_EPOCH);
        let a = z.add("meta.json", b"{}").unwrap();
        let b = z.add("event_000000_x.json", b"{\"a\":1}").unwrap();
        let end = z.finish();
        assert_eq!(&a[..4], b"PK\x03\x04");
        assert_eq!(&end[end.len() - 22..end.len() - 18], b"PK\x05\x06");
        let count = u16::from_le_bytes([end[end.len() - 12], end[end.len() - 11]]);
        assert_eq!(count, 2);
        let start = u32::from_le_bytes(end[end.len() - 6..end.len() - 2].try_into().unwrap());
        assert_eq!(start as usize, a.len() + b.len());
    }
}
