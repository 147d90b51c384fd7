"""The frame codec of the dtorch agent protocol (runtime/apps/agent/PROTOCOL.md, sections 1 and 2).

A frame on the line is COBS(header + payload + CRC-32) followed by one 0x00 delimiter. The decoded frame, all
integers little-endian: version (u8, 1), type (u8), flags (u16, 0), seq (u32), length (u32, at most MAX_PAYLOAD),
payload, CRC-32 (zlib.crc32) of everything before it.

The API, kept small because both the host and the agent's tests use it:

- `encode_frame(ftype, seq, payload)` -> the bytes to write (ending with 0x00);
- `decode_frame(body)` -> a `Frame`, or None when a drop rule of section 1 applies (`body`: the bytes between two
  delimiters);
- `FrameDecoder`: fed arbitrary chunks of a byte stream, returns the complete valid frames and counts the dropped
  ones (`dropped`), the valid ones (`frames`) and every byte seen (`bytes_in`);
- `cobs_encode` / `cobs_decode`;
- `encode_kv` / `parse_kv` / `parse_kv_pairs`: the `key=value\\n` control payloads;
- `put_data_payload` / `parse_put_data`, `ack_payload` / `parse_ack`: the binary payloads of PUT_DATA and ACK;
- the constants and `FrameType`.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "CRC_SIZE", "DELIMITER", "HEADER_SIZE", "MAX_CHUNK", "MAX_ENCODED", "MAX_PAYLOAD", "MIN_FRAME",
    "PROTOCOL_VERSION", "Frame", "FrameDecoder", "FrameError", "FrameType", "ack_payload", "cobs_decode",
    "cobs_encode", "decode_frame", "encode_frame", "encode_kv", "parse_ack", "parse_kv", "parse_kv_pairs",
    "parse_put_data", "put_data_payload",
]

PROTOCOL_VERSION = 1
MAX_PAYLOAD = 4096
HEADER_SIZE = 12
CRC_SIZE = 4
MIN_FRAME = HEADER_SIZE + CRC_SIZE  # 16: a frame with an empty payload
MAX_CHUNK = MAX_PAYLOAD - 8  # 4088 data bytes in one PUT_DATA after its 8-byte offset
# The most encoded bytes a receiver buffers before it gives up on a frame (section 1: 1 + 16 + 4096 + 32, the
# most COBS can need for the largest frame).
MAX_ENCODED = 1 + MIN_FRAME + MAX_PAYLOAD + 32
DELIMITER = b"\x00"

_HEADER = struct.Struct("<BBHII")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class FrameType(IntEnum):
    """Section 2: requests (host to agent) and responses (agent to host)."""

    HELLO = 0x01
    PUT_BEGIN = 0x02
    PUT_DATA = 0x03
    VERIFY = 0x04
    ACTIVATE = 0x05
    RUN = 0x06
    SELFTEST = 0x07
    STATUS = 0x08
    ROLLBACK = 0x09
    LOG = 0x0A
    GET = 0x0B
    OK = 0x80
    ERROR = 0x81
    ACK = 0x82


class FrameError(ValueError):
    """A value that cannot be encoded (payload too long, seq out of range, a bad key or value) or a payload that
    does not parse."""


@dataclass(frozen=True)
class Frame:
    """One decoded frame. `type` is an int (a `FrameType` when known; a receiver must answer unknown request types,
    so decoding never rejects them)."""

    type: int
    seq: int
    payload: bytes = b""

    def name(self) -> str:
        """The type's name (`HELLO`, `OK`, ...) or its hex code when unknown."""
        try:
            return FrameType(self.type).name
        except ValueError:
            return f"0x{self.type:02x}"


# --- COBS ----------------------------------------------------------------------------------------------------------

def cobs_encode(data: bytes) -> bytes:
    """Consistent Overhead Byte Stuffing: `data` without any zero byte (the delimiter is not added). Blocks of 254
    non-zero bytes take the code 0xFF; like the reference encoder, data ending right after such a block gets a
    final 0x01 (a decoder accepts either form)."""
    out = bytearray()
    start = 0
    n = len(data)
    while True:
        z = data.find(0, start, start + 254)
        if z >= 0:  # a block ended by a zero of the data
            out.append(z - start + 1)
            out += data[start:z]
            start = z + 1
            continue
        end = min(start + 254, n)
        out.append(end - start + 1)
        out += data[start:end]
        if end - start < 254:
            return bytes(out)
        start = end


