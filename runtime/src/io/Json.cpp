//===- Json.cpp - Writing JSON values -------------------------------------===//

#include "io/Json.h"

#include "base/Utf8.h"

#include <cmath>
#include <cstdio>

namespace trainc {

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += char(c);
    } else {
      // A well-formed sequence is kept; any other byte (a path is any
      // bytes) becomes U+FFFD, so that the text stays JSON.
      size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      if (i + length <= s.size() &&
          isUtf8(std::string_view(s).substr(i, length))) {
        out.append(s, i, length);
        i += length - 1;
      } else {
        out += "\\ufffd";
      }
    }
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

} // namespace trainc
