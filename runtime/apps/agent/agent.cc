// The agent's command dispatch (agent.h, PROTOCOL.md sections 2-5).
#include "apps/agent/agent.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "apps/agent/crypto.h"
#include "apps/npy.h"
#include "apps/self_test.h"

// The build's identity: a board build (dtorch-edge build, scons board=...) generates dtorch_build_info.h with the
// runtime and op-set hashes of the bundle's dtorch-run; a development build (plain `scons dtorch-agent`) reports
// board "host" and the runtime and op-set hash "dev", so it activates only bundles whose bundle.txt says the same.
#if defined(DTORCH_HAVE_BUILD_INFO)
#include "dtorch_build_info.h"
#else
#define DTORCH_BUILD_BOARD "host"
#define DTORCH_BUILD_RUNTIME_HASH "dev"
#define DTORCH_BUILD_OPSET_HASH "dev"
#endif

namespace dtorch {
namespace agent {

const char kAgentVersion[] = "0.1.0";

namespace {

constexpr size_t kMaxBundleBytes = 64 << 10;  // a bundle.txt: a few lines per file
constexpr int kMaxBench = 100000;
constexpr int kMaxLogEvents = 1000;

const char* arch_name() {
#if defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "armv7";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__x86_64__)
  return "x86_64";
#elif defined(__hexagon__)
  return "hexagon";
#else
  return "unknown";
#endif
}

// key=value lines (PROTOCOL.md section 2). A repeated key keeps its last value.
struct Fields {
  std::vector<std::pair<std::string, std::string>> kv;
  const std::string* get(const char* key) const {
    const std::string* v = nullptr;
    for (const auto& p : kv)
      if (p.first == key) v = &p.second;
    return v;
  }
};

bool key_ok(const std::string& k) {
  if (k.empty()) return false;
  for (const char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// Why the payload is not key=value lines, or "".
std::string parse_fields(const std::string& text, Fields* out) {
  if (text.find('\0') != std::string::npos) return "the payload holds a NUL byte";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string::npos) e = text.size();
    const std::string line = text.substr(pos, e - pos);
    pos = e + 1;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || !key_ok(line.substr(0, eq)))
      return "the payload line '" + line.substr(0, 40) + "' is not key=value with a key of [a-z0-9_]";
    out->kv.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return "";
}

bool parse_u64(const std::string& s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v > max) return false;
  *out = v;
  return true;
}

std::string short_id(const std::string& sha) { return sha.empty() ? "(none)" : sha.substr(0, 16); }

std::string fmt_ms(double ms) {
  char buf[32];
  dtorch::format(buf, sizeof(buf), "%.3f", ms);
  return buf;
}

}  // namespace

Identity this_build() {
  return Identity{DTORCH_BUILD_BOARD, arch_name(), DTORCH_BUILD_RUNTIME_HASH, DTORCH_BUILD_OPSET_HASH};
}

std::string name_problem(const std::string& name) {
  if (name.empty()) return "the name is empty";
  if (name.size() > 128) return "the name is over 128 bytes";
  if (name.find('/') != std::string::npos) return "the name holds '/'";
  if (name.find("..") != std::string::npos) return "the name holds '..'";
  for (const char ch : name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == 0) return "the name holds a NUL byte";
    if (c < 0x20 || c == 0x7F) return "the name holds a control character";
  }
  return "";
}

const BundleFile* Bundle::model_file() const {
  for (const BundleFile& f : files)
    if (f.name == model) return &f;
  return nullptr;
}

