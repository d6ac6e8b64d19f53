#include "rest/json.h"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <limits>
#include <optional>
#include <set>
#include <vector>

namespace tide::rest {
namespace {

std::string joinPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string path(parent);
  path += '.';
  path += key;
  return path;
}

rapidjson::Value::ConstMemberIterator findMember(const rapidjson::Value& object,
                                                 std::string_view key) {
  return object.FindMember(rapidjson::Value(
      rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size()))));
}

[[noreturn]] void throwWrongType(const std::string& path, const char* expected,
                                 const rapidjson::Value& actual) {
  throw JsonFieldError(path,
                       std::string("expected ") + expected + ", got " + describeJsonType(actual));
}

// The typed conversions, shared by object fields and array elements.
std::string asString(const rapidjson::Value& v, const std::string& path) {
  if (!v.IsString()) throwWrongType(path, "a string", v);
  return std::string(v.GetString(), v.GetStringLength());
}

int64_t asInt64(const rapidjson::Value& v, const std::string& path) {
  if (v.IsInt64()) return v.GetInt64();
  if (v.IsUint64()) throw JsonFieldError(path, "integer out of range: " + toJsonString(v));
  throwWrongType(path, "an integer", v);
}

int asInt(const rapidjson::Value& v, const std::string& path) {
  int64_t wide = asInt64(v, path);
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    throw JsonFieldError(path, "integer out of range: " + std::to_string(wide));
  }
  return static_cast<int>(wide);
}

uint64_t asUint64(const rapidjson::Value& v, const std::string& path) {
  if (v.IsUint64()) return v.GetUint64();
  if (v.IsInt64())
    throw JsonFieldError(path,
                         "expected a non-negative integer, got " + std::to_string(v.GetInt64()));
  throwWrongType(path, "a non-negative integer", v);
}

double asDouble(const rapidjson::Value& v, const std::string& path) {
  if (!v.IsNumber()) throwWrongType(path, "a number", v);
  return v.GetDouble();
}

bool asBool(const rapidjson::Value& v, const std::string& path) {
  if (!v.IsBool()) throwWrongType(path, "a boolean", v);
  return v.GetBool();
}

}  // namespace

JsonParseError::JsonParseError(size_t offset, const std::string& reason)
    : std::runtime_error("malformed JSON at offset " + std::to_string(offset) + ": " + reason),
      offset_(offset) {}

JsonFieldError::JsonFieldError(std::string fieldPath, const std::string& problem)
    : std::runtime_error(fieldPath.empty() ? "JSON document: " + problem
                                           : "field '" + fieldPath + "': " + problem),
      fieldPath_(std::move(fieldPath)) {}

namespace {

// A SAX pass that stops at the first object with a key it has seen already: RapidJSON keeps
// duplicate members (and lookups take the first), so {"user": "a", "user": "b"} would mean one
// thing to tide and another to whatever sits in front of it. It also stops at a string with an
// unpaired surrogate escape (a \u escape of D800..DFFF without its pair): RapidJSON 1.1 decodes it
// into bytes that are not UTF-8 (the input's encoding check does not see escapes), so the value
// could not be written out and read back.
class DocumentChecker : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, DocumentChecker> {
 public:
  bool StartObject() {
    keys_.emplace_back();
    return true;
  }
  bool Key(const char* name, rapidjson::SizeType length, bool copy) {
    if (!String(name, length, copy)) return false;
    if (!keys_.back().emplace(name, length).second) {
      problem_ = "duplicate key '" + std::string(name, length).substr(0, 200) + "'";
      return false;
    }
    return true;
  }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    // UTF-8 of U+D800..U+DFFF is ED A0..BF xx; a paired escape decodes to four bytes instead.
    for (rapidjson::SizeType i = 0; i + 1 < length; ++i) {
      const auto byte = static_cast<unsigned char>(text[i]);
      const auto next = static_cast<unsigned char>(text[i + 1]);
      if (byte == 0xED && next >= 0xA0 && next <= 0xBF) {
        problem_ = "a \\u escape is an unpaired UTF-16 surrogate (not a character)";
        return false;
      }
    }
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    keys_.pop_back();
    return true;
  }
  const std::optional<std::string>& problem() const { return problem_; }

