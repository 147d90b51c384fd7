// The agent's store (store.h, PROTOCOL.md section 5).
#include "apps/agent/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "apps/agent/crypto.h"

namespace dtorch {
namespace agent {
namespace {

constexpr size_t kMaxEventText = 200;        // characters of one event's text
constexpr int64_t kMaxLogBytes = 256 << 10;  // the log is cut to its newer half beyond this

Status io(const std::string& msg) { return Status(StatusCode::kIOError, msg); }

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

Status fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io(sys_error("cannot open folder", dir));
  const bool ok = ::fsync(fd) == 0 || errno == EINVAL;  // some file systems cannot sync a folder
  const int e = errno;
  ::close(fd);
  errno = e;
  return ok ? Status::Ok() : io(sys_error("cannot fsync folder", dir));
}

Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) {
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();
    return io("'" + path + "' exists and is not a folder; remove it or choose another --store");
  }
  return io(sys_error("cannot create folder", path));
}

// The regular files and links of a folder (names only; "." and ".." left out).
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

int64_t lsize(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<int64_t>(st.st_size);
}

// Writes data to path atomically: path.tmp, fsync, rename, fsync of the folder.
Status write_file_atomic(const std::string& dir, const std::string& name, const std::string& data) {
  const std::string path = dir + "/" + name, tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return io(sys_error("cannot create", tmp));
  const bool ok = write_all(fd, reinterpret_cast<const uint8_t*>(data.data()), data.size()) && ::fsync(fd) == 0;
  const int e = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    errno = e;
    return io(sys_error("cannot write", tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const Status st = io(sys_error("cannot rename into", path));
    ::unlink(tmp.c_str());
    return st;
  }
  return fsync_dir(dir);
}

// Hashes the file at path (a regular file, opened without following links); -1 bytes when it cannot be read.
std::string hash_file(const std::string& path, int64_t* bytes) {
  *bytes = -1;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  Sha256 h;
  uint8_t buf[16384];
  int64_t total = 0;
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      ::close(fd);
      return "";
    }
    if (r == 0) break;
    h.update(buf, static_cast<size_t>(r));
    total += r;
  }
  ::close(fd);
  *bytes = total;
  return h.hex_digest();
}

}  // namespace

std::string sys_error(const char* what, const std::string& path) {
  return std::string(what) + " '" + path + "': " + std::strerror(errno);
}

bool is_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Store::~Store() {
  close_part();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Store::open(const std::string& dir, uint64_t max_bytes,
                   std::vector<std::string> (*needed_by)(const Store&, const std::string& bundle)) {
  dir_ = dir;
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  max_bytes_ = max_bytes;
  DTORCH_RETURN_IF_ERROR(make_dir(dir_));
  // One agent per store: a lock on the folder itself (no lock file), released when the process ends however it ends.
  lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ < 0) return io(sys_error("cannot open folder", dir_));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return io(errno == EWOULDBLOCK ? "another dtorch-agent is serving the store '" + dir_ + "'; stop it or choose another --store"
                                   : sys_error("cannot lock", dir_));
  DTORCH_RETURN_IF_ERROR(make_dir(dir_ + "/blobs"));
  DTORCH_RETURN_IF_ERROR(make_dir(dir_ + "/incoming"));

  // Transfers in progress and temporary files: an install killed before its VERIFY or ACTIVATE.
  size_t parts = 0, temps = 0;
  for (const std::string& name : entries(dir_ + "/incoming"))
    if (::unlink((dir_ + "/incoming/" + name).c_str()) == 0) ++parts;
  for (const std::string& name : entries(dir_ + "/blobs"))
    if (!is_sha256(name) && ::unlink((dir_ + "/blobs/" + name).c_str()) == 0) ++temps;
  if (::unlink((dir_ + "/STATE.tmp").c_str()) == 0) ++temps;
  if (::unlink((dir_ + "/log.tmp").c_str()) == 0) ++temps;

  std::string text;
  {
    FILE* f = std::fopen((dir_ + "/STATE").c_str(), "rb");
    if (f != nullptr) {
      char buf[512];
      const size_t n = std::fread(buf, 1, sizeof(buf), f);
      std::fclose(f);
      text.assign(buf, n);
    }
  }
  state_ = StoreState();
  bool state_ok = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string::npos) e = text.size();
    const std::string line = text.substr(pos, e - pos);
    pos = e + 1;
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if ((key != "active" && key != "previous") || (!value.empty() && !is_sha256(value))) {
      state_ok = false;
      continue;
    }
    (key == "active" ? state_.active : state_.previous) = value;
  }
  if (!state_ok) log("recover", "STATE has lines this agent does not read; kept the bundles it names");

  needed_by_ = needed_by;
  const size_t removed = collect();
  std::string found = "store " + dir_ + ": active " + (state_.active.empty() ? "(none)" : state_.active.substr(0, 16)) +
                      ", previous " + (state_.previous.empty() ? "(none)" : state_.previous.substr(0, 16));
  if (parts || temps || removed)
    found += "; removed " + std::to_string(parts) + " partial transfer(s), " + std::to_string(temps) +
             " temporary file(s), " + std::to_string(removed) + " blob(s) no bundle needs";
  log("start", found);
  return Status::Ok();
}