std::string parse_bundle(const std::string& text, Bundle* out) {
  *out = Bundle();
  size_t pos = 0;
  bool first = true;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string::npos) return "its last line has no newline";
    const std::string line = text.substr(pos, e - pos);
    const size_t start = pos;
    pos = e + 1;
    std::vector<std::string> w;
    size_t p = 0;
    while (p <= line.size()) {
      size_t q = line.find(' ', p);
      if (q == std::string::npos) q = line.size();
      w.push_back(line.substr(p, q - p));
      p = q + 1;
    }
    if (first) {
      if (line != "dtorch-bundle 1") return "its first line is not 'dtorch-bundle 1'";
      first = false;
      continue;
    }
    if (!out->signature.empty()) return "a line follows the signature";
    const std::string& k = w[0];
    if (k == "file") {
      BundleFile f;
      if (w.size() != 4 || !is_sha256(w[2]) || !parse_u64(w[3], kMaxBlobBytes, &f.bytes))
        return "the line '" + line.substr(0, 60) + "' is not 'file <name> <sha256> <bytes>'";
      const std::string why = name_problem(w[1]);
      if (!why.empty()) return "file name '" + w[1].substr(0, 60) + "': " + why;
      f.name = w[1];
      f.sha256 = w[2];
      for (const BundleFile& g : out->files)
        if (g.name == f.name) return "it names the file '" + f.name + "' twice";
      out->files.push_back(f);
    } else if (k == "signature") {
      if (w.size() != 2 || w[1].size() != 2 * kEd25519SignatureBytes) return "its signature line is malformed";
      out->signature = w[1];
      out->signed_bytes = start;
    } else if (k == "board" || k == "runtime_hash" || k == "opset_hash" || k == "runtime_version" || k == "model") {
      if (w.size() != 2) return "the line '" + line.substr(0, 60) + "' is not '" + k + " <value>'";
      std::string& v = k == "board" ? out->board : k == "runtime_hash" ? out->runtime_hash
                       : k == "opset_hash" ? out->opset_hash : k == "runtime_version" ? out->runtime_version
                                                                          : out->model;
      v = w[1];
    }  // other keys: ignored (a later version may add some)
  }
  if (first) return "it is empty";
  if (out->board.empty() || out->runtime_hash.empty() || out->opset_hash.empty() || out->model.empty())
    return "it lacks one of board, runtime_hash, opset_hash, model";
  if (out->model_file() == nullptr) return "its model '" + out->model + "' is not among its files";
  return "";
}

std::vector<std::string> bundle_blobs(const Store& store, const std::string& bundle) {
  std::vector<std::string> out;
  std::string text;
  Bundle b;
  if (!store.read_blob(bundle, kMaxBundleBytes, &text).ok() || !parse_bundle(text, &b).empty()) return out;
  for (const BundleFile& f : b.files) out.push_back(f.sha256);
  return out;
}

Agent::Agent(Store* store, std::vector<uint8_t> public_key)
    : store_(store), public_key_(std::move(public_key)), id_(this_build()), started_(monotonic_seconds()) {}

void Agent::start() {
  const std::string& active = store_->state().active;
  if (active.empty()) return;
  std::string name;
  const Status st = load_session(active, &session_, &name);
  if (!st.ok()) {
    session_error_ = st.message();
    store_->log("error", "the active bundle " + short_id(active) + " does not load: " + st.message());
  }
}

void Agent::new_connection() {
  // A frame the last connection cut off ends at the first delimiter of this one; feeding one drops it now.
  Frame f;
  decoder_.push(0, &f);
}

void Agent::feed(const uint8_t* data, size_t n, std::vector<uint8_t>* out) {
  Frame f;
  for (size_t i = 0; i < n; ++i)
    if (decoder_.push(data[i], &f) == Decoder::kFrame) serve(f, out);
}

void Agent::serve(const Frame& f, std::vector<uint8_t>* out) {
  if (f.type == kPutData) {  // windowed: never cached (a repeated chunk is acknowledged again, writing nothing)
    const Reply r = dispatch(f);
    encode_frame(r.type, f.seq, r.payload.data(), r.payload.size(), out);
    return;
  }
  if (have_last_ && f.type == last_type_ && f.seq == last_seq_ && f.length == last_payload_.size() &&
      std::equal(f.payload, f.payload + f.length, last_payload_.begin())) {
    out->insert(out->end(), last_response_.begin(), last_response_.end());  // a retransmission: answered, not redone
    return;
  }
  // Copy the request first: dispatch may not, but the decoder's buffer is only valid until the next push.
  last_type_ = f.type;
  last_seq_ = f.seq;
  last_payload_.assign(f.payload, f.payload + f.length);
  have_last_ = false;
  const Reply r = dispatch(f);
  last_response_.clear();
  encode_frame(r.type, f.seq, r.payload.data(), r.payload.size(), &last_response_);
  have_last_ = true;
  out->insert(out->end(), last_response_.begin(), last_response_.end());
}

namespace {

struct Builder {
  std::string text;
  Builder& add(const char* k, const std::string& v) {
    text += k;
    text += '=';
    text += v;
    text += '\n';
    return *this;
  }
  Builder& add(const char* k, uint64_t v) { return add(k, std::to_string(v)); }
};

}  // namespace

namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// An ERROR reply. The message is one line (newlines become spaces) and short enough for one payload.
Agent::Reply error_reply(const char* code, const std::string& message) {
  std::string m = message.substr(0, 3000);
  std::replace(m.begin(), m.end(), '\n', ' ');
  std::replace(m.begin(), m.end(), '\0', ' ');
  Agent::Reply r;
  r.type = kError;
  r.payload = bytes_of(Builder().add("code", code).add("message", m).text);
  return r;
}

}  // namespace

Agent::Reply Agent::dispatch(const Frame& f) {
  Reply r = handle(f);
  if (r.payload.size() > kMaxPayload)  // e.g. a RUN of a model with very many outputs: never a truncated answer
    return error_reply("too_large", "the answer (" + std::to_string(r.payload.size()) + " bytes) is over MAX_PAYLOAD (" +
                                        std::to_string(kMaxPayload) + ")");
  return r;
}

Agent::Reply Agent::handle(const Frame& f) {
  const std::string text(reinterpret_cast<const char*>(f.payload), f.type == kPutData ? 0 : f.length);
  switch (f.type) {
    case kHello: return hello();
    case kPutBegin: return put_begin(text);
    case kPutData: return put_data(f);
    case kVerify: return verify(text);
    case kActivate: return activate(text);
    case kRun: return run(text);
    case kSelfTest: return selftest();
    case kStatus: return status();
    case kRollback: return rollback();
    case kLog: return log_events(text);
    case kGet: return get(text);
    default: {
      char buf[64];
      dtorch::format(buf, sizeof(buf), "unknown request type 0x%02x", f.type);
      return error_reply("unknown_command", std::string(buf) + "; this agent speaks protocol 1 (types 0x01-0x0b)");
    }
  }
}

namespace {

Agent::Reply ok_reply(const std::string& text) {
  Agent::Reply r;
  r.type = kOk;
  r.payload = bytes_of(text);
  return r;
}

}  // namespace

// The payload's fields; a malformed payload returns ERROR bad_request from the calling handler.
#define PARSE_FIELDS(text, fields)                                              \
  Fields fields;                                                                \
  do {                                                                          \
    const std::string why_ = parse_fields(text, &fields);                       \
    if (!why_.empty()) return error_reply("bad_request", why_);                 \
  } while (0)

std::string Agent::model_name_of(const std::string& bundle) const {
  if (bundle.empty()) return "";
  std::string text;
  Bundle b;
  if (!store_->read_blob(bundle, kMaxBundleBytes, &text).ok() || !parse_bundle(text, &b).empty()) return "";
  return b.model;
}

Agent::Reply Agent::hello() {
  const StoreState& s = store_->state();
  Builder b;
  b.add("protocol", "1").add("agent_version", kAgentVersion).add("runtime_version", kRuntimeVersion)
      .add("runtime_hash", id_.runtime_hash).add("opset_hash", id_.opset_hash).add("board", id_.board)
      .add("arch", id_.arch).add("max_payload", kMaxPayload).add("free_bytes", store_->free_bytes())
      .add("store_bytes", store_->used_bytes()).add("active", s.active).add("previous", s.previous)
      .add("active_model", model_name_of(s.active)).add("previous_model", model_name_of(s.previous))
      .add("signing", public_key_.empty() ? "off" : "required");
  return ok_reply(b.text);
}

