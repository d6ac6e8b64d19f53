#include "rest/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "tests/support/errors.h"

namespace tide::rest {
namespace {

using ::testing::HasSubstr;
using testing_support::expectedMessageOf;
using testing_support::messageOf;

TEST(ParseJson, AcceptsADocument) {
  rapidjson::Document doc = parseJson(R"({"a": [1, 2.5, "x", true, null]})");
  ASSERT_TRUE(doc.IsObject());
  EXPECT_EQ(doc["a"].Size(), 5u);
}

TEST(ParseJson, NamesOffsetAndProblem) {
  // The parser notices the missing member name at the closing brace, offset 8.
  std::string text = R"({"ab":1,})";
  try {
    parseJson(text);
    FAIL() << "expected JsonParseError";
  } catch (const JsonParseError& error) {
    EXPECT_EQ(error.offset(), 8u);
    EXPECT_STREQ(error.what(), "malformed JSON at offset 8: Missing a name for object member");
  }
}

// RapidJSON keeps both members and lookups take the first: a body would mean one thing to tide
// and another to a proxy or validator in front of it.
TEST(ParseJson, RejectsDuplicateKeysNamingTheKey) {
  EXPECT_THAT(messageOf<JsonParseError>([] { parseJson(R"({"name": "a", "name": "b"})"); }),
              HasSubstr("duplicate key 'name'"));
  EXPECT_THAT(
      messageOf<JsonParseError>([] { parseJson(R"({"a": [{"x": 1}, {"y": {"z": 1, "z": 2}}]})"); }),
      HasSubstr("duplicate key 'z'"));
  // The same key in sibling objects is fine.
  EXPECT_NO_THROW(parseJson(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}, {"x": 4}]})"));
}

TEST(ParseJson, RejectsTrailingGarbageEmptyTextAndBadUtf8) {
  EXPECT_THAT(expectedMessageOf<JsonParseError>([] { parseJson("{} x"); }),
              HasSubstr("must not be followed by other values"));
  EXPECT_THAT(expectedMessageOf<JsonParseError>([] { parseJson(""); }),
              HasSubstr("offset 0: The document is empty"));
  EXPECT_THAT(expectedMessageOf<JsonParseError>([] { parseJson("\"\xff\""); }),
              HasSubstr("Invalid encoding"));
}

TEST(ParseJson, RejectsAnUnpairedSurrogateEscapeAndKeepsAPairedOne) {
  // Found by fuzz_messages: RapidJSON decoded "\udede" into bytes that are not UTF-8, so the
  // message it was in could not be written out and read back.
  EXPECT_THAT(expectedMessageOf<JsonParseError>(
                  [] { parseJson(R"({"releases": ["8888\udede8_0001_"]})"); }),
              HasSubstr("unpaired UTF-16 surrogate"));
  EXPECT_THAT(expectedMessageOf<JsonParseError>([] { parseJson(R"({"\udc00": 1})"); }),
              HasSubstr("unpaired UTF-16 surrogate"));
  // A high one alone RapidJSON refuses itself.
  EXPECT_THAT(expectedMessageOf<JsonParseError>([] { parseJson(R"("\ud83d")"); }),
              HasSubstr("surrogate pair in string is invalid"));
  // A pair is one character (U+1F600), written back as its UTF-8.
  const rapidjson::Document paired = parseJson(R"({"face": "\ud83d\ude00"})");
  EXPECT_EQ(std::string(paired["face"].GetString()), "\xF0\x9F\x98\x80");
}

TEST(ParseJson, SurvivesDeepNesting) {
  // Iterative parsing: no stack overflow on hostile input.
  std::string deep(200000, '[');
  EXPECT_THROW(parseJson(deep), JsonParseError);
}

TEST(JsonFields, ReadsEveryType) {
  auto doc = parseJson(R"({"s":"x","i":-7,"big":5000000000,"d":2.5,"di":3,"b":true,
                           "o":{"k":"v"},"a":[1,2]})");
  JsonObjectReader reader(doc);
  EXPECT_EQ(reader.requireString("s"), "x");
  EXPECT_EQ(reader.requireInt("i"), -7);
  EXPECT_EQ(reader.requireInt64("big"), 5000000000LL);
  EXPECT_EQ(reader.requireUint64("big"), 5000000000ULL);
  EXPECT_DOUBLE_EQ(reader.requireDouble("d"), 2.5);
  EXPECT_DOUBLE_EQ(reader.requireDouble("di"), 3.0);  // an integer is a fine double
  EXPECT_TRUE(reader.requireBool("b"));
  EXPECT_EQ(reader.requireObject("o").requireString("k"), "v");
  EXPECT_EQ(reader.requireArray("a").intAt(1), 2);
  EXPECT_EQ(requireString(doc, "s"), "x");
  EXPECT_EQ(requireInt(doc, "i"), -7);
  EXPECT_EQ(requireInt64(doc, "big"), 5000000000LL);
  EXPECT_TRUE(requireBool(doc, "b"));
  EXPECT_TRUE(requireObject(doc, "o").IsObject());
  EXPECT_EQ(requireArray(doc, "a").Size(), 2u);
}

TEST(JsonFields, MissingFieldIsNamed) {
  auto doc = parseJson(R"({"name":"x"})");
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { requireString(doc, "application-id"); }),
            "field 'application-id': missing");
  try {
    requireString(doc, "application-id");
  } catch (const JsonFieldError& error) {
    EXPECT_EQ(error.fieldPath(), "application-id");
  }
}

