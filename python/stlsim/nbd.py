"""An NBD server (the Network Block Device protocol) in front of a pluggable
backend: the protocol layer of `stlsim serve` (issue 37, first slice).

The server speaks the fixed newstyle handshake, simple replies and, where a
client asks, structured replies for reads
(https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md), on a
Unix socket or TCP, one thread per connection; every backend call is made
under one lock, so a backend need not be thread-safe. What it supports and
how it treats bad clients: docs/serve.md.

This module is not imported by ``import stlsim`` (start-up cost); import it
as ``stlsim.nbd``.
"""

from __future__ import annotations

import abc
import errno as _errno
import logging
import os
import socket
import socketserver
import stat
import struct
import threading

log = logging.getLogger("stlsim.nbd")

# --- Constants (proto.md) ---------------------------------------------------

NBDMAGIC = 0x4E42444D41474943  # "NBDMAGIC"
IHAVEOPT = 0x49484156454F5054  # "IHAVEOPT"
OPTION_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
STRUCTURED_REPLY_MAGIC = 0x668E33EF
NBD_REPLY_FLAG_DONE = 1 << 0
NBD_REPLY_TYPE_NONE = 0
NBD_REPLY_TYPE_OFFSET_DATA = 1
NBD_REPLY_TYPE_ERROR = (1 << 15) + 1

# Handshake flags (server) and client flags.
NBD_FLAG_FIXED_NEWSTYLE = 1 << 0
NBD_FLAG_NO_ZEROES = 1 << 1
NBD_FLAG_C_FIXED_NEWSTYLE = 1 << 0
NBD_FLAG_C_NO_ZEROES = 1 << 1

# Transmission flags.
NBD_FLAG_HAS_FLAGS = 1 << 0
NBD_FLAG_READ_ONLY = 1 << 1
NBD_FLAG_SEND_FLUSH = 1 << 2
NBD_FLAG_SEND_FUA = 1 << 3
NBD_FLAG_ROTATIONAL = 1 << 4
NBD_FLAG_SEND_TRIM = 1 << 5

# Options.
NBD_OPT_EXPORT_NAME = 1
NBD_OPT_ABORT = 2
NBD_OPT_LIST = 3
NBD_OPT_PEEK_EXPORT = 4
NBD_OPT_STARTTLS = 5
NBD_OPT_INFO = 6
NBD_OPT_GO = 7
NBD_OPT_STRUCTURED_REPLY = 8
NBD_OPT_LIST_META_CONTEXT = 9
NBD_OPT_SET_META_CONTEXT = 10

# Option replies.
NBD_REP_ACK = 1
NBD_REP_SERVER = 2
NBD_REP_INFO = 3
NBD_REP_FLAG_ERROR = 1 << 31
NBD_REP_ERR_UNSUP = NBD_REP_FLAG_ERROR | 1
NBD_REP_ERR_POLICY = NBD_REP_FLAG_ERROR | 2
NBD_REP_ERR_INVALID = NBD_REP_FLAG_ERROR | 3
NBD_REP_ERR_PLATFORM = NBD_REP_FLAG_ERROR | 4
NBD_REP_ERR_TLS_REQD = NBD_REP_FLAG_ERROR | 5
NBD_REP_ERR_UNKNOWN = NBD_REP_FLAG_ERROR | 6
NBD_REP_ERR_SHUTDOWN = NBD_REP_FLAG_ERROR | 7
NBD_REP_ERR_BLOCK_SIZE_REQD = NBD_REP_FLAG_ERROR | 8
NBD_REP_ERR_TOO_BIG = NBD_REP_FLAG_ERROR | 9

# Information types (NBD_OPT_INFO / NBD_OPT_GO).
NBD_INFO_EXPORT = 0
NBD_INFO_NAME = 1
NBD_INFO_DESCRIPTION = 2
NBD_INFO_BLOCK_SIZE = 3

