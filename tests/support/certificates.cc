#include "tests/support/certificates.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace tide::testing_support {
namespace {

void run(const std::string& command) {
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  if (status != 0) ADD_FAILURE() << "failed (" << status << "): " << command;
}

}  // namespace

TestCertificates::TestCertificates(const std::filesystem::path& dir) : dir_(dir) {
  const auto q = [this](const std::string& name) { return "'" + file(name) + "'"; };
  run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tide-test-ca -keyout " +
      q("ca.key") + " -out " + q("ca.pem"));
  run("openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout " + q("server.key") +
      " -out " + q("server.csr"));
  std::ofstream(dir_ / "san.ext") << "subjectAltName=IP:127.0.0.1\n";
  run("openssl x509 -req -days 1 -in " + q("server.csr") + " -CA " + q("ca.pem") + " -CAkey " +
      q("ca.key") + " -CAcreateserial -extfile " + q("san.ext") + " -out " + q("server.pem"));
  run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca -keyout " +
      q("other.key") + " -out " + q("other.pem"));
}

}  // namespace tide::testing_support