TEST(JsonFields, NestedMistypedFieldNamesFullPath) {
  auto doc = parseJson(R"({"resource":{"memory":"4g","cores":2}})");
  JsonObjectReader resource = JsonObjectReader(doc).requireObject("resource");
  EXPECT_EQ(resource.requireInt("cores"), 2);
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { resource.requireInt("memory"); }),
            "field 'resource.memory': expected an integer, got a string");
  // The one-shot form takes the parent path explicitly.
  EXPECT_EQ(expectedMessageOf<JsonFieldError>(
                [&] { requireInt64(doc["resource"], "memory", "resource"); }),
            "field 'resource.memory': expected an integer, got a string");
}

TEST(JsonFields, ArrayElementsNameTheirIndex) {
  auto doc = parseJson(R"({"executors":[{"id":"e1"},{"id":7}]})");
  JsonArrayReader executors = JsonObjectReader(doc).requireArray("executors");
  EXPECT_EQ(executors.objectAt(0).requireString("id"), "e1");
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { executors.objectAt(1).requireString("id"); }),
            "field 'executors[1].id': expected a string, got an integer");
  EXPECT_THAT(expectedMessageOf<JsonFieldError>([&] { executors.at(2); }),
              HasSubstr("field 'executors[2]': missing"));
}

TEST(JsonFields, RejectsWrongNumberKinds) {
  auto doc = parseJson(R"({"f":1.5,"huge":5000000000,"neg":-1,"u":18446744073709551615})");
  JsonObjectReader reader(doc);
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { reader.requireInt("f"); }),
            "field 'f': expected an integer, got a floating-point number");
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { reader.requireInt("huge"); }),
            "field 'huge': integer out of range: 5000000000");
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { reader.requireInt64("u"); }),
            "field 'u': integer out of range: 18446744073709551615");
  EXPECT_THAT(expectedMessageOf<JsonFieldError>([&] { reader.requireUint64("neg"); }),
              HasSubstr("expected a non-negative integer"));
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { reader.requireBool("f"); }),
            "field 'f': expected a boolean, got a floating-point number");
}

TEST(JsonFields, OptionalFieldsTakeDefaultsWhenMissingOrNull) {
  auto doc = parseJson(R"({"n":null,"s":"given","wrong":1})");
  EXPECT_EQ(optionalString(doc, "absent", "dflt"), "dflt");
  EXPECT_EQ(optionalString(doc, "n", "dflt"), "dflt");
  EXPECT_EQ(optionalString(doc, "s", "dflt"), "given");
  EXPECT_EQ(optionalInt(doc, "absent", 3), 3);
  EXPECT_EQ(optionalInt64(doc, "absent", 4), 4);
  EXPECT_DOUBLE_EQ(optionalDouble(doc, "absent", 0.5), 0.5);
  EXPECT_FALSE(optionalBool(doc, "absent", false));
  EXPECT_FALSE(JsonObjectReader(doc).optionalObject("absent").has_value());
  EXPECT_FALSE(JsonObjectReader(doc).optionalArray("n").has_value());
  // Present with the wrong type is still an error: a typo'd value must not pass silently.
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { optionalString(doc, "wrong", "dflt"); }),
            "field 'wrong': expected a string, got an integer");
}

TEST(JsonFields, RootMustBeAnObject) {
  auto doc = parseJson("[1]");
  EXPECT_EQ(expectedMessageOf<JsonFieldError>([&] { requireString(doc, "x"); }),
            "JSON document: expected an object, got an array");
}

TEST(JsonWriter, WritesEveryTypeAndRoundTrips) {
  JsonWriter writer;
  const std::string owned = "quote\" and \\ and \n";
  writer.startObject()
      .field("text", "e1")
      .field("owned", owned)
      .field("int", 4)
      .field("unsigned", 7u)
      .field("int64", std::numeric_limits<int64_t>::min())
      .field("size", size_t{9})
      .field("double", 0.25)
      .field("flag", true)
      .key("nothing")
      .null()
      .key("list")
      .startArray()
      .value(1)
      .value("two")
      .endArray()
      .endObject();
  ASSERT_TRUE(writer.complete());
  auto doc = parseJson(writer.str());
  JsonObjectReader reader(doc);
  EXPECT_EQ(reader.requireString("text"), "e1");
  EXPECT_EQ(reader.requireString("owned"), owned);
  EXPECT_EQ(reader.requireInt("int"), 4);
  EXPECT_EQ(reader.requireInt("unsigned"), 7);
  EXPECT_EQ(reader.requireInt64("int64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(reader.requireInt("size"), 9);
  EXPECT_DOUBLE_EQ(reader.requireDouble("double"), 0.25);
  EXPECT_TRUE(reader.requireBool("flag"));  // a const char* never became a bool
  EXPECT_TRUE(reader.require("nothing").IsNull());
  EXPECT_EQ(reader.requireArray("list").stringAt(1), "two");
  EXPECT_EQ(toJsonString(doc), writer.str());
}

TEST(JsonWriter, EmbedsDomValues) {
  auto inner = parseJson(R"({"k":[1,{"x":null}]})");
  JsonWriter writer;
  writer.startObject().field("inner", static_cast<const rapidjson::Value&>(inner)).endObject();
  EXPECT_EQ(writer.str(), R"({"inner":{"k":[1,{"x":null}]}})");
}

}  // namespace
}  // namespace tide::rest
