#include "common/atomic_file.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace tide {

Status writeFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::internal("cannot write " + temporary);
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec)
    return Status::internal("cannot rename " + temporary + " to " + path + ": " + ec.message());
  return Status();
}

}  // namespace tide