Agent::Reply Agent::put_begin(const std::string& text) {
  PARSE_FIELDS(text, f);
  const std::string *name = f.get("name"), *sha = f.get("sha256"), *size_s = f.get("size");
  if (name == nullptr || sha == nullptr || size_s == nullptr)
    return error_reply("bad_request", "PUT_BEGIN needs name, sha256 and size");
  const std::string why = name_problem(*name);
  if (!why.empty()) return error_reply("bad_name", "refused the name '" + name->substr(0, 60) + "': " + why);
  if (!is_sha256(*sha)) return error_reply("bad_request", "sha256 must be 64 lowercase hex digits");
  uint64_t size = 0;
  if (!parse_u64(*size_s, UINT64_MAX, &size)) return error_reply("bad_request", "size must be a decimal byte count");
  if (size > kMaxBlobBytes)
    return error_reply("too_large", "'" + *name + "' is " + std::to_string(size) + " bytes, over this agent's cap of " +
                                        std::to_string(kMaxBlobBytes) + " bytes on one blob");
  const int64_t have = store_->blob_size(*sha);
  if (have >= 0) {
    if (static_cast<uint64_t>(have) != size)
      return error_reply("bad_request", "the store holds " + sha->substr(0, 16) + " with " + std::to_string(have) +
                                            " bytes, not " + std::to_string(size));
    return ok_reply(Builder().add("have", "1").add("offset", size).text);
  }
  // The space check counts the bytes of an interrupted transfer of the same blob as already there.
  const int64_t part = std::min<int64_t>(store_->part_size(*sha), static_cast<int64_t>(size));
  const uint64_t need = size - static_cast<uint64_t>(part), free_b = store_->free_bytes();
  if (need > free_b)
    return error_reply("no_space", "'" + *name + "' needs " + std::to_string(need) + " more bytes but the store has " +
                                       std::to_string(free_b) + " free; roll back or free space on the device");
  uint64_t offset = 0;
  const Status st = store_->begin_part(*sha, size, &offset);
  if (!st.ok()) {
    receiving_ = false;
    return error_reply("io_error", st.message());
  }
  receiving_ = true;
  recv_sha_ = *sha;
  recv_name_ = *name;
  recv_size_ = size;
  received_ = offset;
  store_->log("receive", *name + " " + sha->substr(0, 16) + " " + std::to_string(size) + " bytes, from offset " +
                             std::to_string(offset));
  return ok_reply(Builder().add("have", "0").add("offset", offset).text);
}

Agent::Reply Agent::put_data(const Frame& f) {
  if (f.length < 8) return error_reply("bad_request", "PUT_DATA needs an 8-byte offset before its data");
  if (!receiving_) return error_reply("not_receiving", "PUT_DATA without a PUT_BEGIN; send PUT_BEGIN first");
  const uint64_t offset = load_u64(f.payload);
  const size_t n = f.length - 8;
  if (offset == received_ && n > 0) {
    if (n > recv_size_ - received_)
      return error_reply("bad_request", "PUT_DATA past the declared size of " + recv_name_ + " (" +
                                            std::to_string(recv_size_) + " bytes)");
    const Status st = store_->append_part(recv_sha_, f.payload + 8, n);
    if (!st.ok()) return error_reply("io_error", st.message());
    received_ += n;
    if (last_type_ == kPutBegin) have_last_ = false;  // its cached offset is out of date now
  }
  Reply r;
  r.type = kAck;
  r.payload.resize(8);
  store_u64(r.payload.data(), received_);
  return r;
}

Agent::Reply Agent::verify(const std::string& text) {
  PARSE_FIELDS(text, f);
  const std::string* sha = f.get("sha256");
  if (sha == nullptr || !is_sha256(*sha)) return error_reply("bad_request", "VERIFY needs sha256 (64 lowercase hex)");
  if (!receiving_ || *sha != recv_sha_) {
    const int64_t have = store_->blob_size(*sha);
    if (have >= 0) return ok_reply(Builder().add("sha256", *sha).add("size", static_cast<uint64_t>(have)).text);
    return error_reply("not_receiving", "VERIFY of " + sha->substr(0, 16) + ", which is not being received; send "
                                        "PUT_BEGIN and its data first");
  }
  if (received_ < recv_size_)
    return error_reply("bad_request", "VERIFY before all bytes of " + recv_name_ + " arrived: the agent holds " +
                                          std::to_string(received_) + " of " + std::to_string(recv_size_) +
                                          "; send the rest (PUT_BEGIN returns the offset)");
  receiving_ = false;
  bool ok = false;
  std::string got;
  const Status st = store_->finish_part(*sha, &ok, &got);
  if (!st.ok()) return error_reply("io_error", st.message());
  if (!ok) {
    store_->log("verify_failed", recv_name_ + ": received bytes hash to " + got.substr(0, 16) + ", expected " +
                                     sha->substr(0, 16));
    return error_reply("verify_failed", "the received bytes of " + recv_name_ + " hash to " + got + ", not " + *sha +
                                            "; the partial file was deleted, send it again");
  }
  store_->log("verified", recv_name_ + " " + sha->substr(0, 16) + " " + std::to_string(recv_size_) + " bytes");
  return ok_reply(Builder().add("sha256", *sha).add("size", recv_size_).text);
}