# Commands and command flags.
NBD_CMD_READ = 0
NBD_CMD_WRITE = 1
NBD_CMD_DISC = 2
NBD_CMD_FLUSH = 3
NBD_CMD_TRIM = 4
NBD_CMD_FLAG_FUA = 1 << 0
NBD_CMD_FLAG_DF = 1 << 2  # do not fragment: a structured READ reply is one chunk anyway

# Error values of replies (proto.md: these numbers, whatever the platform's).
NBD_EPERM = 1
NBD_EIO = 5
NBD_ENOMEM = 12
NBD_EINVAL = 22
NBD_ENOSPC = 28
NBD_EOVERFLOW = 75
NBD_ENOTSUP = 95
NBD_ESHUTDOWN = 108

_NBD_ERRNOS = {
    _errno.EPERM: NBD_EPERM,
    _errno.EIO: NBD_EIO,
    _errno.ENOMEM: NBD_ENOMEM,
    _errno.EINVAL: NBD_EINVAL,
    _errno.ENOSPC: NBD_ENOSPC,
    _errno.EOVERFLOW: NBD_EOVERFLOW,
    _errno.ENOTSUP: NBD_ENOTSUP,
    _errno.ESHUTDOWN: NBD_ESHUTDOWN,
}

#: The block sizes the server advertises (NBD_INFO_BLOCK_SIZE); the minimum
#: is the larger of 512 and the backend's sector size.
PREFERRED_BLOCK = 4096
MAX_BLOCK = 32 * 1024 * 1024
#: A WRITE longer than MAX_BLOCK gets EINVAL after its payload is read and
#: discarded (in bounded chunks); one longer than this closes the connection.
WRITE_DISCARD_LIMIT = 4 * MAX_BLOCK
#: An option whose data is longer than this gets NBD_REP_ERR_TOO_BIG (its data
#: discarded); one longer than OPTION_DISCARD_LIMIT closes the connection.
MAX_OPTION_DATA = 64 * 1024
OPTION_DISCARD_LIMIT = 16 * 1024 * 1024
#: The longest export name accepted (proto.md: strings up to 4096 bytes).
MAX_NAME = 4096
_DISCARD_CHUNK = 1024 * 1024

_OPTION_NAMES = {
    NBD_OPT_EXPORT_NAME: "EXPORT_NAME",
    NBD_OPT_ABORT: "ABORT",
    NBD_OPT_LIST: "LIST",
    NBD_OPT_PEEK_EXPORT: "PEEK_EXPORT",
    NBD_OPT_STARTTLS: "STARTTLS",
    NBD_OPT_INFO: "INFO",
    NBD_OPT_GO: "GO",
    NBD_OPT_STRUCTURED_REPLY: "STRUCTURED_REPLY",
    NBD_OPT_LIST_META_CONTEXT: "LIST_META_CONTEXT",
    NBD_OPT_SET_META_CONTEXT: "SET_META_CONTEXT",
}


# --- Backends -----------------------------------------------------------------


class BackendError(Exception):
    """A request the backend refuses or fails; the client gets ``errno``
    (an ``errno`` module value, mapped to the NBD error of that name; EIO for
    one NBD has no name for) and the server logs the message."""

    def __init__(self, message: str, errno: int = _errno.EIO) -> None:
        super().__init__(message)
        self.errno = errno


class PowerLoss(Exception):
    """Raised by a backend after the request it served was the last before
    a power loss (``stlsim serve --crash-after``): the server sends no reply,
    drops every connection and serves whoever connects next."""