 private:
  std::vector<std::set<std::string>> keys_;
  std::optional<std::string> problem_;
};

void rejectDuplicateKeysAndLoneSurrogates(std::string_view text) {
  DocumentChecker checker;
  rapidjson::Reader reader;
  rapidjson::MemoryStream stream(text.data(), text.size());
  reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(stream,
                                                                                       checker);
  if (checker.problem()) throw JsonParseError(reader.GetErrorOffset(), *checker.problem());
}

}  // namespace

rapidjson::Document parseJson(std::string_view text) {
  rapidjson::Document document;
  // Iterative parsing keeps a hostile, deeply nested body from overflowing the stack;
  // validating UTF-8 keeps invalid strings out of everything downstream.
  constexpr unsigned kFlags =
      rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;
  document.Parse<kFlags>(text.data(), text.size());
  if (document.HasParseError()) {
    std::string reason = rapidjson::GetParseError_En(document.GetParseError());
    if (!reason.empty() && reason.back() == '.') reason.pop_back();
    throw JsonParseError(document.GetErrorOffset(), reason);
  }
  rejectDuplicateKeysAndLoneSurrogates(text);
  return document;
}

std::string describeJsonType(const rapidjson::Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "a boolean";
    case rapidjson::kObjectType:
      return "an object";
    case rapidjson::kArrayType:
      return "an array";
    case rapidjson::kStringType:
      return "a string";
    case rapidjson::kNumberType:
      return value.IsDouble() ? "a floating-point number" : "an integer";
  }
  return "an unknown type";
}