Status Agent::load_session(const std::string& bundle, std::unique_ptr<Session>* out, std::string* model_name) {
  std::string text;
  Bundle b;
  Status st = store_->read_blob(bundle, kMaxBundleBytes, &text);
  if (!st.ok()) return st;
  const std::string why = parse_bundle(text, &b);
  if (!why.empty()) return Status(StatusCode::kInvalidModel, "bundle " + short_id(bundle) + " is not valid: " + why);
  *model_name = b.model;
  SessionOptions options;
  return Session::Create(store_->blob_path(b.model_file()->sha256), options, out);
}

Agent::Reply Agent::activate(const std::string& text) {
  PARSE_FIELDS(text, f);
  const std::string* id = f.get("bundle");
  if (id == nullptr || !is_sha256(*id))
    return error_reply("bad_request", "ACTIVATE needs bundle (the sha256 of a bundle.txt blob)");
  std::string bundle_text;
  if (!store_->has_blob(*id))
    return error_reply("not_found", "bundle " + short_id(*id) + " is not in the store; send its bundle.txt first");
  Status st = store_->read_blob(*id, kMaxBundleBytes, &bundle_text);
  if (!st.ok()) return error_reply(st.code() == StatusCode::kIOError ? "io_error" : "bad_request", st.message());
  Bundle b;
  const std::string why = parse_bundle(bundle_text, &b);
  if (!why.empty()) return error_reply("bad_request", "blob " + short_id(*id) + " is not a bundle.txt: " + why);
  if (b.board != id_.board)
    return error_reply("mismatch", "the bundle is for board " + b.board + " but this agent runs on " + id_.board +
                                       "; build the bundle with --board " + id_.board);
  if (b.runtime_hash != id_.runtime_hash || b.opset_hash != id_.opset_hash)
    return error_reply("mismatch", "the bundle is for runtime " + b.runtime_hash.substr(0, 16) + " / op set " +
                                       b.opset_hash.substr(0, 16) + " but this agent is runtime " +
                                       id_.runtime_hash.substr(0, 16) + " / op set " + id_.opset_hash.substr(0, 16) +
                                       "; build with the agent's op set, or put the new bundle's dtorch-agent on the "
                                       "board");
  if (!public_key_.empty()) {
    uint8_t sig[kEd25519SignatureBytes];
    if (b.signature.empty())
      return error_reply("signature", "this agent requires signed bundles and bundle " + short_id(*id) +
                                          " has no signature; build it with dtorch-edge build --sign KEY");
    if (!from_hex(b.signature, sig, sizeof(sig)) ||
        !ed25519_verify(sig, reinterpret_cast<const uint8_t*>(bundle_text.data()), b.signed_bytes,
                        public_key_.data()))
      return error_reply("signature", "the signature of bundle " + short_id(*id) +
                                          " does not verify with this agent's public key; sign it with the key the "
                                          "agent was provisioned with");
  }
  for (const BundleFile& bf : b.files) {
    const int64_t have = store_->blob_size(bf.sha256);
    if (have < 0)
      return error_reply("not_found", "the bundle's file " + bf.name + " (" + bf.sha256.substr(0, 16) +
                                          ") is not in the store; send it first");
    if (static_cast<uint64_t>(have) != bf.bytes)
      return error_reply("bad_request", "the bundle says " + bf.name + " has " + std::to_string(bf.bytes) +
                                            " bytes but the store's blob has " + std::to_string(have));
  }
  std::unique_ptr<Session> session;
  std::string model;
  st = load_session(*id, &session, &model);
  if (!st.ok()) {
    store_->log("activate_failed", "bundle " + short_id(*id) + ": " + st.message());
    return error_reply("bad_model", "the bundle's model " + b.model + " does not load: " + st.message());
  }
  const StoreState old = store_->state();
  if (old.active != *id) {
    StoreState next;
    next.active = *id;
    next.previous = old.active.empty() ? old.previous : old.active;
    st = store_->set_state(next);
    if (!st.ok()) return error_reply("io_error", st.message());
    store_->log("activate", "bundle " + short_id(*id) + " (" + b.model + ") active, previous " +
                                short_id(next.previous));
    const size_t removed = store_->collect();
    if (removed > 0) store_->log("collect", std::to_string(removed) + " blob(s) no bundle in STATE needs removed");
  }
  session_ = std::move(session);
  session_error_.clear();
  const StoreState& s = store_->state();
  return ok_reply(Builder().add("active", s.active).add("previous", s.previous).add("active_model", b.model).text);
}

