// The frame layer (frame.h, PROTOCOL.md section 1).
#include "apps/agent/frame.h"

#include <cstring>

namespace dtorch {
namespace agent {
namespace {

// Computed at compile time: a function-local static would need the C++ library's guard (__cxa_guard_acquire), whose
// archive member pulls the exception runtime into a board binary built without it.
struct CrcTable {
  uint32_t v[256];
  constexpr CrcTable() : v() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      v[i] = c;
    }
  }
};

constexpr CrcTable kCrcTable;

}  // namespace

uint32_t crc32(uint32_t crc, const uint8_t* data, size_t n) {
  const uint32_t* t = kCrcTable.v;
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = t[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return ~c;
}

void cobs_encode(const uint8_t* data, size_t n, std::vector<uint8_t>* out) {
  size_t code_at = out->size();
  out->push_back(0);  // the first block's code, filled in below
  uint8_t code = 1;
  for (size_t i = 0; i < n; ++i) {
    if (data[i] == 0) {
      (*out)[code_at] = code;
      code_at = out->size();
      out->push_back(0);
      code = 1;
      continue;
    }
    out->push_back(data[i]);
    if (++code == 0xFF) {  // a full block of 254 non-zero bytes: no zero follows it implicitly
      (*out)[code_at] = code;
      code_at = out->size();
      out->push_back(0);
      code = 1;
    }
  }
  (*out)[code_at] = code;
}

bool cobs_decode(const uint8_t* data, size_t n, uint8_t* out, size_t cap, size_t* out_n) {
  size_t i = 0, o = 0;
  while (i < n) {
    const uint8_t code = data[i++];
    if (code == 0) return false;
    const size_t run = code - 1u;
    if (run > n - i || o + run > cap) return false;
    for (size_t k = 0; k < run; ++k) {
      if (data[i + k] == 0) return false;
      out[o++] = data[i + k];
    }
    i += run;
    if (code != 0xFF && i < n) {  // an implicit zero between blocks (not after the last one)
      if (o >= cap) return false;
      out[o++] = 0;
    }
  }
  *out_n = o;
  return true;
}

void encode_frame(uint8_t type, uint32_t seq, const uint8_t* payload, size_t n, std::vector<uint8_t>* out) {
  uint8_t raw[kMaxFrame];
  if (n > kMaxPayload) n = kMaxPayload;  // callers never pass more; a frame is never longer than the cap
  raw[0] = kProtocolVersion;
  raw[1] = type;
  raw[2] = raw[3] = 0;
  store_u32(raw + 4, seq);
  store_u32(raw + 8, static_cast<uint32_t>(n));
  if (n > 0) std::memcpy(raw + kHeaderBytes, payload, n);
  store_u32(raw + kHeaderBytes + n, crc32(0, raw, kHeaderBytes + n));
  cobs_encode(raw, kHeaderBytes + n + kCrcBytes, out);
  out->push_back(0);
}

Decoder::Result Decoder::push(uint8_t byte, Frame* frame) {
  if (byte != 0) {
    if (overflow_) return kNone;
    if (n_ == sizeof(enc_)) {  // longer than any valid frame: discard up to the next delimiter
      overflow_ = true;
      n_ = 0;
      ++dropped_;
      return kDropped;
    }
    enc_[n_++] = byte;
    return kNone;
  }
  // A delimiter.
  const size_t n = n_;
  n_ = 0;
  if (overflow_) {
    overflow_ = false;
    return kNone;  // counted when the overflow began
  }
  if (n == 0) return kNone;  // back-to-back delimiters (a sender may flush the line with them)
  size_t m = 0;
  bool ok = cobs_decode(enc_, n, dec_, sizeof(dec_), &m) && m >= kMinFrame;
  if (ok) {
    const uint32_t length = load_u32(dec_ + 8);
    ok = dec_[0] == kProtocolVersion && dec_[2] == 0 && dec_[3] == 0 && length <= kMaxPayload &&
         m == kMinFrame + length && load_u32(dec_ + kHeaderBytes + length) == crc32(0, dec_, kHeaderBytes + length);
    if (ok) {
      frame->type = dec_[1];
      frame->seq = load_u32(dec_ + 4);
      frame->payload = dec_ + kHeaderBytes;
      frame->length = length;
      ++frames_;
      return kFrame;
    }
  }
  ++dropped_;
  return kDropped;
}

}  // namespace agent
}  // namespace dtorch
