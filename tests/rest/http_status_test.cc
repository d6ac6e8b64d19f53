// The one mapping from Status codes to HTTP statuses, and the RestError a handler answers with.

#include "rest/http_status.h"

#include <gtest/gtest.h>

namespace tide::rest {
namespace {

TEST(HttpStatusTest, EachCodeHasItsHttpStatus) {
  EXPECT_EQ(httpStatusOf(StatusCode::kOk), 200);
  EXPECT_EQ(httpStatusOf(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(httpStatusOf(StatusCode::kNotFound), 404);
  EXPECT_EQ(httpStatusOf(StatusCode::kFailedPrecondition), 409);
  EXPECT_EQ(httpStatusOf(StatusCode::kUnavailable), 503);
  EXPECT_EQ(httpStatusOf(StatusCode::kInternal), 500);
}

TEST(HttpStatusTest, AnErrorBecomesARestErrorWithItsStatusAndMessage) {
  EXPECT_NO_THROW(throwIfError(Status()));
  try {
    throwIfError(Status::notFound("no stage job-9/x"));
    FAIL() << "no RestError";
  } catch (const RestError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_STREQ(e.what(), "no stage job-9/x");
  }
  try {
    throwIfError(Status::failedPrecondition("the job of stage job-1/s is still running"));
    FAIL() << "no RestError";
  } catch (const RestError& e) {
    EXPECT_EQ(e.status(), 409);
  }
}

}  // namespace
}  // namespace tide::rest
