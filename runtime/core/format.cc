// printf-style formatting for messages and reports, without the C library's printf.
//
// On a static board binary, musl's printf brings ~13 KB that a runtime never needs: positional arguments, wide
// characters and float conversion through 128-bit long double (soft float on aarch64 and riscv64). This is the
// subset the runtime and dtorch-run use, with C's semantics: flags - + space 0 #, width and precision (numbers or
// *), lengths hh h l ll z j t, conversions d i u o x X c s p % and f F e E g G. Floats are converted exactly (the
// double's full decimal expansion, rounded to nearest with ties to even), so the output matches glibc's.
#include "dtorch/format.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/carve.h"

namespace dtorch {
namespace {

// Appends to a bounded buffer; counts what would have been written (snprintf's return value).
struct Out {
  char* buf;
  size_t cap;
  size_t n = 0;
  void put(char c) {
    if (n + 1 < cap) buf[n] = c;
    ++n;
  }
  void put(const char* s, size_t len) {
    for (size_t i = 0; i < len; ++i) put(s[i]);
  }
  void fill(char c, int count) {
    for (int i = 0; i < count; ++i) put(c);
  }
};

struct Spec {
  bool left = false, plus = false, space = false, zero = false, alt = false;
  int width = 0;
  int prec = -1;
};

// A field: sign/prefix, then the digits, padded to the width (zeros go between the prefix and the digits).
void emit(Out& o, const Spec& sp, const char* prefix, const char* body, size_t body_len, bool zero_ok = true) {
  const size_t pl = std::strlen(prefix);
  const int pad = sp.width - static_cast<int>(pl + body_len);
  if (pad > 0 && !sp.left && !(sp.zero && zero_ok)) o.fill(' ', pad);
  o.put(prefix, pl);
  if (pad > 0 && !sp.left && sp.zero && zero_ok) o.fill('0', pad);
  o.put(body, body_len);
  if (pad > 0 && sp.left) o.fill(' ', pad);
}

const char* sign_of(const Spec& sp, bool negative) { return negative ? "-" : sp.plus ? "+" : sp.space ? " " : ""; }

void format_int(Out& o, Spec sp, unsigned long long v, bool negative, char conv) {
  const unsigned base = conv == 'o' ? 8 : (conv == 'x' || conv == 'X' || conv == 'p') ? 16 : 10;
  const char* digits = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[24];
  int len = 0;
  for (unsigned long long x = v; x != 0; x /= base) tmp[sizeof(tmp) - 1 - len++] = digits[x % base];
  char body[96];
  int prec = sp.prec < 0 ? 1 : sp.prec;
  if (prec > 64) prec = 64;
  int zeros = prec > len ? prec - len : 0;
  if (conv == 'o' && sp.alt && zeros == 0 && (len == 0 || tmp[sizeof(tmp) - len] != '0')) zeros = 1;
  int bl = 0;
  for (int i = 0; i < zeros; ++i) body[bl++] = '0';
  std::memcpy(body + bl, tmp + sizeof(tmp) - len, static_cast<size_t>(len));
  bl += len;
  const char* prefix = (conv == 'd' || conv == 'i') ? sign_of(sp, negative)
                       : (conv == 'p' || (sp.alt && v != 0 && conv == 'x')) ? "0x"
                       : (sp.alt && v != 0 && conv == 'X') ? "0X" : "";
  emit(o, sp, prefix, body, static_cast<size_t>(bl), sp.prec < 0);
}

// The exact decimal expansion of a finite double v > 0: its digits without leading zeros (at most 767: 2^-1074 has
// 751 significant digits, DBL_MAX 309), and the position of the decimal point: v = 0.d1 d2 d3 ... x 10^point. A
// double is m x 2^e exactly; for e >= 0 that is the integer m x 2^e, for e < 0 it is m x 5^-e / 10^-e, so either way
// the digits are those of an integer, computed in base 10^9 limbs.
constexpr int kMaxDigits = 780;

int exact_digits(double v, char* out, int* point) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  int be = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t m = bits & ((uint64_t{1} << 52) - 1);
  if (be == 0) be = 1; else m |= uint64_t{1} << 52;
  const int e2 = be - 1075;  // v = m x 2^e2
  uint32_t limb[90];         // little-endian, base 10^9
  int n = 0;
  for (; m != 0; m /= 1000000000u) limb[n++] = static_cast<uint32_t>(m % 1000000000u);
  // Multiply by 2^e2 (in steps of 2^29) or by 5^-e2 (steps of 5^13); each step's product fits 64 bits.
  for (int left = e2 > 0 ? e2 : -e2; left > 0;) {
    const int step = e2 > 0 ? (left < 29 ? left : 29) : (left < 13 ? left : 13);
    uint64_t mul = 1;
    for (int i = 0; i < step; ++i) mul *= e2 > 0 ? 2 : 5;
    uint64_t carry = 0;
    for (int i = 0; i < n; ++i) {
      const uint64_t x = limb[i] * mul + carry;
      limb[i] = static_cast<uint32_t>(x % 1000000000u);
      carry = x / 1000000000u;
    }
    while (carry != 0) {
      limb[n++] = static_cast<uint32_t>(carry % 1000000000u);
      carry /= 1000000000u;
    }
    left -= step;
  }
  int nd = 0;
  for (int i = n - 1; i >= 0; --i) {
    char nine[9];
    uint32_t x = limb[i];
    for (int k = 8; k >= 0; --k, x /= 10) nine[k] = static_cast<char>('0' + x % 10);
    int k = 0;
    if (i == n - 1)
      while (k < 8 && nine[k] == '0') ++k;
    for (; k < 9; ++k) out[nd++] = nine[k];
  }
  *point = nd - (e2 < 0 ? -e2 : 0);
  return nd;
}

// Rounds the digit string d (nd digits) to its first `keep` digits (keep may be <= 0 or >= nd), to nearest with
// ties to even, as glibc does in the default rounding mode. Returns the kept digit count after rounding; a carry out
// of the first digit ("999" -> "1000") writes "1" followed by zeros and sets *carried.
int round_digits(char* d, int nd, int keep, bool* carried) {
  *carried = false;
  if (keep >= nd) return nd;
  bool up = false;
  if (keep >= 0) {
    const char first = d[keep];
    bool rest = false;
    for (int i = keep + 1; i < nd && !rest; ++i) rest = d[i] != '0';
    const bool odd = keep > 0 && ((d[keep - 1] - '0') & 1);
    up = first > '5' || (first == '5' && (rest || odd));
  }
  if (keep <= 0) {  // nothing kept: either zero, or one unit of the first kept place
    if (up) {
      d[0] = '1';
      *carried = true;
      return 1;
    }
    return 0;
  }
  if (up) {
    int i = keep - 1;
    while (i >= 0 && d[i] == '9') d[i--] = '0';
    if (i >= 0) {
      ++d[i];
    } else {
      d[0] = '1';
      for (int k = 1; k <= keep; ++k) d[k] = '0';
      *carried = true;
      return keep + 1;
    }
  }
  return keep;
}

void format_float(Out& o, Spec sp, double v, char conv) {
  const bool upper = conv == 'F' || conv == 'E' || conv == 'G';
  const bool negative = std::signbit(v);
  if (negative) v = -v;
  const char* sign = sign_of(sp, negative);
  if (v != v || v > 1.79769313486231570e308) {
    const char* t = v != v ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
    emit(o, sp, sign, t, 3, false);
    return;
  }
  int prec = sp.prec < 0 ? 6 : sp.prec;
  if (prec > 1000) prec = 1000;  // (C has no limit; a larger precision prints only 1000 decimals)
  char d[kMaxDigits + 2];
  int point = 1;
  int nd = v == 0.0 ? 0 : exact_digits(v, d, &point);
  if (nd == 0) point = 1;  // zero: "0", exponent 0
  char lc = static_cast<char>(conv | 0x20);
  bool strip = false;
  if (lc == 'g') {
    const int p = prec == 0 ? 1 : prec;
    char t[kMaxDigits + 2];
    std::memcpy(t, d, static_cast<size_t>(nd));
    bool carried;
    round_digits(t, nd, p, &carried);
    const int x = nd == 0 ? 0 : point - 1 + (carried ? 1 : 0);  // the exponent %e would print
    if (p > x && x >= -4) {
      lc = 'f';
      prec = p - 1 - x;
    } else {
      lc = 'e';
      prec = p - 1;
    }
    strip = !sp.alt;
  }
  char body[kMaxDigits + 1040];
  int bl = 0;
  bool carried = false;
  if (lc == 'e') {
    int kept = nd == 0 ? 0 : round_digits(d, nd, prec + 1, &carried);
    const int x = nd == 0 ? 0 : point - 1 + (carried ? 1 : 0);
    body[bl++] = kept > 0 ? d[0] : '0';
    if (prec > 0 || sp.alt) body[bl++] = '.';
    for (int i = 1; i <= prec; ++i) body[bl++] = i < kept ? d[i] : '0';
    if (strip && prec > 0) {
      while (body[bl - 1] == '0') --bl;
      if (body[bl - 1] == '.') --bl;
    }
    body[bl++] = upper ? 'E' : 'e';
    body[bl++] = x < 0 ? '-' : '+';
    const int ax = x < 0 ? -x : x;
    if (ax >= 100) body[bl++] = static_cast<char>('0' + ax / 100);
    body[bl++] = static_cast<char>('0' + ax / 10 % 10);
    body[bl++] = static_cast<char>('0' + ax % 10);
  } else {  // 'f': keep the digits down to 10^-prec
    const int kept = nd == 0 ? 0 : round_digits(d, nd, point + prec, &carried);
    const int pt = carried ? point + 1 : point;  // digits before the decimal point (may be <= 0)
    auto digit = [&](int i) { return i >= 0 && i < kept ? d[i] : '0'; };
    if (pt <= 0) {
      body[bl++] = '0';
    } else {
      for (int i = 0; i < pt; ++i) body[bl++] = digit(i);
    }
    if (prec > 0 || sp.alt) body[bl++] = '.';
    for (int i = 0; i < prec; ++i) body[bl++] = digit(pt + i);
    if (strip && prec > 0) {
      while (body[bl - 1] == '0') --bl;
      if (body[bl - 1] == '.') --bl;
    }
  }
  emit(o, sp, sign, body, static_cast<size_t>(bl));
}

}  // namespace

