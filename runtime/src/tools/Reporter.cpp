//===- Reporter.cpp - What trainc-run shows of a training run -------------===//

#include "tools/Reporter.h"

#include <cstdio>

namespace trainc {

std::string duration(double seconds) {
  char buf[32];
  long s = long(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  return buf;
}

} // namespace trainc
