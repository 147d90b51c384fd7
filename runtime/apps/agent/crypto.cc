// crypto.h: thin wrappers over libsodium.
#include "apps/agent/crypto.h"

#include "sodium/crypto_hash_sha256.h"
#include "sodium/crypto_sign_ed25519.h"

namespace dtorch {
namespace agent {

static_assert(sizeof(crypto_hash_sha256_state) <= 128, "Sha256::state_ is too small for crypto_hash_sha256_state");
static_assert(alignof(crypto_hash_sha256_state) <= 16, "Sha256::state_ is not aligned enough");

namespace {
crypto_hash_sha256_state* st(unsigned char* p) { return reinterpret_cast<crypto_hash_sha256_state*>(p); }
}  // namespace

Sha256::Sha256() { crypto_hash_sha256_init(st(state_)); }

void Sha256::update(const void* data, size_t n) {
  crypto_hash_sha256_update(st(state_), static_cast<const unsigned char*>(data), n);
}

std::string Sha256::hex_digest() {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(st(state_), out);
  return to_hex(out, sizeof(out));
}

std::string sha256_hex(const void* data, size_t n) {
  Sha256 h;
  h.update(data, n);
  return h.hex_digest();
}

bool ed25519_verify(const uint8_t* sig, const uint8_t* msg, size_t n, const uint8_t* public_key) {
  static_assert(crypto_sign_ed25519_BYTES == kEd25519SignatureBytes, "signature size");
  static_assert(crypto_sign_ed25519_PUBLICKEYBYTES == kEd25519PublicKeyBytes, "public key size");
  return crypto_sign_ed25519_verify_detached(sig, msg, n, public_key) == 0;
}

std::string to_hex(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[p[i] >> 4];
    s[2 * i + 1] = kDigits[p[i] & 15];
  }
  return s;
}

bool from_hex(const std::string& hex, uint8_t* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace agent
}  // namespace dtorch
