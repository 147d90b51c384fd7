// The agent's byte streams (transport.h).
#include "apps/agent/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "apps/agent/store.h"
#include "dtorch/format.h"

namespace dtorch {
namespace agent {
namespace {

Status bad(const std::string& msg) { return Status(StatusCode::kInvalidArgument, msg); }

bool baud_constant(int baud, speed_t* out) {
  struct Rate {
    int baud;
    speed_t c;
  };
  static const Rate kRates[] = {{1200, B1200},       {2400, B2400},       {4800, B4800},     {9600, B9600},
                                {19200, B19200},     {38400, B38400},     {57600, B57600},   {115200, B115200},
                                {230400, B230400},   {460800, B460800},   {500000, B500000}, {576000, B576000},
                                {921600, B921600},   {1000000, B1000000}, {1500000, B1500000},
                                {2000000, B2000000}, {3000000, B3000000}, {4000000, B4000000}};
  for (const Rate& r : kRates)
    if (r.baud == baud) {
      *out = r.c;
      return true;
    }
  return false;
}

}  // namespace

Status parse_loopback(const std::string& addr_port, std::string* addr, int* port, bool* ipv6) {
  const size_t colon = addr_port.rfind(':');
  if (colon == std::string::npos || colon + 1 >= addr_port.size())
    return bad("--listen needs ADDRESS:PORT (e.g. 127.0.0.1:5555, port 0 for a free one), got '" + addr_port + "'");
  std::string host = addr_port.substr(0, colon);
  const std::string port_s = addr_port.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port_s.c_str(), &end, 10);
  if (*end != '\0' || p < 0 || p > 65535) return bad("--listen: '" + port_s + "' is not a port number (0..65535)");
  *port = static_cast<int>(p);
  *ipv6 = false;
  if (host == "localhost") host = "127.0.0.1";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr a6;
    if (inet_pton(AF_INET6, host.c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)) {
      *ipv6 = true;
      *addr = host;
      return Status::Ok();
    }
  } else {
    in_addr a4;
    if (inet_pton(AF_INET, host.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) {
      *addr = host;
      return Status::Ok();
    }
  }
  return bad("refusing to listen on '" + addr_port +
             "': the agent serves loopback addresses only (127.0.0.1, [::1]); reach a board over its serial line or "
             "an SSH tunnel to its loopback port");
}

Transport::~Transport() {
  disconnect();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Status Transport::open_serial(const std::string& device, int baud) {
  speed_t c;
  if (!baud_constant(baud, &c)) return bad("--baud " + std::to_string(baud) + " is not a rate this agent can set");
  kind_ = kSerial;
  device_ = device;
  baud_ = baud;
  return Status::Ok();
}

Status Transport::open_listen(const std::string& addr_port, std::string* bound) {
  std::string host;
  int port = 0;
  bool v6 = false;
  DTORCH_RETURN_IF_ERROR(parse_loopback(addr_port, &host, &port, &v6));
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status(StatusCode::kIOError, std::string("cannot create a socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage ss;
  std::memset(&ss, 0, sizeof(ss));
  socklen_t len;
  if (v6) {
    sockaddr_in6* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, host.c_str(), &a->sin6_addr);
    len = sizeof(*a);
  } else {
    sockaddr_in* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &a->sin_addr);
    len = sizeof(*a);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 1) != 0) {
    const std::string e = std::strerror(errno);
    ::close(fd);
    return Status(StatusCode::kIOError, "cannot listen on " + addr_port + ": " + e);
  }
  len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const int real = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  *bound = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(real);
  kind_ = kListen;
  listen_fd_ = fd;
  return Status::Ok();
}

void Transport::open_stdio() { kind_ = kStdio; }

bool Transport::connect(std::string* err) {
  disconnect();
  switch (kind_) {
    case kStdio:
      if (stdio_used_) return false;
      stdio_used_ = true;
      in_fd_ = 0;
      out_fd_ = 1;
      return true;
    case kListen:
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          const int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // acknowledgements go out at once
          in_fd_ = out_fd_ = fd;
          return true;
        }
        if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) {
          *err = std::string("accept failed: ") + std::strerror(errno);
          return false;
        }
      }
    case kSerial:
      // After a hang-up, a second before the device is opened again: a line that hangs up at once (a pty whose
      // other side is gone) must not make the agent spin.
      if (serial_opened_) ::sleep(1);
      serial_opened_ = true;
      for (bool said = false;; said = true) {
        // Opened without waiting for a carrier (O_NONBLOCK), then switched to blocking reads.
        const int fd = ::open(device_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0) {
          ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
          termios t;
          speed_t c = B115200;
          baud_constant(baud_, &c);
          if (::tcgetattr(fd, &t) == 0) {
            ::cfmakeraw(&t);  // 8 data bits, no parity, no echo, no line editing or translation
            t.c_cflag &= ~static_cast<tcflag_t>(CSTOPB | CRTSCTS | PARENB);  // 1 stop bit, no flow control
            t.c_cflag |= CLOCAL | CREAD | CS8;
            t.c_cc[VMIN] = 1;
            t.c_cc[VTIME] = 0;
            ::cfsetispeed(&t, c);
            ::cfsetospeed(&t, c);
            if (::tcsetattr(fd, TCSANOW, &t) != 0) {
              *err = sys_error("cannot set raw mode on", device_);
              ::close(fd);
              return false;
            }
            ::tcflush(fd, TCIFLUSH);
          }
          in_fd_ = out_fd_ = fd;
          return true;
        }
        if (errno != ENOENT && errno != ENXIO && errno != EIO && errno != EBUSY && errno != EINTR) {
          *err = sys_error("cannot open serial device", device_);
          return false;
        }
        if (!said) print_to(stderr, "dtorch-agent: waiting for %s to appear\n", device_.c_str());
        ::sleep(1);
      }
  }
  return false;
}

size_t Transport::read(uint8_t* buf, size_t n) {
  for (;;) {
    const ssize_t r = ::read(in_fd_, buf, n);
    if (r > 0) return static_cast<size_t>(r);
    if (r < 0 && errno == EINTR) continue;
    return 0;  // end of stream, hang-up (EIO on a tty), a reset connection
  }
}

bool Transport::write(const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(out_fd_, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void Transport::disconnect() {
  if (kind_ != kStdio && in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = out_fd_ = -1;
}

}  // namespace agent
}  // namespace dtorch
