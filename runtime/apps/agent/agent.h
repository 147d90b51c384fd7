// The agent's command dispatch (PROTOCOL.md sections 2-4): bytes from the line in, response frames out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/agent/frame.h"
#include "apps/agent/store.h"
#include "dtorch/runtime.h"

namespace dtorch {
namespace agent {

// What the binary was built as (the generated build_info header of a board build; placeholders in a development
// build).
struct Identity {
  std::string board, arch, runtime_hash, opset_hash;
};
Identity this_build();
extern const char kAgentVersion[];

// A bundle.txt (PROTOCOL.md section 5), parsed.
struct BundleFile {
  std::string name, sha256;
  uint64_t bytes = 0;
};
struct Bundle {
  std::string board, runtime_hash, opset_hash, runtime_version, model;
  std::vector<BundleFile> files;
  std::string signature;     // 128 hex digits, or empty
  size_t signed_bytes = 0;   // the bytes before the signature line
  const BundleFile* model_file() const;
};
// Why `text` is not a bundle, or "" (with *out filled).
std::string parse_bundle(const std::string& text, Bundle* out);
// The checks of a name from the line or a bundle: "" when fine, else why not.
std::string name_problem(const std::string& name);

class Agent {
 public:
  // store: opened. public_key: 32 bytes when bundles must be signed, else empty.
  Agent(Store* store, std::vector<uint8_t> public_key);

  // Loads the active bundle's model (logs a failure; RUN then says why).
  void start();
  // Bytes read from the line: every complete frame is served, its response appended to *out.
  void feed(const uint8_t* data, size_t n, std::vector<uint8_t>* out);
  // A new connection: a frame cut off by the last one is dropped; everything else is kept.
  void new_connection();

  struct Reply {
    uint8_t type = kOk;
    std::vector<uint8_t> payload;
  };

 private:
  void serve(const Frame& f, std::vector<uint8_t>* out);
  Reply dispatch(const Frame& f);  // handle(), with the answer's size checked
  Reply handle(const Frame& f);
  Reply hello();
  Reply put_begin(const std::string& payload);
  Reply put_data(const Frame& f);
  Reply verify(const std::string& payload);
  Reply activate(const std::string& payload);
  Reply run(const std::string& payload);
  Reply selftest();
  Reply status();
  Reply rollback();
  Reply log_events(const std::string& payload);
  Reply get(const std::string& payload);

  Status load_session(const std::string& bundle, std::unique_ptr<Session>* out, std::string* model_name);
  std::string model_name_of(const std::string& bundle) const;

  Store* store_;
  std::vector<uint8_t> public_key_;
  Identity id_;
  Decoder decoder_;
  double started_ = 0;

  // The transfer in progress (PROTOCOL.md section 3).
  bool receiving_ = false;
  std::string recv_sha_, recv_name_;
  uint64_t recv_size_ = 0, received_ = 0;

  // The active model, loaded.
  std::unique_ptr<Session> session_;
  std::string session_error_;
  std::vector<std::string> last_outputs_;  // the blobs the last RUN wrote (deleted by the next one)

  // The last control request (type, seq, payload) and the frame that answered it.
  bool have_last_ = false;
  uint8_t last_type_ = 0;
  uint32_t last_seq_ = 0;
  std::vector<uint8_t> last_payload_, last_response_;
};

// A Store::open callback: the blobs a bundle needs (itself excluded), read from its bundle.txt blob.
std::vector<std::string> bundle_blobs(const Store& store, const std::string& bundle);

}  // namespace agent
}  // namespace dtorch