Agent::Reply Agent::rollback() {
  const StoreState old = store_->state();
  if (old.previous.empty() || old.previous == old.active)
    return error_reply("no_previous", "there is no previous bundle to roll back to");
  std::unique_ptr<Session> session;
  std::string model;
  Status st = load_session(old.previous, &session, &model);
  if (!st.ok()) return error_reply("bad_model", std::string("the previous bundle's model does not load: ") + st.message());
  StoreState next;
  next.active = old.previous;
  next.previous = old.active;
  st = store_->set_state(next);
  if (!st.ok()) return error_reply("io_error", st.message());
  store_->log("rollback", "bundle " + short_id(next.active) + " (" + model + ") active again, previous " +
                              short_id(next.previous));
  session_ = std::move(session);
  session_error_.clear();
  return ok_reply(Builder().add("active", next.active).add("previous", next.previous).add("active_model", model).text);
}

Agent::Reply Agent::run(const std::string& text) {
  PARSE_FIELDS(text, f);
  if (session_ == nullptr)
    return error_reply("no_model", session_error_.empty() ? std::string("no active model; flash a bundle first")
                                                          : "the active model does not load: " + session_error_);
  uint64_t bench = 0;
  if (const std::string* b = f.get("bench"))
    if (!parse_u64(*b, kMaxBench, &bench))
      return error_reply("bad_request", "bench must be a number of runs in 0.." + std::to_string(kMaxBench));
  const size_t n_in = session_->inputs().size();
  std::vector<npy::Array> arrays;
  std::vector<TensorView> views;
  for (size_t k = 0;; ++k) {
    const std::string key = "input" + std::to_string(k);
    const std::string* sha = f.get(key.c_str());
    if (sha == nullptr) break;
    if (k >= n_in)
      return error_reply("run_failed", "the model has " + std::to_string(n_in) + " input(s) but more were given");
    if (!is_sha256(*sha)) return error_reply("bad_request", key + " must be a sha256");
    if (!store_->has_blob(*sha))
      return error_reply("not_found", key + " " + sha->substr(0, 16) + " is not in the store; send it first");
    npy::Array a;
    const Status st = npy::load(store_->blob_path(*sha), &a);
    if (!st.ok()) return error_reply("run_failed", key + ": " + st.message());
    arrays.push_back(std::move(a));
  }
  if (arrays.size() != n_in)
    return error_reply("run_failed", "the model has " + std::to_string(n_in) + " input(s) but " +
                                         std::to_string(arrays.size()) + " were given (input0..)");
  for (const npy::Array& a : arrays) views.push_back(a.view());
  RunResult result;
  Status st = session_->Run(views.data(), views.size(), &result);
  if (!st.ok()) return error_reply("run_failed", st.message());
  Builder out;
  if (bench > 0) {
    std::vector<double> ms(static_cast<size_t>(bench));
    for (double& m : ms) {
      const double t0 = monotonic_seconds();
      st = session_->Run(views.data(), views.size(), &result);
      m = 1e3 * (monotonic_seconds() - t0);
      if (!st.ok()) return error_reply("run_failed", st.message());
    }
    std::make_heap(ms.begin(), ms.end());
    std::sort_heap(ms.begin(), ms.end());
    const size_t p50 = static_cast<size_t>(0.5 * static_cast<double>(ms.size() - 1) + 0.5);  // as dtorch-run --bench
    out.add("ms_min", fmt_ms(ms.front())).add("ms_p50", fmt_ms(ms[p50])).add("ms_max", fmt_ms(ms.back()));
  }
  // The last RUN's outputs are dropped now (unless a bundle or an input is the same blob).
  std::vector<std::string> keep;
  for (const std::string* b : {&store_->state().active, &store_->state().previous})
    if (!b->empty()) {
      keep.push_back(*b);
      for (const std::string& s : bundle_blobs(*store_, *b)) keep.push_back(s);
    }
  for (size_t k = 0; k < n_in; ++k) keep.push_back(*f.get(("input" + std::to_string(k)).c_str()));
  for (const std::string& old : last_outputs_)
    if (std::find(keep.begin(), keep.end(), old) == keep.end()) ::unlink(store_->blob_path(old).c_str());
  last_outputs_.clear();
  out.add("outputs", result.num_outputs());
  for (size_t k = 0; k < result.num_outputs(); ++k) {
    const std::string tmp = store_->tmp_dir() + "/run-output-" + std::to_string(k) + ".npy";
    st = npy::save(tmp, result.output(k));
    if (!st.ok()) return error_reply("io_error", st.message());
    std::string sha;
    uint64_t bytes = 0;
    st = store_->adopt_file(tmp, &sha, &bytes);
    if (!st.ok()) return error_reply("io_error", st.message());
    last_outputs_.push_back(sha);
    out.add(("output" + std::to_string(k)).c_str(), sha + " " + std::to_string(bytes));
  }
  return ok_reply(out.text);
}