class Backend(abc.ABC):
    """What the server serves. Offsets and lengths are in bytes and need not
    be sector-aligned (the server passes through what a client sends, checked
    against ``size_bytes`` and MAX_BLOCK). The server calls a backend under
    one lock, from several threads. A method that fails raises BackendError
    (any other exception is answered with EIO and logged)."""

    @property
    @abc.abstractmethod
    def size_bytes(self) -> int:
        """The export's size in bytes."""

    @property
    def sector_bytes(self) -> int:
        """The logical sector size; the advertised minimum block size is the
        larger of this and 512."""
        return 512

    @abc.abstractmethod
    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (exactly that many)."""

    @abc.abstractmethod
    def write(self, offset: int, data: bytes, fua: bool = False) -> None:
        """Store ``data`` at ``offset``; with ``fua``, durably before returning."""

    def flush(self) -> None:
        """Make every completed write durable."""

    def trim(self, offset: int, length: int) -> None:
        """The range's contents are no longer needed (advisory)."""

    def hold(self) -> None:
        """Called after each backend call that served a request, before the
        reply is sent, in the serving thread and outside the server's lock:
        a backend that holds replies (the simulated drive in real time)
        waits here, so other connections are served meanwhile."""

    def close(self) -> None:
        """Release what the backend holds; the server calls it once, on shutdown."""