def cobs_decode(data: bytes) -> bytes:
    """The inverse of `cobs_encode`. Raises FrameError for an invalid encoding (a zero byte inside, or a block code
    that points past the end)."""
    out = bytearray()
    i = 0
    n = len(data)
    while i < n:
        code = data[i]
        if code == 0:
            raise FrameError("a zero byte inside a COBS encoding")
        end = i + code
        if end > n:
            raise FrameError("a COBS block runs past the end of the frame")
        block = data[i + 1:end]
        if 0 in block:
            raise FrameError("a zero byte inside a COBS encoding")
        out += block
        i = end
        if code != 0xFF and i < n:
            out.append(0)
    return bytes(out)


# --- frames --------------------------------------------------------------------------------------------------------

def encode_frame(ftype: int, seq: int, payload: bytes = b"") -> bytes:
    """The bytes of one frame on the line: COBS(header, payload, CRC-32) and the 0x00 delimiter."""
    if not 0 <= ftype <= 0xFF:
        raise FrameError(f"frame type {ftype} is not one byte")
    if not 0 <= seq <= 0xFFFFFFFF:
        raise FrameError(f"seq {seq} does not fit 32 bits")
    if len(payload) > MAX_PAYLOAD:
        raise FrameError(f"a payload of {len(payload)} bytes is over MAX_PAYLOAD ({MAX_PAYLOAD})")
    raw = _HEADER.pack(PROTOCOL_VERSION, ftype, 0, seq, len(payload)) + bytes(payload)
    raw += _U32.pack(zlib.crc32(raw) & 0xFFFFFFFF)
    return cobs_encode(raw) + DELIMITER


def decode_frame(body: bytes) -> Frame | None:
    """The frame whose COBS encoding is `body` (the bytes before a delimiter, without it), or None when section 1
    says to drop it: invalid COBS, shorter than 16 bytes, `length` not its size, unknown version or flags, or a CRC
    that does not match."""
    if len(body) > MAX_ENCODED:
        return None
    try:
        raw = cobs_decode(body)
    except FrameError:
        return None
    if len(raw) < MIN_FRAME:
        return None
    version, ftype, flags, seq, length = _HEADER.unpack_from(raw)
    if version != PROTOCOL_VERSION or flags != 0 or length > MAX_PAYLOAD or len(raw) != MIN_FRAME + length:
        return None
    (crc,) = _U32.unpack_from(raw, HEADER_SIZE + length)
    if zlib.crc32(raw[:HEADER_SIZE + length]) & 0xFFFFFFFF != crc:
        return None
    return Frame(ftype, seq, raw[HEADER_SIZE:HEADER_SIZE + length])


