//! The drive's front end: everything between the host link and the media.
//! A drive has one, in one of two placements, and both are built from the
//! parts here:
//!
//! * **Above a drive-managed layer** (IMR, SWD, Virtual Guard, the E-region
//!   baseline, HWSR), the front end sits above the translation layer, as in
//!   a real drive whose firmware runs the layer: the engine owns a
//!   [`drive_front::DriveFront`] (the [`controller`]'s command overheads,
//!   its segmented read cache with read-ahead, the fast-write pipeline) and
//!   a [`write_cache::WriteCache`] that coalesces host writes by LBA and
//!   destages them through the layer a home track at a time. The engine's
//!   read path (`engine/read_path.rs`) couples them with the layer and the
//!   device, as DiskSim's validated drives are measured.
//! * **Beneath a host-side layer** (the host-managed buffers, Skylight),
//!   the layer's physical operations are the host's commands to the drive,
//!   so the front end sits beneath the layer: the device owns a
//!   [`queued_cache::QueuedCache`], a volatile cache of physical writes
//!   destaged in the order of a command queue (FIFO, C-LOOK, SPTF), with
//!   FLUSH CACHE and FORCE UNIT ACCESS.
//!
//! Both take their link time from one [`link::Link`] and their settings
//! from the drive description's `write_cache_mib`, `interface_mb_s`,
//! `[controller]`, `[read_cache]` and `[queue]` tables.

pub mod controller;
pub mod drive_front;
pub mod link;
pub mod queued_cache;
pub mod write_cache;
