// How credentials are derived, told apart and kept: the cluster secret file.

#include "rest/messages/credentials.h"

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config.h"
#include "tests/support/temp_dir.h"

namespace tide::rest {
namespace {

using ::testing::HasSubstr;

const std::string kSecret(64, 's');

TEST(CredentialsTest, EachTokenAllowsWhatItIsFor) {
  EXPECT_EQ(classifyRmToken(kSecret, kSecret), RmCredential::kAdmin);
  EXPECT_EQ(classifyRmToken(kSecret, clientTokenOf(kSecret)), RmCredential::kClient);
  EXPECT_EQ(classifyRmToken(kSecret, nodeCredentialOf(kSecret)), RmCredential::kNode);
  EXPECT_EQ(classifyRmToken(kSecret, ""), RmCredential::kNone);
  EXPECT_EQ(classifyRmToken(kSecret, kSecret + "x"), RmCredential::kNone);
  EXPECT_EQ(classifyRmToken(kSecret, clientTokenOf(std::string(64, 't'))), RmCredential::kNone);
  // Distinct, and none of them is the secret.
  EXPECT_NE(clientTokenOf(kSecret), nodeCredentialOf(kSecret));
  EXPECT_NE(controlTokenOf(kSecret), clientTokenOf(kSecret));
  EXPECT_EQ(clientTokenOf(kSecret).size(), 64u);
}

TEST(CredentialsTest, BearerTokenOfAHeader) {
  EXPECT_EQ(bearerTokenOf("Bearer abc"), "abc");
  EXPECT_EQ(bearerTokenOf("bearer  abc "), "abc");
  EXPECT_EQ(bearerTokenOf("Basic abc"), "");
  EXPECT_EQ(bearerTokenOf("Bearer "), "");
  EXPECT_EQ(bearerTokenOf(""), "");
}

TEST(CredentialsTest, TheSecretFileIsCreatedOwnerOnlyAndReadBack) {
  testing_support::TempDir dir;
  const std::string path = (dir.path() / "sub" / "rm.secret").string();
  bool created = false;
  const std::string secret = loadOrCreateClusterSecret(path, &created);
  EXPECT_TRUE(created);
  EXPECT_EQ(secret.size(), 64u);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(loadOrCreateClusterSecret(path, &created), secret);
  EXPECT_FALSE(created);
}

TEST(CredentialsTest, ASecretFileOthersMayReadIsRefused) {
  testing_support::TempDir dir;
  const std::string path = dir.writeFile("rm.secret", std::string(64, 'x') + "\n");
  ::chmod(path.c_str(), 0644);
  try {
    loadOrCreateClusterSecret(path, nullptr);
    FAIL() << "a world-readable secret was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("chmod 600"));
  }
  ::chmod(path.c_str(), 0600);
  EXPECT_EQ(loadOrCreateClusterSecret(path, nullptr), std::string(64, 'x'));
  const std::string shortOne = dir.writeFile("short.secret", "abc\n");
  ::chmod(shortOne.c_str(), 0600);
  EXPECT_THROW(loadOrCreateClusterSecret(shortOne, nullptr), std::runtime_error);
}

TEST(CredentialsTest, CommandsFindTheirTokenInOrder) {
  testing_support::TempDir dir;
  const std::string secretFile = dir.writeFile("rm.secret", kSecret + "\n");
  const std::string tokenFile = dir.writeFile("token", "from-the-token-file\n");
  ::unsetenv("TIDE_RM_TOKEN");
  Properties props;
  props.set("rm.secretFile", secretFile);
  EXPECT_EQ(rmClientToken(props), kSecret);
  EXPECT_EQ(rmNodeCredential(props), nodeCredentialOf(kSecret));
  ::setenv("TIDE_RM_TOKEN", "from-the-environment", 1);
  EXPECT_EQ(rmClientToken(props), "from-the-environment");
  props.set("rm.tokenFile", tokenFile);
  EXPECT_EQ(rmClientToken(props), "from-the-token-file");
  ::unsetenv("TIDE_RM_TOKEN");

  Properties missing;
  missing.set("rm.secretFile", (dir.path() / "nope").string());
  EXPECT_THROW(rmClientToken(missing), ConfigError);
}

}  // namespace
}  // namespace tide::rest