int vformat(char* buf, size_t cap, const char* fmt, va_list ap) {
  Out o{buf, cap};
  for (const char* p = fmt; *p != '\0'; ++p) {
    if (*p != '%') {
      o.put(*p);
      continue;
    }
    Spec sp;
    for (++p;; ++p) {
      if (*p == '-') sp.left = true;
      else if (*p == '+') sp.plus = true;
      else if (*p == ' ') sp.space = true;
      else if (*p == '0') sp.zero = true;
      else if (*p == '#') sp.alt = true;
      else break;
    }
    if (*p == '*') {
      sp.width = va_arg(ap, int);
      if (sp.width < 0) {
        sp.left = true;
        sp.width = -sp.width;
      }
      ++p;
    } else {
      while (*p >= '0' && *p <= '9') sp.width = sp.width * 10 + (*p++ - '0');
    }
    if (*p == '.') {
      ++p;
      sp.prec = 0;
      if (*p == '*') {
        sp.prec = va_arg(ap, int);
        ++p;
      } else {
        while (*p >= '0' && *p <= '9') sp.prec = sp.prec * 10 + (*p++ - '0');
      }
    }
    int len = 0;  // 0 int, 1 long, 2 long long, 3 size_t, 4 intmax_t, 5 ptrdiff_t, -1 short, -2 char
    for (;; ++p) {
      if (*p == 'l') len = len == 1 ? 2 : 1;
      else if (*p == 'h') len = len == -1 ? -2 : -1;
      else if (*p == 'z') len = 3;
      else if (*p == 'j') len = 4;
      else if (*p == 't') len = 5;
      else if (*p == 'L') len = 0;
      else break;
    }
    const char conv = *p;
    switch (conv) {
      case 'd':
      case 'i': {
        long long v;
        switch (len) {
          case 1: v = va_arg(ap, long); break;
          case 2: v = va_arg(ap, long long); break;
          case 3: v = static_cast<long long>(va_arg(ap, size_t)); break;
          case 4: v = static_cast<long long>(va_arg(ap, intmax_t)); break;
          case 5: v = static_cast<long long>(va_arg(ap, ptrdiff_t)); break;
          case -1: v = static_cast<short>(va_arg(ap, int)); break;
          case -2: v = static_cast<signed char>(va_arg(ap, int)); break;
          default: v = va_arg(ap, int); break;
        }
        const bool neg = v < 0;
        format_int(o, sp, neg ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v), neg,
                   conv);
        break;
      }
      case 'u':
      case 'o':
      case 'x':
      case 'X': {
        unsigned long long v;
        switch (len) {
          case 1: v = va_arg(ap, unsigned long); break;
          case 2: v = va_arg(ap, unsigned long long); break;
          case 3: v = va_arg(ap, size_t); break;
          case 4: v = static_cast<unsigned long long>(va_arg(ap, uintmax_t)); break;
          case 5: v = static_cast<unsigned long long>(va_arg(ap, ptrdiff_t)); break;
          case -1: v = static_cast<unsigned short>(va_arg(ap, unsigned)); break;
          case -2: v = static_cast<unsigned char>(va_arg(ap, unsigned)); break;
          default: v = va_arg(ap, unsigned); break;
        }
        format_int(o, sp, v, false, conv);
        break;
      }
      case 'p': {
        sp.alt = true;
        format_int(o, sp, reinterpret_cast<uintptr_t>(va_arg(ap, void*)), false, 'p');
        break;
      }
      case 'c': {
        const char c = static_cast<char>(va_arg(ap, int));
        emit(o, sp, "", &c, 1, false);
        break;
      }
      case 's': {
        const char* s = va_arg(ap, const char*);
        if (s == nullptr) s = "(null)";
        size_t n = 0;
        while (s[n] != '\0' && (sp.prec < 0 || n < static_cast<size_t>(sp.prec))) ++n;
        emit(o, sp, "", s, n, false);
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        format_float(o, sp, va_arg(ap, double), conv);
        break;
      case '%':
        o.put('%');
        break;
      case '\0':
        --p;  // a lone '%' at the end
        break;
      default:  // an unknown conversion is copied as written
        o.put('%');
        o.put(conv);
        break;
    }
  }
  if (cap > 0) o.buf[o.n < cap ? o.n : cap - 1] = '\0';
  return static_cast<int>(o.n);
}

int format(char* buf, size_t cap, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vformat(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}

namespace {
void vappend(Text* t, const char* fmt, va_list ap) {
  const size_t used = std::strlen(t->buf);
  const int n = vformat(t->buf + used, Text::kBytes - used, fmt, ap);
  if (n > 0 && used + static_cast<size_t>(n) >= Text::kBytes) mark_cut(t->buf, Text::kBytes);
}
}  // namespace

Text text(const char* fmt, ...) {
  Text t;
  va_list ap;
  va_start(ap, fmt);
  vappend(&t, fmt, ap);
  va_end(ap);
  return t;
}

void append(Text* t, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vappend(t, fmt, ap);
  va_end(ap);
}

}  // namespace dtorch
