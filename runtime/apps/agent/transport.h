// The agent's byte streams: a serial device (termios raw 8N1), a TCP socket on a loopback address (one connection at
// a time; after a disconnect the agent accepts the next), or stdin/stdout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dtorch/status.h"

namespace dtorch {
namespace agent {

class Transport {
 public:
  enum Kind { kSerial, kListen, kStdio };
  Transport() = default;
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // --serial DEVICE --baud N: the device is opened by each connect().
  Status open_serial(const std::string& device, int baud);
  // --listen ADDR:PORT: binds and listens (a loopback address only); *bound is "ADDR:PORT" with the real port.
  Status open_listen(const std::string& addr_port, std::string* bound);
  void open_stdio();

  // Waits for the next connection: accept (listen), open the device again (serial, retrying every second while it
  // is absent), or once only (stdio). false: no further connection (stdio after its one, or a fatal error in *err).
  bool connect(std::string* err);
  // Reads what is there (blocks for at least one byte); 0 when the connection ended.
  size_t read(uint8_t* buf, size_t n);
  // Writes all bytes; false when the connection is gone.
  bool write(const uint8_t* data, size_t n);
  void disconnect();

 private:
  Kind kind_ = kStdio;
  std::string device_;
  int baud_ = 115200;
  int listen_fd_ = -1, in_fd_ = -1, out_fd_ = -1;
  bool stdio_used_ = false;
  bool serial_opened_ = false;
};

// "ADDR:PORT" split, with ADDR a loopback address (127.0.0.0/8, ::1 as [::1], or localhost); the error names what
// was given and why it is refused.
Status parse_loopback(const std::string& addr_port, std::string* addr, int* port, bool* ipv6);

}  // namespace agent
}  // namespace dtorch