// Keeps what the bundles in STATE need and deletes the rest (blobs of an install that never became active, inputs
// and outputs of earlier runs, the bundle that dropped out of STATE).
size_t Store::collect() {
  std::vector<std::string> keep;
  for (const std::string* b : {&state_.active, &state_.previous}) {
    if (b->empty()) continue;
    keep.push_back(*b);
    for (const std::string& s : needed_by_(*this, *b)) keep.push_back(s);
  }
  size_t removed = 0;
  for (const std::string& name : entries(dir_ + "/blobs"))
    if (std::find(keep.begin(), keep.end(), name) == keep.end() &&
        ::unlink((dir_ + "/blobs/" + name).c_str()) == 0)
      ++removed;
  return removed;
}

int64_t Store::blob_size(const std::string& sha) const {
  if (!is_sha256(sha)) return -1;
  return lsize(blob_path(sha));
}

Status Store::read_blob(const std::string& sha, size_t max, std::string* out) const {
  const int64_t n = blob_size(sha);
  if (n < 0) return Status(StatusCode::kInvalidArgument, "blob " + sha + " is not in the store");
  if (static_cast<uint64_t>(n) > max)
    return Status(StatusCode::kInvalidArgument, "blob " + sha.substr(0, 16) + " is larger than " +
                                                    std::to_string(max) + " bytes");
  std::vector<uint8_t> bytes;
  DTORCH_RETURN_IF_ERROR(read_blob_range(sha, 0, static_cast<size_t>(n), &bytes));
  out->assign(bytes.begin(), bytes.end());
  return Status::Ok();
}

Status Store::read_blob_range(const std::string& sha, uint64_t offset, size_t n, std::vector<uint8_t>* out) const {
  out->clear();
  if (!is_sha256(sha)) return Status(StatusCode::kInvalidArgument, "not a sha256");
  const std::string path = blob_path(sha);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return io(sys_error("cannot open", path));
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out->data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const Status st = io(sys_error("cannot read", path));
      ::close(fd);
      return st;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  out->resize(got);
  return Status::Ok();
}

uint64_t Store::used_bytes() const {
  uint64_t total = 0;
  for (const char* sub : {"/blobs/", "/incoming/"})
    for (const std::string& name : entries(dir_ + sub)) {
      const int64_t n = lsize(dir_ + sub + name);
      if (n > 0) total += static_cast<uint64_t>(n);
    }
  return total;
}

uint64_t Store::free_bytes() const {
  uint64_t fs_free = UINT64_MAX;
  struct statvfs v;
  if (::statvfs(dir_.c_str(), &v) == 0) fs_free = static_cast<uint64_t>(v.f_bavail) * static_cast<uint64_t>(v.f_frsize);
  if (max_bytes_ > 0) {
    const uint64_t used = used_bytes();
    fs_free = std::min(fs_free, used >= max_bytes_ ? 0 : max_bytes_ - used);
  }
  return fs_free;
}

int64_t Store::part_size(const std::string& sha) const {
  if (!is_sha256(sha)) return 0;
  const int64_t n = lsize(tmp_dir() + "/" + sha + ".part");
  return n < 0 ? 0 : n;
}

Status Store::begin_part(const std::string& sha, uint64_t size, uint64_t* have) {
  close_part();
  if (!is_sha256(sha)) return Status(StatusCode::kInvalidArgument, "not a sha256");
  const std::string path = tmp_dir() + "/" + sha + ".part";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return io(sys_error("cannot open", path));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io("'" + path + "' is not a regular file");
  }
  uint64_t n = static_cast<uint64_t>(st.st_size);
  if (n > size) {  // not this transfer's bytes: start again
    if (::ftruncate(fd, 0) != 0) {
      const Status s = io(sys_error("cannot truncate", path));
      ::close(fd);
      return s;
    }
    n = 0;
  }
  if (::lseek(fd, static_cast<off_t>(n), SEEK_SET) < 0) {
    const Status s = io(sys_error("cannot seek in", path));
    ::close(fd);
    return s;
  }
  part_fd_ = fd;
  part_sha_ = sha;
  part_len_ = n;
  *have = n;
  return Status::Ok();
}

