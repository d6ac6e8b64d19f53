#pragma once

// A throwaway certificate authority and a server certificate for 127.0.0.1 signed by it, made
// with the openssl command in a directory of the test's, for the TLS tests (tls.certFile,
// tls.keyFile, tls.caFile). Also a second CA that signed nothing of ours, for the refusals.

#include <filesystem>
#include <string>

namespace tide::testing_support {

class TestCertificates {
 public:
  // Writes ca.pem/ca.key, server.pem/server.key (CN and subjectAltName IP:127.0.0.1, signed by
  // ca.pem) and other.pem/other.key (another CA) into `dir`, which must exist. A test failure
  // (ADD_FAILURE) when openssl is missing or fails.
  explicit TestCertificates(const std::filesystem::path& dir);

  std::string caFile() const { return file("ca.pem"); }
  std::string certFile() const { return file("server.pem"); }
  std::string keyFile() const { return file("server.key"); }
  // A CA that signed nothing here: a client trusting only it refuses the server.
  std::string otherCaFile() const { return file("other.pem"); }
  std::string otherKeyFile() const { return file("other.key"); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace tide::testing_support
