//===- AtomicFile.cpp - Writing a file all at once or not at all ----------===//

#include "io/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace trainc {

Status writeFileAtomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary);
    if (!file)
      return notFound(temporary + ": cannot create");
    write(file);
    file.close();
    if (!file) {
      std::remove(temporary.c_str());
      return Status(StatusCode::kDataLoss, temporary + ": write failed");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    return Status(StatusCode::kDataLoss,
                  "cannot rename " + temporary + " to " + path + ": " + reason);
  }
  return okStatus();
}

} // namespace trainc
