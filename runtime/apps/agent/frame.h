// The frame layer of the dtorch agent protocol (PROTOCOL.md section 1): COBS byte stuffing with a 0x00 delimiter
// after each frame, a 12-byte header (version, type, flags, seq, length), the payload and a CRC-32 (zlib's).
//
// The decoder is a byte-at-a-time state machine with a fixed buffer: it never holds more than kMaxEncoded bytes of
// one frame, drops (and counts) whatever is not a valid frame, and resynchronizes at the next delimiter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtorch {
namespace agent {

constexpr uint8_t kProtocolVersion = 1;
constexpr size_t kMaxPayload = 4096;                         // MAX_PAYLOAD
constexpr size_t kHeaderBytes = 12, kCrcBytes = 4;
constexpr size_t kMinFrame = kHeaderBytes + kCrcBytes;        // 16: a frame with an empty payload
constexpr size_t kMaxFrame = kMinFrame + kMaxPayload;         // 4112 decoded bytes
constexpr size_t kMaxEncoded = 1 + 16 + kMaxPayload + 32;     // the most encoded bytes a receiver buffers

enum FrameType : uint8_t {
  kHello = 0x01, kPutBegin = 0x02, kPutData = 0x03, kVerify = 0x04, kActivate = 0x05, kRun = 0x06,
  kSelfTest = 0x07, kStatus = 0x08, kRollback = 0x09, kLog = 0x0A, kGet = 0x0B,
  kOk = 0x80, kError = 0x81, kAck = 0x82,
};

// CRC-32 (IEEE 802.3, reflected, init and final xor 0xFFFFFFFF): crc32(0, p, n) equals zlib's crc32(0, p, n), and
// crc32(crc32(0, a, n), b, m) that of the concatenation.
uint32_t crc32(uint32_t crc, const uint8_t* data, size_t n);

// COBS: the encoding of n bytes (no zero byte in it, at most n + n / 254 + 1 bytes) appended to *out.
void cobs_encode(const uint8_t* data, size_t n, std::vector<uint8_t>* out);
// Decodes n encoded bytes (no delimiter) into out (capacity cap); false for an invalid encoding or one that decodes
// to more than cap bytes.
bool cobs_decode(const uint8_t* data, size_t n, uint8_t* out, size_t cap, size_t* out_n);

// One frame on the line: the COBS encoding of header + payload + CRC, then 0x00, appended to *out. n must be at
// most kMaxPayload.
void encode_frame(uint8_t type, uint32_t seq, const uint8_t* payload, size_t n, std::vector<uint8_t>* out);

struct Frame {
  uint8_t type = 0;
  uint32_t seq = 0;
  const uint8_t* payload = nullptr;  // valid until the next Decoder::push
  size_t length = 0;
};

class Decoder {
 public:
  enum Result { kNone, kFrame, kDropped };
  // Feeds one byte. kFrame: *frame holds a valid frame; kDropped: a delimiter ended something that was not one
  // (or an overlong run was cut off); kNone: nothing complete yet.
  Result push(uint8_t byte, Frame* frame);
  uint64_t frames() const { return frames_; }
  uint64_t dropped() const { return dropped_; }

 private:
  uint8_t enc_[kMaxEncoded];
  uint8_t dec_[kMaxFrame];
  size_t n_ = 0;
  bool overflow_ = false;  // discarding up to the next delimiter
  uint64_t frames_ = 0, dropped_ = 0;
};

// Little-endian loads and stores.
inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
inline uint64_t load_u64(const uint8_t* p) { return uint64_t{load_u32(p)} | uint64_t{load_u32(p + 4)} << 32; }
inline void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void store_u64(uint8_t* p, uint64_t v) {
  store_u32(p, static_cast<uint32_t>(v));
  store_u32(p + 4, static_cast<uint32_t>(v >> 32));
}

}  // namespace agent
}  // namespace dtorch