class _SizedBackend(Backend):
    """A backend of a fixed size and sector size, checking every range."""

    def __init__(self, size_bytes: int, sector_bytes: int = 512) -> None:
        if size_bytes <= 0 or sector_bytes <= 0:
            raise ValueError("size_bytes and sector_bytes must be positive")
        self._size = size_bytes
        self._sector = sector_bytes

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def sector_bytes(self) -> int:
        return self._sector

    def _check(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self._size:
            raise BackendError(f"range {offset}+{length} outside 0..{self._size}", _errno.EINVAL)


class MemoryBackend(_SizedBackend):
    """Sparse bytes in memory: a dict of 4 KiB pages, created on first write;
    what was never written (or was trimmed) reads as zeros. Counts the calls
    it gets (``writes``, ``fua_writes``, ``flushes``, ``trims``, ``reads``)."""

    PAGE = 4096

    def __init__(self, size_bytes: int, sector_bytes: int = 512) -> None:
        super().__init__(size_bytes, sector_bytes)
        self.pages: dict[int, bytearray] = {}
        self.reads = self.writes = self.fua_writes = self.flushes = self.trims = 0
        self.closed = False

    def _spans(self, offset: int, length: int):
        """(page index, start in page, end in page, start in the range) of each page the range touches."""
        pos, end = offset, offset + length
        while pos < end:
            idx, start = divmod(pos, self.PAGE)
            stop = min(self.PAGE, start + end - pos)
            yield idx, start, stop, pos - offset
            pos += stop - start

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        self.reads += 1
        out = bytearray(length)
        for idx, a, b, at in self._spans(offset, length):
            page = self.pages.get(idx)
            if page is not None:
                out[at : at + b - a] = page[a:b]
        return bytes(out)

    def write(self, offset: int, data: bytes, fua: bool = False) -> None:
        self._check(offset, len(data))
        self.writes += 1
        self.fua_writes += bool(fua)
        view = memoryview(data)
        for idx, a, b, at in self._spans(offset, len(data)):
            page = self.pages.get(idx)
            if page is None:
                page = self.pages[idx] = bytearray(self.PAGE)
            page[a:b] = view[at : at + b - a]

    def flush(self) -> None:
        self.flushes += 1

    def trim(self, offset: int, length: int) -> None:
        self._check(offset, length)
        self.trims += 1
        for idx, a, b, _ in self._spans(offset, length):
            if b - a == self.PAGE:
                self.pages.pop(idx, None)
            elif idx in self.pages:
                self.pages[idx][a:b] = bytes(b - a)

    def close(self) -> None:
        self.closed = True


class FileBackend(_SizedBackend):
    """Bytes in a file (``stlsim serve --store``), sparse where never
    written: created at the export's size, or reused when it has that size
    already (a later session sees what an earlier one wrote). FLUSH and FUA
    writes reach the file's storage (``fdatasync``); TRIM writes zeros."""

    def __init__(self, path: str | os.PathLike[str], size_bytes: int, sector_bytes: int = 512) -> None:
        super().__init__(size_bytes, sector_bytes)
        self.path = os.fspath(path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise BackendError(f"{self.path}: cannot open the store: {e.strerror}") from e
        have = os.fstat(fd).st_size
        if have not in (0, size_bytes):
            os.close(fd)
            raise BackendError(
                f"{self.path}: the store holds {have:,} bytes but this drive and layer export {size_bytes:,}; "
                "give another --store or the drive and layer it was made for"
            )
        os.ftruncate(fd, size_bytes)
        self._fd = fd
        self.reused = have == size_bytes

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        out = os.pread(self._fd, length, offset)
        return out if len(out) == length else out + bytes(length - len(out))

    def write(self, offset: int, data: bytes, fua: bool = False) -> None:
        self._check(offset, len(data))
        done = 0
        view = memoryview(data)
        while done < len(data):
            done += os.pwrite(self._fd, view[done:], offset + done)
        if fua:
            os.fdatasync(self._fd)

    def flush(self) -> None:
        os.fdatasync(self._fd)

    def trim(self, offset: int, length: int) -> None:
        self._check(offset, length)
        step = 1 << 20
        for at in range(offset, offset + length, step):
            os.pwrite(self._fd, bytes(min(step, offset + length - at)), at)

    def close(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1


# --- Connections --------------------------------------------------------------


class _Disconnected(Exception):
    """The client closed the connection (or it broke)."""


class _ProtocolError(Exception):
    """The client broke the protocol in a way the connection cannot survive."""


def _recv_exact(sock: socket.socket, n: int, what: str) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise _Disconnected(f"client disconnected after {got} of {n} bytes of {what}")
        got += k
    return bytes(buf)


def _discard(sock: socket.socket, n: int, what: str) -> None:
    buf = bytearray(min(n, _DISCARD_CHUNK))
    view = memoryview(buf)
    left = n
    while left:
        k = sock.recv_into(view, min(left, len(buf)))
        if k == 0:
            raise _Disconnected(f"client disconnected with {left} of {n} bytes of {what} unsent")
        left -= k


class _Handler(socketserver.BaseRequestHandler):
    server: _ThreadingServer

    def setup(self) -> None:
        self.sock: socket.socket = self.request
        peer = self.client_address
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) == 2 else "unix client"
        self.peer = f"{self.peer} #{next(self.server.nbd._ids)}"
        self.nbd: NBDServer = self.server.nbd
        self.no_zeroes = False
        self.structured = False
        self.nbd._register(self.sock)

    def finish(self) -> None:
        self.nbd._unregister(self.sock)

    def handle(self) -> None:
        try:
            self.sock.settimeout(self.nbd.handshake_timeout)
            if not self._negotiate():
                return
            self.sock.settimeout(None)
            self._transmit()
        except _Disconnected as e:
            log.warning("nbd %s: %s; connection closed", self.peer, e)
        except _ProtocolError as e:
            log.warning("nbd %s: %s; connection closed", self.peer, e)
        except PowerLoss as e:
            log.warning("nbd %s: power loss (%s): every connection dropped", self.peer, e)
            self.nbd._drop_connections()
        except socket.timeout:
            log.warning("nbd %s: handshake not finished within %s s; connection closed", self.peer, self.nbd.handshake_timeout)
        except OSError as e:
            if not self.nbd._closing:
                log.warning("nbd %s: %s; connection closed", self.peer, e)

    # -- handshake --

    def _reply(self, opt: int, kind: int, data: bytes = b"") -> None:
        self.sock.sendall(struct.pack(">QIII", OPTION_REPLY_MAGIC, opt, kind, len(data)) + data)

    def _error(self, opt: int, kind: int, message: str) -> None:
        log.info("nbd %s: option %s refused: %s", self.peer, _OPTION_NAMES.get(opt, opt), message)
        self._reply(opt, kind, message.encode())

    def _negotiate(self) -> bool:
        """The handshake and option haggling: True once transmission begins,
        False if the client aborted."""
        self.sock.sendall(struct.pack(">QQH", NBDMAGIC, IHAVEOPT, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES))
        (cflags,) = struct.unpack(">I", _recv_exact(self.sock, 4, "client flags"))
        if cflags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES):
            raise _ProtocolError(f"unknown client flags {cflags:#x}")
        self.no_zeroes = bool(cflags & NBD_FLAG_C_NO_ZEROES)
        while True:
            magic, opt, length = struct.unpack(">QII", _recv_exact(self.sock, 16, "an option header"))
            if magic != IHAVEOPT:
                raise _ProtocolError(f"option magic {magic:#x}, not IHAVEOPT")
            if length > MAX_OPTION_DATA:
                if length > OPTION_DISCARD_LIMIT or opt == NBD_OPT_EXPORT_NAME:
                    raise _ProtocolError(f"option {_OPTION_NAMES.get(opt, opt)} with {length} bytes of data")
                _discard(self.sock, length, "an option's data")
                self._error(opt, NBD_REP_ERR_TOO_BIG, f"option data of {length} bytes (at most {MAX_OPTION_DATA})")
                continue
            data = _recv_exact(self.sock, length, "an option's data")
            if opt == NBD_OPT_EXPORT_NAME:
                if not self.nbd._knows(data):
                    raise _ProtocolError(f"NBD_OPT_EXPORT_NAME for unknown export {data[:64]!r}")
                out = struct.pack(">QH", self.nbd.backend.size_bytes, self.nbd.transmission_flags)
                self.sock.sendall(out if self.no_zeroes else out + bytes(124))
                log.info("nbd %s: export %r (NBD_OPT_EXPORT_NAME)", self.peer, self.nbd.export_name)
                return True
            if opt == NBD_OPT_ABORT:
                try:
                    self._reply(opt, NBD_REP_ACK)
                except OSError:
                    pass  # the client may close without reading the reply
                log.info("nbd %s: client aborted the handshake", self.peer)
                return False
            if opt == NBD_OPT_LIST:
                if data:
                    self._error(opt, NBD_REP_ERR_INVALID, "NBD_OPT_LIST takes no data")
                    continue
                name = self.nbd.export_name.encode()
                self._reply(opt, NBD_REP_SERVER, struct.pack(">I", len(name)) + name)
                self._reply(opt, NBD_REP_ACK)
            elif opt in (NBD_OPT_INFO, NBD_OPT_GO):
                if self._info(opt, data) and opt == NBD_OPT_GO:
                    log.info("nbd %s: export %r (NBD_OPT_GO)", self.peer, self.nbd.export_name)
                    return True
            elif opt == NBD_OPT_STRUCTURED_REPLY:
                if data:
                    self._error(opt, NBD_REP_ERR_INVALID, "NBD_OPT_STRUCTURED_REPLY takes no data")
                else:
                    # Reads then answer in chunks; other commands keep simple
                    # replies, which proto.md allows once negotiated.
                    self.structured = True
                    self._reply(opt, NBD_REP_ACK)
            else:
                self._error(opt, NBD_REP_ERR_UNSUP, f"option {_OPTION_NAMES.get(opt, opt)} is not supported")

    def _info(self, opt: int, data: bytes) -> bool:
        """NBD_OPT_INFO / NBD_OPT_GO: True if the export was described and acknowledged."""
        if len(data) < 6:
            self._error(opt, NBD_REP_ERR_INVALID, "request shorter than 6 bytes")
            return False
        (nlen,) = struct.unpack_from(">I", data)
        if nlen > MAX_NAME or 4 + nlen + 2 > len(data):
            self._error(opt, NBD_REP_ERR_INVALID, f"name length {nlen} does not fit the request")
            return False
        name = data[4 : 4 + nlen]
        (count,) = struct.unpack_from(">H", data, 4 + nlen)
        if len(data) != 4 + nlen + 2 + 2 * count:
            self._error(opt, NBD_REP_ERR_INVALID, f"{count} information requests do not fit the request")
            return False
        wanted = struct.unpack_from(f">{count}H", data, 6 + nlen)
        if not self.nbd._knows(name):
            self._error(opt, NBD_REP_ERR_UNKNOWN, f"no export named {name[:64]!r}")
            return False
        backend = self.nbd.backend
        self._reply(opt, NBD_REP_INFO, struct.pack(">HQH", NBD_INFO_EXPORT, backend.size_bytes, self.nbd.transmission_flags))
        if NBD_INFO_NAME in wanted:
            self._reply(opt, NBD_REP_INFO, struct.pack(">H", NBD_INFO_NAME) + self.nbd.export_name.encode())
        # Sent whether asked for or not (proto.md allows it); requests need
        # not be aligned to the minimum, so a client that did not ask is served too.
        self._reply(opt, NBD_REP_INFO, struct.pack(">HIII", NBD_INFO_BLOCK_SIZE, *self.nbd.block_sizes))
        self._reply(opt, NBD_REP_ACK)
        return True

    # -- transmission --

    def _send(self, handle: int, error: int, data: bytes = b"") -> None:
        self.sock.sendall(struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, error, handle))
        if data:
            self.sock.sendall(data)

    def _send_read(self, handle: int, offset: int, error: int, data: bytes) -> None:
        """A READ's reply: simple, or with structured replies one chunk (the
        data, or the error) marked done."""
        if not self.structured:
            self._send(handle, error, data)
        elif error:
            msg = b"read failed"
            head = struct.pack(">IHHQI", STRUCTURED_REPLY_MAGIC, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_ERROR, handle, 6 + len(msg))
            self.sock.sendall(head + struct.pack(">IH", error, len(msg)) + msg)
        elif not data:
            self.sock.sendall(struct.pack(">IHHQI", STRUCTURED_REPLY_MAGIC, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, handle, 0))
        else:
            head = struct.pack(">IHHQIQ", STRUCTURED_REPLY_MAGIC, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA, handle, 8 + len(data), offset)
            self.sock.sendall(head)
            self.sock.sendall(data)

    def _fail(self, handle: int, error: int, message: str) -> None:
        self.nbd._count("errors")
        log.info("nbd %s: %s", self.peer, message)
        self._send(handle, error)

    def _call(self, fn, *args):
        """(result, 0) or (None, NBD error) of a backend call made under the
        lock, and the backend's hold after it (outside the lock)."""
        try:
            with self.nbd.lock:
                out = fn(*args)
            self.nbd.backend.hold()
            return out, 0
        except BackendError as e:
            log.warning("nbd %s: backend refused %s: %s", self.peer, fn.__name__, e)
            return None, _NBD_ERRNOS.get(e.errno, NBD_EIO)
        except PowerLoss:
            raise
        except Exception as e:  # noqa: BLE001 -- any backend failure is the client's EIO, not the server's end
            log.exception("nbd %s: backend %s failed: %s", self.peer, fn.__name__, e)
            return None, NBD_EIO

    def _transmit(self) -> None:
        size = self.nbd.backend.size_bytes
        while True:
            head = self.sock.recv(28)
            if not head:
                log.info("nbd %s: client closed the connection without NBD_CMD_DISC", self.peer)
                return
            if len(head) < 28:
                head += _recv_exact(self.sock, 28 - len(head), "a request header")
            magic, flags, cmd, handle, offset, length = struct.unpack(">IHHQQI", head)
            if magic != REQUEST_MAGIC:
                raise _ProtocolError(f"request magic {magic:#x}, not {REQUEST_MAGIC:#x}")
            if cmd == NBD_CMD_WRITE:
                self._write(flags, handle, offset, length, size)
            elif cmd == NBD_CMD_READ:
                if flags & ~(NBD_CMD_FLAG_DF if self.structured else 0):
                    self._fail(handle, NBD_EINVAL, f"READ with unsupported flags {flags:#x}")
                elif length > MAX_BLOCK:
                    self._fail(handle, NBD_EINVAL, f"READ of {length} bytes (at most {MAX_BLOCK})")
                elif offset + length > size:
                    self._fail(handle, NBD_EINVAL, f"READ {offset}+{length} past the end ({size})")
                else:
                    data, err = self._call(self.nbd.backend.read, offset, length)
                    if not err and len(data) != length:
                        log.error("nbd %s: backend read returned %d bytes, not %d", self.peer, len(data), length)
                        err = NBD_EIO
                    self.nbd._count("reads")
                    self._send_read(handle, offset, err, data if not err else b"")
            elif cmd == NBD_CMD_FLUSH:
                if flags or offset or length:
                    self._fail(handle, NBD_EINVAL, "FLUSH with flags, offset or length")
                else:
                    _, err = self._call(self.nbd.backend.flush)
                    self.nbd._count("flushes")
                    self._send(handle, err)
            elif cmd == NBD_CMD_TRIM:
                if flags & ~NBD_CMD_FLAG_FUA:
                    self._fail(handle, NBD_EINVAL, f"TRIM with unsupported flags {flags:#x}")
                elif offset + length > size:
                    self._fail(handle, NBD_EINVAL, f"TRIM {offset}+{length} past the end ({size})")
                else:
                    _, err = self._call(self.nbd.backend.trim, offset, length)
                    if not err and flags & NBD_CMD_FLAG_FUA:
                        _, err = self._call(self.nbd.backend.flush)
                    self.nbd._count("trims")
                    self._send(handle, err)
            elif cmd == NBD_CMD_DISC:
                log.info("nbd %s: client disconnected (NBD_CMD_DISC)", self.peer)
                return
            else:
                self._fail(handle, NBD_EINVAL, f"unsupported command {cmd}")

    def _write(self, flags: int, handle: int, offset: int, length: int, size: int) -> None:
        problem = None
        if length > MAX_BLOCK:
            if length > WRITE_DISCARD_LIMIT:
                raise _ProtocolError(f"WRITE of {length} bytes (at most {MAX_BLOCK}; over {WRITE_DISCARD_LIMIT} not read)")
            problem = (NBD_EINVAL, f"WRITE of {length} bytes (at most {MAX_BLOCK}); payload discarded")
        elif flags & ~NBD_CMD_FLAG_FUA:
            problem = (NBD_EINVAL, f"WRITE with unsupported flags {flags:#x}")
        elif offset + length > size:
            problem = (NBD_ENOSPC, f"WRITE {offset}+{length} past the end ({size})")
        if problem:
            _discard(self.sock, length, "a WRITE payload")
            self._fail(handle, *problem)
            return
        data = _recv_exact(self.sock, length, "a WRITE payload")
        _, err = self._call(self.nbd.backend.write, offset, data, bool(flags & NBD_CMD_FLAG_FUA))
        self.nbd._count("writes")
        self._send(handle, err)