Agent::Reply Agent::selftest() {
  if (session_ == nullptr)
    return error_reply("no_model", session_error_.empty() ? std::string("no active model; flash a bundle first")
                                                          : "the active model does not load: " + session_error_);
  apps::TestVector tv;
  Status st = apps::load_test_vector(*session_, &tv);
  if (!st.ok()) return error_reply("run_failed", st.message());
  RunResult result;
  st = session_->Run(tv.views.data(), tv.views.size(), &result);
  if (!st.ok()) return error_reply("run_failed", st.message());
  const apps::SelfTestResult check = apps::check_test_vector(*session_, result, tv);
  char err[32];
  dtorch::format(err, sizeof(err), "%.6g", check.max_abs_error);
  store_->log("selftest", std::string(check.pass ? "pass" : "FAIL") + ", max abs error " + err +
                              (check.failure.empty() ? "" : "; " + check.failure));
  Builder b;
  b.add("pass", check.pass ? "1" : "0").add("max_abs_error", err);
  if (!check.failure.empty()) b.add("message", check.failure);
  return ok_reply(b.text);
}

Agent::Reply Agent::status() {
  const StoreState& s = store_->state();
  Builder b;
  b.add("state", receiving_ ? "receiving" : "idle").add("receiving", receiving_ ? recv_sha_ : "")
      .add("received", receiving_ ? received_ : 0).add("active", s.active).add("previous", s.previous)
      .add("rx_frames", decoder_.frames()).add("rx_dropped", decoder_.dropped())
      .add("uptime_s", static_cast<uint64_t>(monotonic_seconds() - started_));
  return ok_reply(b.text);
}

Agent::Reply Agent::log_events(const std::string& text) {
  PARSE_FIELDS(text, f);
  uint64_t last = 50;
  if (const std::string* v = f.get("last"))
    if (!parse_u64(*v, kMaxLogEvents, &last))
      return error_reply("bad_request", "last must be a number of events in 0.." + std::to_string(kMaxLogEvents));
  const std::vector<std::string> events = store_->last_events(static_cast<size_t>(last));
  // As many of the newest events as fit in one payload, oldest first.
  size_t budget = kMaxPayload - 32, first = events.size();
  while (first > 0) {
    const size_t cost = events[first - 1].size() + 16;
    if (cost > budget) break;
    budget -= cost;
    --first;
  }
  Builder b;
  b.add("events", events.size() - first);
  for (size_t i = first; i < events.size(); ++i) b.add(("event" + std::to_string(i - first)).c_str(), events[i]);
  return ok_reply(b.text);
}

Agent::Reply Agent::get(const std::string& text) {
  PARSE_FIELDS(text, f);
  const std::string *sha = f.get("sha256"), *off_s = f.get("offset"), *len_s = f.get("length");
  uint64_t offset = 0, length = 0;
  if (sha == nullptr || !is_sha256(*sha) || off_s == nullptr || len_s == nullptr ||
      !parse_u64(*off_s, UINT64_MAX, &offset) || !parse_u64(*len_s, UINT64_MAX, &length))
    return error_reply("bad_request", "GET needs sha256, offset and length");
  if (length > kMaxPayload)
    return error_reply("too_large", "GET length " + std::to_string(length) + " is over MAX_PAYLOAD (" +
                                        std::to_string(kMaxPayload) + ")");
  const int64_t size = store_->blob_size(*sha);
  if (size < 0) return error_reply("not_found", "blob " + sha->substr(0, 16) + " is not in the store");
  if (offset > static_cast<uint64_t>(size))
    return error_reply("bad_request", "GET offset " + std::to_string(offset) + " is past the blob's " +
                                          std::to_string(size) + " bytes");
  Reply r;
  const Status st = store_->read_blob_range(*sha, offset, static_cast<size_t>(length), &r.payload);
  if (!st.ok()) return error_reply("io_error", st.message());
  return r;
}

}  // namespace agent
}  // namespace dtorch
