"""The frame codec of runtime/apps/agent/PROTOCOL.md section 1: COBS, CRC-32, every drop rule, the streaming
decoder, and the payload formats. The pinned frames are byte-exact: the agent's encoder must produce the same."""

from __future__ import annotations

import random
import struct

import pytest

from dtorch.edge.device.frames import (
    MAX_CHUNK,
    MAX_ENCODED,
    MAX_PAYLOAD,
    Frame,
    FrameDecoder,
    FrameError,
    FrameType,
    ack_payload,
    cobs_decode,
    cobs_encode,
    decode_frame,
    encode_frame,
    encode_kv,
    parse_ack,
    parse_kv,
    parse_kv_pairs,
    parse_put_data,
    put_data_payload,
)

# HELLO, seq 1, no payload: header 01 01 0000 01000000 00000000, CRC-32 0xed54555e, then COBS and the delimiter.
HELLO_SEQ1 = bytes.fromhex("03 01 01 01 02 01 01 01 01 01 01 01 05 5e 55 54 ed 00")
# OK, seq 7, payload "protocol=1\n".
OK_SEQ7 = bytes.fromhex("03 01 80 01 02 07 01 01 02 0b 01 01 10 70 72 6f 74 6f 63 6f 6c 3d 31 0a 13 05 9d 06 00")


