// The agent's cryptography, all of it libsodium's (never hand-written): SHA-256 of blobs and Ed25519 signature
// verification of bundles. libsodium is compiled from the pinned source tree dtorch/edge/third_party.py fetches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dtorch {
namespace agent {

// An incremental SHA-256 (crypto_hash_sha256_*).
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex_digest();  // once

 private:
  alignas(16) unsigned char state_[128];  // a crypto_hash_sha256_state (its size is checked in crypto.cc)
};

std::string sha256_hex(const void* data, size_t n);

constexpr size_t kEd25519PublicKeyBytes = 32, kEd25519SignatureBytes = 64;
// crypto_sign_ed25519_verify_detached: true when sig is a valid signature of msg by public_key.
bool ed25519_verify(const uint8_t* sig, const uint8_t* msg, size_t n, const uint8_t* public_key);

// Lowercase hex of n bytes; and its inverse (false for a wrong length or a non-hex digit).
std::string to_hex(const uint8_t* p, size_t n);
bool from_hex(const std::string& hex, uint8_t* out, size_t n);

}  // namespace agent
}  // namespace dtorch