Status Store::append_part(const std::string& sha, const uint8_t* data, size_t n) {
  if (part_fd_ < 0 || sha != part_sha_) return Status(StatusCode::kInvalidArgument, "no transfer of " + sha);
  if (!write_all(part_fd_, data, n)) {
    const Status s = io(sys_error("cannot write", tmp_dir() + "/" + sha + ".part"));
    // Undo what was written of this chunk, so the part file holds exactly the acknowledged bytes.
    if (::ftruncate(part_fd_, static_cast<off_t>(part_len_)) != 0 ||
        ::lseek(part_fd_, static_cast<off_t>(part_len_), SEEK_SET) < 0)
      close_part();
    return s;
  }
  part_len_ += n;
  return Status::Ok();
}

void Store::close_part() {
  if (part_fd_ >= 0) ::close(part_fd_);
  part_fd_ = -1;
  part_sha_.clear();
}

Status Store::finish_part(const std::string& sha, bool* hashed_ok, std::string* got) {
  *hashed_ok = false;
  const std::string path = tmp_dir() + "/" + sha + ".part";
  if (part_fd_ >= 0 && sha == part_sha_ && ::fsync(part_fd_) != 0) {
    const Status s = io(sys_error("cannot fsync", path));
    close_part();
    return s;
  }
  close_part();
  int64_t bytes = 0;
  *got = hash_file(path, &bytes);
  if (bytes < 0) return io(sys_error("cannot read", path));
  if (*got != sha) {
    ::unlink(path.c_str());
    return Status::Ok();
  }
  if (::rename(path.c_str(), blob_path(sha).c_str()) != 0) return io(sys_error("cannot rename into", blob_path(sha)));
  DTORCH_RETURN_IF_ERROR(fsync_dir(dir_ + "/blobs"));
  *hashed_ok = true;
  return Status::Ok();
}

Status Store::adopt_file(const std::string& tmp_path, std::string* sha, uint64_t* bytes) {
  int64_t n = 0;
  *sha = hash_file(tmp_path, &n);
  if (n < 0) {
    const Status s = io(sys_error("cannot read", tmp_path));
    ::unlink(tmp_path.c_str());
    return s;
  }
  *bytes = static_cast<uint64_t>(n);
  if (::rename(tmp_path.c_str(), blob_path(*sha).c_str()) != 0) {
    const Status s = io(sys_error("cannot rename into", blob_path(*sha)));
    ::unlink(tmp_path.c_str());
    return s;
  }
  return Status::Ok();
}

Status Store::set_state(const StoreState& s) {
  DTORCH_RETURN_IF_ERROR(write_file_atomic(dir_, "STATE", "active " + s.active + "\nprevious " + s.previous + "\n"));
  state_ = s;
  return Status::Ok();
}

void Store::log(const char* kind, const std::string& text) {
  std::string line = std::to_string(static_cast<long long>(std::time(nullptr))) + " " + kind + " ";
  for (size_t i = 0; i < text.size() && i < kMaxEventText; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    line += c < 0x20 || c == 0x7F ? ' ' : text[i];
  }
  line += "\n";
  const std::string path = dir_ + "/log";
  if (lsize(path) > kMaxLogBytes) {  // keep the newer half, replaced atomically
    std::vector<std::string> keep = last_events(static_cast<size_t>(-1));
    std::string rest;
    for (size_t i = keep.size() / 2; i < keep.size(); ++i) rest += keep[i] + "\n";
    if (!write_file_atomic(dir_, "log", rest).ok()) return;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return;  // the log is informational: a full disk must not stop an install
  write_all(fd, reinterpret_cast<const uint8_t*>(line.data()), line.size());
  ::close(fd);
}

std::vector<std::string> Store::last_events(size_t n) const {
  std::vector<std::string> lines;
  FILE* f = std::fopen((dir_ + "/log").c_str(), "rb");
  if (f == nullptr) return lines;
  std::string text;
  char buf[8192];
  size_t r;
  while ((r = std::fread(buf, 1, sizeof(buf), f)) > 0 && text.size() < static_cast<size_t>(2 * kMaxLogBytes))
    text.append(buf, r);
  std::fclose(f);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string::npos) break;  // a line cut by a crash is left out
    if (e > pos) lines.push_back(text.substr(pos, e - pos));
    pos = e + 1;
  }
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

}  // namespace agent
}  // namespace dtorch