class FrameDecoder:
    """A streaming receiver: `feed(chunk)` returns the valid frames completed by `chunk`, in order.

    Counters: `frames` (valid frames), `dropped` (frames dropped by a rule of section 1, an over-long one
    included), `bytes_in` (every byte fed). An empty frame (two delimiters in a row, or a delimiter first) is idle
    line, not a frame: it is neither returned nor counted as dropped. An over-long frame stops being buffered at
    MAX_ENCODED bytes and everything up to the next delimiter is discarded, so memory stays bounded whatever the
    line carries.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._overflow = False
        self.frames = 0
        self.dropped = 0
        self.bytes_in = 0

    def feed(self, data: bytes) -> list[Frame]:
        self.bytes_in += len(data)
        out: list[Frame] = []
        start = 0
        n = len(data)
        while start < n:
            z = data.find(0, start)
            if z < 0:
                self._append(data[start:])
                break
            self._append(data[start:z])
            start = z + 1
            if self._overflow:
                self._overflow = False
                self._buf.clear()
                continue
            if not self._buf:
                continue
            frame = decode_frame(bytes(self._buf))
            self._buf.clear()
            if frame is None:
                self.dropped += 1
            else:
                self.frames += 1
                out.append(frame)
        return out

    def _append(self, chunk: bytes) -> None:
        if self._overflow or not chunk:
            return
        if len(self._buf) + len(chunk) > MAX_ENCODED:
            self._buf.clear()
            self._overflow = True
            self.dropped += 1
            return
        self._buf += chunk

    @property
    def pending(self) -> int:
        """Bytes buffered of a frame not yet ended by a delimiter (0 while discarding an over-long one)."""
        return len(self._buf)


# --- payloads ------------------------------------------------------------------------------------------------------

_KEY = re.compile(r"[a-z0-9_]+")


def encode_kv(fields: Mapping[str, object] | Iterable[tuple[str, object]]) -> bytes:
    """A control payload: one `key=value\\n` line per field, in the order given (a list of pairs may repeat a key).
    Values are written with str(); bool as 1/0. Raises FrameError for a key outside [a-z0-9_]+, a value with a
    newline or NUL, or a payload over MAX_PAYLOAD."""
    items = fields.items() if isinstance(fields, Mapping) else fields
    lines = []
    for key, value in items:
        if not _KEY.fullmatch(key):
            raise FrameError(f"payload key {key!r} is not [a-z0-9_]+")
        text = str(int(value)) if isinstance(value, bool) else str(value)
        if "\n" in text or "\0" in text:
            raise FrameError(f"payload value of {key!r} holds a newline or NUL")
        lines.append(f"{key}={text}\n")
    out = "".join(lines).encode("utf-8")
    if len(out) > MAX_PAYLOAD:
        raise FrameError(f"a payload of {len(out)} bytes is over MAX_PAYLOAD ({MAX_PAYLOAD})")
    return out


def parse_kv_pairs(payload: bytes) -> list[tuple[str, str]]:
    """The `(key, value)` lines of a control payload, in order (repeated keys kept). Empty lines are skipped, a last
    line without its newline is accepted. Raises FrameError for text that is not UTF-8 or a line that is not
    `key=value` with a key in [a-z0-9_]+."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FrameError(f"payload is not UTF-8 ({e.reason} at byte {e.start})") from None
    if "\0" in text:
        raise FrameError("payload holds a NUL byte")
    out = []
    for line in text.split("\n"):
        if not line:
            continue
        key, eq, value = line.partition("=")
        if not eq or not _KEY.fullmatch(key):
            raise FrameError(f"payload line {line[:60]!r} is not key=value")
        out.append((key, value))
    return out


def parse_kv(payload: bytes) -> dict[str, str]:
    """A control payload as a dict (a repeated key keeps its last value; use parse_kv_pairs for lists)."""
    return dict(parse_kv_pairs(payload))


def put_data_payload(offset: int, data: bytes) -> bytes:
    """PUT_DATA's payload: the 8-byte little-endian offset, then at most MAX_CHUNK bytes of data."""
    if len(data) > MAX_CHUNK:
        raise FrameError(f"a PUT_DATA chunk of {len(data)} bytes is over {MAX_CHUNK}")
    if not 0 <= offset < 1 << 64:
        raise FrameError(f"offset {offset} does not fit 64 bits")
    return _U64.pack(offset) + bytes(data)


def parse_put_data(payload: bytes) -> tuple[int, bytes]:
    """(offset, data) of a PUT_DATA payload; FrameError when it is shorter than its 8-byte offset."""
    if len(payload) < 8:
        raise FrameError(f"a PUT_DATA payload of {len(payload)} bytes has no 8-byte offset")
    return _U64.unpack_from(payload)[0], payload[8:]


def ack_payload(received: int) -> bytes:
    """ACK's payload: the 8-byte little-endian count of contiguous bytes received."""
    return _U64.pack(received)


def parse_ack(payload: bytes) -> int:
    """The `received` count of an ACK payload; FrameError unless it is exactly 8 bytes."""
    if len(payload) != 8:
        raise FrameError(f"an ACK payload of {len(payload)} bytes, not 8")
    return _U64.unpack(payload)[0]