std::string toJsonString(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// ---- JsonObjectReader ----

JsonObjectReader::JsonObjectReader(const rapidjson::Value& value, std::string path)
    : value_(&value), path_(std::move(path)) {
  if (!value.IsObject()) throwWrongType(path_, "an object", value);
}

std::string JsonObjectReader::fieldPath(std::string_view key) const {
  return joinPath(path_, key);
}

bool JsonObjectReader::has(std::string_view key) const {
  return findMember(*value_, key) != value_->MemberEnd();
}

bool JsonObjectReader::hasNonNull(std::string_view key) const {
  auto it = findMember(*value_, key);
  return it != value_->MemberEnd() && !it->value.IsNull();
}

const rapidjson::Value& JsonObjectReader::require(std::string_view key) const {
  auto it = findMember(*value_, key);
  if (it == value_->MemberEnd()) throw JsonFieldError(fieldPath(key), "missing");
  return it->value;
}

std::string JsonObjectReader::requireString(std::string_view key) const {
  return asString(require(key), fieldPath(key));
}
int JsonObjectReader::requireInt(std::string_view key) const {
  return asInt(require(key), fieldPath(key));
}
int64_t JsonObjectReader::requireInt64(std::string_view key) const {
  return asInt64(require(key), fieldPath(key));
}
uint64_t JsonObjectReader::requireUint64(std::string_view key) const {
  return asUint64(require(key), fieldPath(key));
}
double JsonObjectReader::requireDouble(std::string_view key) const {
  return asDouble(require(key), fieldPath(key));
}
bool JsonObjectReader::requireBool(std::string_view key) const {
  return asBool(require(key), fieldPath(key));
}
JsonObjectReader JsonObjectReader::requireObject(std::string_view key) const {
  return JsonObjectReader(require(key), fieldPath(key));
}
JsonArrayReader JsonObjectReader::requireArray(std::string_view key) const {
  return JsonArrayReader(require(key), fieldPath(key));
}

std::string JsonObjectReader::optionalString(std::string_view key, std::string defaultValue) const {
  return hasNonNull(key) ? requireString(key) : defaultValue;
}
int JsonObjectReader::optionalInt(std::string_view key, int defaultValue) const {
  return hasNonNull(key) ? requireInt(key) : defaultValue;
}
int64_t JsonObjectReader::optionalInt64(std::string_view key, int64_t defaultValue) const {
  return hasNonNull(key) ? requireInt64(key) : defaultValue;
}
double JsonObjectReader::optionalDouble(std::string_view key, double defaultValue) const {
  return hasNonNull(key) ? requireDouble(key) : defaultValue;
}
bool JsonObjectReader::optionalBool(std::string_view key, bool defaultValue) const {
  return hasNonNull(key) ? requireBool(key) : defaultValue;
}
std::optional<JsonObjectReader> JsonObjectReader::optionalObject(std::string_view key) const {
  if (!hasNonNull(key)) return std::nullopt;
  return requireObject(key);
}
std::optional<JsonArrayReader> JsonObjectReader::optionalArray(std::string_view key) const {
  if (!hasNonNull(key)) return std::nullopt;
  return requireArray(key);
}

// ---- JsonArrayReader ----

JsonArrayReader::JsonArrayReader(const rapidjson::Value& value, std::string path)
    : value_(&value), path_(std::move(path)) {
  if (!value.IsArray()) throwWrongType(path_, "an array", value);
}

std::string JsonArrayReader::elementPath(size_t index) const {
  return path_ + "[" + std::to_string(index) + "]";
}

const rapidjson::Value& JsonArrayReader::at(size_t index) const {
  if (index >= value_->Size()) {
    throw JsonFieldError(elementPath(index),
                         "missing (array has " + std::to_string(value_->Size()) + " elements)");
  }
  return (*value_)[static_cast<rapidjson::SizeType>(index)];
}

std::string JsonArrayReader::stringAt(size_t index) const {
  return asString(at(index), elementPath(index));
}
int JsonArrayReader::intAt(size_t index) const {
  return asInt(at(index), elementPath(index));
}
int64_t JsonArrayReader::int64At(size_t index) const {
  return asInt64(at(index), elementPath(index));
}
double JsonArrayReader::doubleAt(size_t index) const {
  return asDouble(at(index), elementPath(index));
}
bool JsonArrayReader::boolAt(size_t index) const {
  return asBool(at(index), elementPath(index));
}
JsonObjectReader JsonArrayReader::objectAt(size_t index) const {
  return JsonObjectReader(at(index), elementPath(index));
}
JsonArrayReader JsonArrayReader::arrayAt(size_t index) const {
  return JsonArrayReader(at(index), elementPath(index));
}

// ---- one-shot helpers ----

std::string requireString(const rapidjson::Value& object, std::string_view key,
                          std::string_view parentPath) {
  return JsonObjectReader(object, std::string(parentPath)).requireString(key);
}
int requireInt(const rapidjson::Value& object, std::string_view key, std::string_view parentPath) {
  return JsonObjectReader(object, std::string(parentPath)).requireInt(key);
}
int64_t requireInt64(const rapidjson::Value& object, std::string_view key,
                     std::string_view parentPath) {
  return JsonObjectReader(object, std::string(parentPath)).requireInt64(key);
}
double requireDouble(const rapidjson::Value& object, std::string_view key,
                     std::string_view parentPath) {
  return JsonObjectReader(object, std::string(parentPath)).requireDouble(key);
}
bool requireBool(const rapidjson::Value& object, std::string_view key,
                 std::string_view parentPath) {
  return JsonObjectReader(object, std::string(parentPath)).requireBool(key);
}
const rapidjson::Value& requireObject(const rapidjson::Value& object, std::string_view key,
                                      std::string_view parentPath) {
  return JsonObjectReader(object, std::string(parentPath)).requireObject(key).value();
}
const rapidjson::Value& requireArray(const rapidjson::Value& object, std::string_view key,
                                     std::string_view parentPath) {
  return JsonObjectReader(object, std::string(parentPath)).requireArray(key).value();
}
std::string optionalString(const rapidjson::Value& object, std::string_view key,
                           std::string defaultValue) {
  return JsonObjectReader(object).optionalString(key, std::move(defaultValue));
}
int optionalInt(const rapidjson::Value& object, std::string_view key, int defaultValue) {
  return JsonObjectReader(object).optionalInt(key, defaultValue);
}
int64_t optionalInt64(const rapidjson::Value& object, std::string_view key, int64_t defaultValue) {
  return JsonObjectReader(object).optionalInt64(key, defaultValue);
}
double optionalDouble(const rapidjson::Value& object, std::string_view key, double defaultValue) {
  return JsonObjectReader(object).optionalDouble(key, defaultValue);
}
bool optionalBool(const rapidjson::Value& object, std::string_view key, bool defaultValue) {
  return JsonObjectReader(object).optionalBool(key, defaultValue);
}

}  // namespace tide::rest
