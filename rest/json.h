#pragma once

// JSON plumbing shared by every tide process: parsing with errors that say where the text
// is broken, field readers whose errors name the full field path (so a REST handler can turn
// them into a 400 that tells the caller exactly what to fix), and a small writer.
// Message types (the wire schema) get their codecs next to this, under rest/messages/.

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace tide::rest {

// The text is not JSON. what(): "malformed JSON at offset 12: Missing a name for object member".
class JsonParseError : public std::runtime_error {
 public:
  JsonParseError(size_t offset, const std::string& reason);
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

// A field is missing or has the wrong type or range. The HTTP server maps it to a 400.
// what(): "field 'resource.memory': expected an integer, got a string".
class JsonFieldError : public std::runtime_error {
 public:
  JsonFieldError(std::string fieldPath, const std::string& problem);
  const std::string& fieldPath() const { return fieldPath_; }

 private:
  std::string fieldPath_;
};

// Parses a whole document; trailing garbage and invalid UTF-8 are errors. Throws JsonParseError.
rapidjson::Document parseJson(std::string_view text);

// "a string", "an integer", "a floating-point number", "an object", ... for error messages.
std::string describeJsonType(const rapidjson::Value& value);

// Serializes compactly (no whitespace).
std::string toJsonString(const rapidjson::Value& value);

class JsonArrayReader;

// Reads the fields of one JSON object. It remembers where the object sits in the document
// ("resource", "executors[3]") so that every error names the full path of the bad field.
// The reader refers to the value; the document must outlive it.
class JsonObjectReader {
 public:
  // Throws JsonFieldError when `value` is not an object (path "" names the document root).
  explicit JsonObjectReader(const rapidjson::Value& value, std::string path = "");

  bool has(std::string_view key) const;
  // Present and not null.
  bool hasNonNull(std::string_view key) const;

  std::string requireString(std::string_view key) const;
  int requireInt(std::string_view key) const;
  int64_t requireInt64(std::string_view key) const;
  uint64_t requireUint64(std::string_view key) const;
  double requireDouble(std::string_view key) const;  // any number
  bool requireBool(std::string_view key) const;
  JsonObjectReader requireObject(std::string_view key) const;
  JsonArrayReader requireArray(std::string_view key) const;
  // The raw member, of any type.
  const rapidjson::Value& require(std::string_view key) const;

  // A missing or null field yields the default; a present field of the wrong type is an error.
  std::string optionalString(std::string_view key, std::string defaultValue = "") const;
  int optionalInt(std::string_view key, int defaultValue) const;
  int64_t optionalInt64(std::string_view key, int64_t defaultValue) const;
  double optionalDouble(std::string_view key, double defaultValue) const;
  bool optionalBool(std::string_view key, bool defaultValue) const;
  std::optional<JsonObjectReader> optionalObject(std::string_view key) const;
  std::optional<JsonArrayReader> optionalArray(std::string_view key) const;

  const rapidjson::Value& value() const { return *value_; }
  const std::string& path() const { return path_; }
  // The path of a member of this object, as used in error messages.
  std::string fieldPath(std::string_view key) const;

 private:
  const rapidjson::Value* value_;
  std::string path_;
};

// Reads the elements of one JSON array; errors name the element ("executors[3].id").
class JsonArrayReader {
 public:
  // Throws JsonFieldError when `value` is not an array.
  explicit JsonArrayReader(const rapidjson::Value& value, std::string path = "");

  size_t size() const { return value_->Size(); }
  bool empty() const { return value_->Empty(); }

  std::string stringAt(size_t index) const;
  int intAt(size_t index) const;
  int64_t int64At(size_t index) const;
  double doubleAt(size_t index) const;
  bool boolAt(size_t index) const;
  JsonObjectReader objectAt(size_t index) const;
  JsonArrayReader arrayAt(size_t index) const;
  const rapidjson::Value& at(size_t index) const;

  const rapidjson::Value& value() const { return *value_; }
  const std::string& path() const { return path_; }
  std::string elementPath(size_t index) const;

 private:
  const rapidjson::Value* value_;
  std::string path_;
};

// One-shot forms of the readers above for a top-level object, e.g.
// requireString(doc, "application-id"). `parentPath` prefixes the field in error messages.
std::string requireString(const rapidjson::Value& object, std::string_view key,
                          std::string_view parentPath = {});
int requireInt(const rapidjson::Value& object, std::string_view key,
               std::string_view parentPath = {});
int64_t requireInt64(const rapidjson::Value& object, std::string_view key,
                     std::string_view parentPath = {});
double requireDouble(const rapidjson::Value& object, std::string_view key,
                     std::string_view parentPath = {});
bool requireBool(const rapidjson::Value& object, std::string_view key,
                 std::string_view parentPath = {});
const rapidjson::Value& requireObject(const rapidjson::Value& object, std::string_view key,
                                      std::string_view parentPath = {});
const rapidjson::Value& requireArray(const rapidjson::Value& object, std::string_view key,
                                     std::string_view parentPath = {});
std::string optionalString(const rapidjson::Value& object, std::string_view key,
                           std::string defaultValue = "");
int optionalInt(const rapidjson::Value& object, std::string_view key, int defaultValue);
int64_t optionalInt64(const rapidjson::Value& object, std::string_view key, int64_t defaultValue);
double optionalDouble(const rapidjson::Value& object, std::string_view key, double defaultValue);
bool optionalBool(const rapidjson::Value& object, std::string_view key, bool defaultValue);

// Streams compact JSON into a string. Thin over rapidjson::Writer, with overloads that pick
// the right JSON type for any C++ integer (a plain `int` would otherwise be ambiguous) and
// never turn a `const char*` into a bool.
//   JsonWriter w; w.startObject().field("id", "e1").field("cores", 4).endObject(); w.str();
class JsonWriter {
 public:
  JsonWriter() : writer_(buffer_) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& startObject() { return then(writer_.StartObject()); }
  JsonWriter& endObject() { return then(writer_.EndObject()); }
  JsonWriter& startArray() { return then(writer_.StartArray()); }
  JsonWriter& endArray() { return then(writer_.EndArray()); }
  JsonWriter& key(std::string_view name) { return then(writer_.Key(name.data(), size(name))); }
  JsonWriter& null() { return then(writer_.Null()); }
  JsonWriter& value(std::string_view text) { return then(writer_.String(text.data(), size(text))); }
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag) { return then(writer_.Bool(flag)); }
  JsonWriter& value(double number) { return then(writer_.Double(number)); }
  JsonWriter& value(float number) { return value(static_cast<double>(number)); }
  template <typename Integer, typename = std::enable_if_t<std::is_integral_v<Integer> &&
                                                          !std::is_same_v<Integer, bool>>>
  JsonWriter& value(Integer number) {
    if constexpr (std::is_signed_v<Integer>) {
      return then(writer_.Int64(static_cast<int64_t>(number)));
    } else {
      return then(writer_.Uint64(static_cast<uint64_t>(number)));
    }
  }
  // Copies an existing DOM value (e.g. an object built elsewhere) into the stream.
  JsonWriter& value(const rapidjson::Value& dom) { return then(dom.Accept(writer_)); }
  template <typename T>
  JsonWriter& field(std::string_view name, const T& fieldValue) {
    key(name);
    return value(fieldValue);
  }

  // The text so far; complete once every started object and array has ended.
  std::string str() const { return std::string(buffer_.GetString(), buffer_.GetSize()); }
  bool complete() const { return writer_.IsComplete(); }
  rapidjson::Writer<rapidjson::StringBuffer>& raw() { return writer_; }

 private:
  // Every call chains; rapidjson's bool (false only for misuse its asserts catch) is dropped.
  JsonWriter& then(bool) { return *this; }
  static rapidjson::SizeType size(std::string_view text) {
    return static_cast<rapidjson::SizeType>(text.size());
  }

  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_;
};

}  // namespace tide::rest
