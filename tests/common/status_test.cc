// Status: a code to branch on and a message to read; success is the default.

#include "common/status.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tide {
namespace {

TEST(StatusTest, DefaultIsOkWithoutAMessage) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.toString(), "OK");
  EXPECT_EQ(ok, Status::okStatus());
}

TEST(StatusTest, EachFactoryCarriesItsCodeAndMessage) {
  const std::pair<Status, StatusCode> cases[] = {
      {Status::invalidArgument("max: must be at least 1"), StatusCode::kInvalidArgument},
      {Status::notFound("no stage job-9/x"), StatusCode::kNotFound},
      {Status::failedPrecondition("job still running"), StatusCode::kFailedPrecondition},
      {Status::unavailable("retry"), StatusCode::kUnavailable},
      {Status::internal("bug"), StatusCode::kInternal}};
  for (const auto& [status, code] : cases) {
    EXPECT_FALSE(status.ok()) << status;
    EXPECT_EQ(status.code(), code);
    EXPECT_FALSE(status.message().empty());
  }
  EXPECT_EQ(Status::notFound("no stage job-9/x").toString(), "NOT_FOUND: no stage job-9/x");
}

TEST(StatusTest, EqualityIsCodeAndMessage) {
  EXPECT_EQ(Status::notFound("a"), Status(StatusCode::kNotFound, "a"));
  EXPECT_NE(Status::notFound("a"), Status::notFound("b"));
  EXPECT_NE(Status::notFound("a"), Status::failedPrecondition("a"));
  std::ostringstream out;
  out << Status::unavailable("later");
  EXPECT_EQ(out.str(), "UNAVAILABLE: later");
}

}  // namespace
}  // namespace tide