# --- Server -------------------------------------------------------------------


class _ThreadingServer(socketserver.ThreadingMixIn, socketserver.BaseServer):
    daemon_threads = False
    block_on_close = True
    nbd: NBDServer


class _UnixServer(_ThreadingServer, socketserver.UnixStreamServer):
    pass


class _TCPServer(_ThreadingServer, socketserver.TCPServer):
    allow_reuse_address = True

    def process_request(self, request, client_address):  # type: ignore[override]
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().process_request(request, client_address)


def _remove_stale_socket(path: str) -> None:
    """Remove a socket file no server listens on; refuse to touch anything else."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise FileExistsError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise FileExistsError(f"a server already listens on {path}")


class NBDServer:
    """An NBD server of one export, ``backend``, on a Unix socket
    (``socket_path``) or TCP (``port``; 0 picks a free one, see ``address``).
    ``start()`` serves from a background thread, ``serve_forever()`` from the
    caller's; ``shutdown()`` closes every connection, stops the server,
    removes the socket file and closes the backend."""

    def __init__(
        self,
        backend: Backend,
        socket_path: str | os.PathLike[str] | None = None,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        export_name: str = "",
        handshake_timeout: float = 30.0,
    ) -> None:
        if (socket_path is None) == (port is None):
            raise ValueError("give exactly one of socket_path and port")
        self.backend = backend
        self.export_name = export_name
        self.handshake_timeout = handshake_timeout
        self.lock = threading.Lock()
        self.transmission_flags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_TRIM | NBD_FLAG_ROTATIONAL
        minimum = max(512, backend.sector_bytes)
        self.block_sizes = (minimum, max(minimum, PREFERRED_BLOCK), MAX_BLOCK)
        #: Requests served by kind, and requests answered with an error.
        self.stats = {"reads": 0, "writes": 0, "flushes": 0, "trims": 0, "errors": 0}
        self._stats_lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._ids = iter(range(1, 1 << 62))
        self._closing = False
        self._thread: threading.Thread | None = None
        self.socket_path = os.fspath(socket_path) if socket_path is not None else None
        if self.socket_path is not None:
            _remove_stale_socket(self.socket_path)
            self._server: _ThreadingServer = _UnixServer(self.socket_path, _Handler)
        else:
            self._server = _TCPServer((host, port), _Handler)
        self._server.nbd = self
        self._shut = False

    @property
    def address(self):
        """The socket path, or the (host, port) listened on."""
        return self.socket_path if self.socket_path is not None else self._server.server_address[:2]

    @property
    def connections(self) -> int:
        """Connections open now."""
        with self._conns_lock:
            return len(self._conns)

    def _knows(self, name: bytes) -> bool:
        return name in (b"", self.export_name.encode())

    def _count(self, key: str) -> None:
        with self._stats_lock:
            self.stats[key] += 1

    def _register(self, sock: socket.socket) -> None:
        with self._conns_lock:
            self._conns.add(sock)
            if self._closing:  # accepted just before shutdown() closed the others
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _drop_connections(self) -> None:
        """Close every open connection (a simulated power loss, or shutting
        down); the server goes on accepting new ones unless it is closing."""
        with self._conns_lock:
            for sock in self._conns:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _unregister(self, sock: socket.socket) -> None:
        with self._conns_lock:
            self._conns.discard(sock)

    def start(self) -> NBDServer:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="stlsim-nbd", daemon=True)
        self._thread.start()
        log.info("nbd: serving %d bytes on %s", self.backend.size_bytes, self.address)
        return self

    def serve_forever(self) -> None:
        log.info("nbd: serving %d bytes on %s", self.backend.size_bytes, self.address)
        try:
            self._server.serve_forever()
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop accepting, close the open connections, wait for their threads,
        remove the socket file and close the backend. Idempotent."""
        if self._shut:
            return
        self._shut = True
        with self._conns_lock:
            self._closing = True
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._drop_connections()
        self._server.server_close()  # joins the connection threads
        if self.socket_path is not None:
            try:
                os.unlink(self.socket_path)
            except FileNotFoundError:
                pass
        with self.lock:
            self.backend.close()
        log.info("nbd: server on %s shut down", self.address)

    def __enter__(self) -> NBDServer:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


def serve(
    backend: Backend,
    socket_path: str | os.PathLike[str] | None = None,
    port: int | None = None,
    *,
    host: str = "127.0.0.1",
    export_name: str = "",
    block: bool = False,
) -> NBDServer:
    """Serve ``backend`` over NBD on a Unix socket or a TCP port. Returns the
    running server (serving from a background thread; stop it with
    ``shutdown()``), or with ``block=True`` serves until interrupted."""
    server = NBDServer(backend, socket_path, port, host=host, export_name=export_name)
    if block:
        server.serve_forever()
        return server
    return server.start()