def _crc32_bitwise(data: bytes) -> int:
    """IEEE 802.3 CRC-32 written out (reflected, polynomial 0xEDB88320, init and final xor 0xFFFFFFFF): the pinned
    CRCs do not rest on zlib alone."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_pinned_frames_are_byte_exact():
    assert encode_frame(FrameType.HELLO, 1) == HELLO_SEQ1
    assert encode_frame(FrameType.OK, 7, b"protocol=1\n") == OK_SEQ7
    assert decode_frame(HELLO_SEQ1[:-1]) == Frame(FrameType.HELLO, 1, b"")
    assert decode_frame(OK_SEQ7[:-1]) == Frame(0x80, 7, b"protocol=1\n")
    header = bytes.fromhex("01 01 0000 01000000 00000000")
    assert _crc32_bitwise(header) == 0xED54555E
    raw = cobs_decode(OK_SEQ7[:-1])
    assert struct.unpack("<I", raw[-4:])[0] == _crc32_bitwise(raw[:-4])


@pytest.mark.parametrize("data,encoded", [
    (b"", b"\x01"),
    (b"\x00", b"\x01\x01"),
    (b"\x00\x00", b"\x01\x01\x01"),
    (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
    (b"\x11\x22\x33\x44", b"\x05\x11\x22\x33\x44"),
    (b"\x11\x00\x00\x00", b"\x02\x11\x01\x01\x01"),
    (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255)) + b"\x01"),
    (bytes(range(0, 255)), b"\x01\xff" + bytes(range(1, 255)) + b"\x01"),
    (bytes(range(1, 256)), b"\xff" + bytes(range(1, 255)) + b"\x02\xff"),
])
def test_cobs_reference_vectors(data, encoded):
    """The examples of Cheshire & Baker's paper (as on Wikipedia's COBS page)."""
    assert cobs_encode(data) == encoded
    assert cobs_decode(encoded) == data


def test_cobs_round_trip_random():
    rng = random.Random(1)
    for _ in range(300):
        n = rng.choice([0, 1, 2, 253, 254, 255, 508, 509, rng.randrange(5000)])
        data = bytes(rng.choice([0, 0, 1, 255, rng.randrange(256)]) for _ in range(n))
        enc = cobs_encode(data)
        assert 0 not in enc
        assert len(enc) <= len(data) + len(data) // 254 + 1
        assert cobs_decode(enc) == data


@pytest.mark.parametrize("bad", [b"\x00", b"\x05\x11", b"\x03\x11\x00"])
def test_cobs_decode_refuses_invalid(bad):
    with pytest.raises(FrameError):
        cobs_decode(bad)


def _raw(ftype=1, seq=5, payload=b"", version=1, flags=0, length=None, crc=None):
    import zlib
    head = struct.pack("<BBHII", version, ftype, flags, seq, len(payload) if length is None else length) + payload
    c = zlib.crc32(head) if crc is None else crc
    return head + struct.pack("<I", c)


@pytest.mark.parametrize("raw", [
    b"",                                         # empty
    _raw()[:15],                                  # shorter than 16 bytes
    _raw(version=2),                              # unknown version
    _raw(flags=1),                                # reserved flags
    _raw(payload=b"abc", length=2),               # length disagrees with the size
    _raw(payload=b"abc", length=4),
    _raw(payload=b"x" * 10, crc=0),               # bad CRC
    _raw(payload=b"x" * (MAX_PAYLOAD + 1)),        # length over MAX_PAYLOAD
], ids=["empty", "short", "version", "flags", "length-short", "length-long", "crc", "too-long"])
def test_drop_rules(raw):
    assert decode_frame(cobs_encode(raw)) is None
    dec = FrameDecoder()
    assert dec.feed(cobs_encode(raw) + b"\x00" + encode_frame(2, 9, b"after")) == [Frame(2, 9, b"after")]
    assert (dec.frames, dec.dropped) == (1, 1)


def test_invalid_cobs_dropped_and_unknown_type_kept():
    assert decode_frame(b"\x09\x01\x01") is None
    f = decode_frame(encode_frame(0x42, 3, b"?")[:-1])
    assert f == Frame(0x42, 3, b"?") and f.name() == "0x42"
    assert Frame(FrameType.ACK, 0).name() == "ACK"


def test_encode_refuses_what_cannot_go_on_the_line():
    with pytest.raises(FrameError, match="MAX_PAYLOAD"):
        encode_frame(FrameType.OK, 1, bytes(MAX_PAYLOAD + 1))
    with pytest.raises(FrameError):
        encode_frame(FrameType.OK, 1 << 32)
    with pytest.raises(FrameError):
        encode_frame(256, 1)
    big = encode_frame(FrameType.PUT_DATA, 0xFFFFFFFF, bytes(MAX_PAYLOAD))  # the largest frame: all zeros
    assert len(big) - 1 <= MAX_ENCODED
    assert decode_frame(big[:-1]) == Frame(FrameType.PUT_DATA, 0xFFFFFFFF, bytes(MAX_PAYLOAD))


def test_stream_decoder_any_chunking_and_resync():
    rng = random.Random(7)
    frames = [Frame(rng.choice(list(FrameType)), rng.randrange(1 << 32), rng.randbytes(rng.randrange(0, 300)))
              for _ in range(40)]
    # garbage before the first delimiter is one dropped frame; a sender starts with a 0x00 so that it is not its own
    stream = b"garbage\x01\x02\x00" + b"".join(encode_frame(f.type, f.seq, f.payload) for f in frames)
    for _ in range(20):
        dec = FrameDecoder()
        got: list[Frame] = []
        i = 0
        while i < len(stream):
            n = rng.randrange(1, 500)
            got += dec.feed(stream[i:i + n])
            i += n
        assert got == frames
        assert dec.frames == 40 and dec.dropped == 1 and dec.bytes_in == len(stream)


def test_stream_decoder_corruption_loses_only_the_hit_frame():
    a, b, c = (encode_frame(FrameType.OK, s, b"payload %d" % s) for s in (1, 2, 3))
    hit = bytearray(b)
    hit[5] ^= 0x40
    dec = FrameDecoder()
    assert [f.seq for f in dec.feed(a + bytes(hit) + c)] == [1, 3]
    assert dec.dropped == 1
    # idle delimiters are not frames
    assert dec.feed(b"\x00\x00\x00") == [] and dec.dropped == 1


def test_stream_decoder_bounds_an_endless_frame():
    dec = FrameDecoder()
    for _ in range(100):
        assert dec.feed(b"\x55" * 1000) == []
        assert dec.pending <= MAX_ENCODED
    assert dec.dropped == 1
    # the discarded bytes run to the next delimiter; the frame after it decodes
    assert dec.feed(b"\x55\x00" + encode_frame(1, 1)) == [Frame(1, 1, b"")]
    assert dec.dropped == 1 and dec.frames == 1


def test_kv_payloads():
    p = encode_kv({"name": "model.dtm", "size": 123, "have": True})
    assert p == b"name=model.dtm\nsize=123\nhave=1\n"
    assert parse_kv(p) == {"name": "model.dtm", "size": "123", "have": "1"}
    assert parse_kv_pairs(encode_kv([("file", "a"), ("file", "b=c")])) == [("file", "a"), ("file", "b=c")]
    assert parse_kv(b"") == {} and parse_kv(b"a=1") == {"a": "1"} and parse_kv(b"a=\n\n") == {"a": ""}
    assert parse_kv("message=héllo ✓\n".encode()) == {"message": "héllo ✓"}
    for bad in [{"Name": "x"}, {"a-b": "x"}, {"": "x"}, {"a": "x\ny"}, {"a": "x\0"}, {"a": "x" * MAX_PAYLOAD}]:
        with pytest.raises(FrameError):
            encode_kv(bad)
    for bad in [b"novalue\n", b"A=1\n", b"=1\n", b"a=\xff\n", b"a=1\0\n"]:
        with pytest.raises(FrameError):
            parse_kv(bad)


def test_binary_payloads():
    p = put_data_payload(0x0102030405060708, b"abc")
    assert p == bytes.fromhex("0807060504030201") + b"abc"
    assert parse_put_data(p) == (0x0102030405060708, b"abc")
    assert ack_payload(4088) == struct.pack("<Q", 4088) and parse_ack(ack_payload(4088)) == 4088
    assert len(put_data_payload(0, bytes(MAX_CHUNK))) == MAX_PAYLOAD
    with pytest.raises(FrameError):
        put_data_payload(0, bytes(MAX_CHUNK + 1))
    with pytest.raises(FrameError):
        parse_put_data(b"1234567")
    with pytest.raises(FrameError):
        parse_ack(b"123456789")
