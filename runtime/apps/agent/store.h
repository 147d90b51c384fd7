// The agent's store (PROTOCOL.md section 5): DIR/blobs/<sha256> (complete, verified blobs), DIR/incoming/<sha256>.part
// (transfers in progress), DIR/STATE (the active and previous bundle) and DIR/log (one event per line).
//
// Every path the store touches is DIR/<fixed folder>/<64 lowercase hex> (or a fixed name): nothing from the line
// becomes a path without is_sha256(). Renames are followed by an fsync of the folder, so a completed step survives
// a power cut; a process killed at any moment leaves STATE naming a complete bundle (or none).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtorch/status.h"

namespace dtorch {
namespace agent {

constexpr uint64_t kMaxBlobBytes = uint64_t{1} << 30;  // the cap on one blob (too_large)

// 64 lowercase hex digits.
bool is_sha256(const std::string& s);

struct StoreState {
  std::string active, previous;  // bundle ids (sha256) or empty
};

class Store {
 public:
  Store() = default;
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Opens (creating its folders), locks (one agent per store) and recovers the store at dir: deletes incoming/ and temporary files, reads STATE,
  // deletes the blobs that no bundle in STATE needs (needed_by(bundle) lists a bundle's blobs). max_bytes > 0 caps
  // the bytes the store may hold (besides the file system's free space). Each finding is logged.
  Status open(const std::string& dir, uint64_t max_bytes,
              std::vector<std::string> (*needed_by)(const Store&, const std::string& bundle));

  const std::string& dir() const { return dir_; }
  std::string blob_path(const std::string& sha) const { return dir_ + "/blobs/" + sha; }
  // -1 when absent.
  int64_t blob_size(const std::string& sha) const;
  bool has_blob(const std::string& sha) const { return blob_size(sha) >= 0; }
  // Reads a whole blob of at most max bytes.
  Status read_blob(const std::string& sha, size_t max, std::string* out) const;
  // Reads up to n bytes at offset.
  Status read_blob_range(const std::string& sha, uint64_t offset, size_t n, std::vector<uint8_t>* out) const;

  // The bytes of the store's files (blobs and parts) and the bytes it may still take.
  uint64_t used_bytes() const;
  uint64_t free_bytes() const;

  // Transfers. begin_part opens (or resumes) incoming/<sha>.part, truncating one longer than size; *have = its
  // bytes. append_part writes at the end. finish_part fsyncs, hashes and, when the bytes hash to sha, renames the
  // part into blobs/ (fsyncing the folder); a part that does not is deleted (*hashed_ok false).
  // The bytes of incoming/<sha>.part (0 when there is none).
  int64_t part_size(const std::string& sha) const;
  Status begin_part(const std::string& sha, uint64_t size, uint64_t* have);
  Status append_part(const std::string& sha, const uint8_t* data, size_t n);
  Status finish_part(const std::string& sha, bool* hashed_ok, std::string* got);
  void close_part();

  // Moves a file the agent wrote (under tmp_dir()) into blobs/ under its sha256 (which it computes).
  Status adopt_file(const std::string& tmp_path, std::string* sha, uint64_t* bytes);
  std::string tmp_dir() const { return dir_ + "/incoming"; }

  const StoreState& state() const { return state_; }
  // STATE.tmp, fsync, rename over STATE, fsync of the folder.
  Status set_state(const StoreState& s);
  // Deletes the blobs no bundle in STATE needs (open does it at start; ACTIVATE after it changed STATE, so a
  // long-running agent's store holds two bundles, not every one it was sent). Returns how many.
  size_t collect();

  // One event "<unix seconds> <kind> <text>" (newlines become spaces; the text is capped), appended to DIR/log.
  void log(const char* kind, const std::string& text);
  // The last n events, oldest first.
  std::vector<std::string> last_events(size_t n) const;

 private:
  std::string dir_;
  uint64_t max_bytes_ = 0;
  std::vector<std::string> (*needed_by_)(const Store&, const std::string& bundle) = nullptr;
  StoreState state_;
  int part_fd_ = -1;
  int lock_fd_ = -1;  // the store folder, locked (flock) while this agent serves it
  std::string part_sha_;
  uint64_t part_len_ = 0;
};

// A system error as text: "what 'path': strerror(errno)".
std::string sys_error(const char* what, const std::string& path);

}  // namespace agent
}  // namespace dtorch
