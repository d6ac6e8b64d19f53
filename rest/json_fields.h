#pragma once

// A message type's JSON shape as one table that drives both its reader and its writer:
//
//   const JsonFields<Resource>& resourceFields() {
//     static const JsonFields<Resource> fields =
//         JsonFields<Resource>()
//             .required("memory", &Resource::memoryMb, json_check::notNegative<int64_t>())
//             .required("vCores", &Resource::vCores, json_check::notNegative<int>());
//     return fields;
//   }
//   Resource r = resourceFields().read(JsonObjectReader(doc));   // errors name "memory" etc.
//   JsonWriter out; resourceFields().write(out, r);              // {"memory":..,"vCores":..}
//
// Fields are read and written in table order. Reading goes through JsonObjectReader, so a bad
// field's error names its full path ("asks[0].resource.memory"); a check refuses a value with
// a JsonFieldError naming the same path. Shapes a table cannot say (a map with rules for its
// names, a field that depends on another) are `custom` fields with their own read and write.
// A value a document shows but no reader takes (a summary of other fields) is `computed`.

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rest/json.h"

namespace tide::rest {

// How one C++ type is read from a member of a JSON object and written as a JSON value.
template <typename M>
struct JsonValueCodec;

// A JSON scalar read with one of JsonObjectReader's require/optional pairs.
template <typename M, M (JsonObjectReader::*Require)(std::string_view) const,
          M (JsonObjectReader::*Optional)(std::string_view, M) const>
struct JsonScalarCodec {
  static M require(const JsonObjectReader& r, std::string_view key) { return (r.*Require)(key); }
  static M optional(const JsonObjectReader& r, std::string_view key, const M& fallback) {
    return (r.*Optional)(key, fallback);
  }
  static void write(JsonWriter& out, const M& value) { out.value(value); }
};

template <>
struct JsonValueCodec<std::string> : JsonScalarCodec<std::string, &JsonObjectReader::requireString,
                                                     &JsonObjectReader::optionalString> {};
template <>
struct JsonValueCodec<int>
    : JsonScalarCodec<int, &JsonObjectReader::requireInt, &JsonObjectReader::optionalInt> {};
template <>
struct JsonValueCodec<int64_t>
    : JsonScalarCodec<int64_t, &JsonObjectReader::requireInt64, &JsonObjectReader::optionalInt64> {
};
template <>
struct JsonValueCodec<double>
    : JsonScalarCodec<double, &JsonObjectReader::requireDouble, &JsonObjectReader::optionalDouble> {
};
template <>
struct JsonValueCodec<bool>
    : JsonScalarCodec<bool, &JsonObjectReader::requireBool, &JsonObjectReader::optionalBool> {};

// An array of strings; a missing or null optional one is the fallback (usually empty).
template <>
struct JsonValueCodec<std::vector<std::string>> {
  static std::vector<std::string> fromArray(const JsonArrayReader& array) {
    std::vector<std::string> values;
    values.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) values.push_back(array.stringAt(i));
    return values;
  }
  static std::vector<std::string> require(const JsonObjectReader& r, std::string_view key) {
    return fromArray(r.requireArray(key));
  }
  static std::vector<std::string> optional(const JsonObjectReader& r, std::string_view key,
                                           const std::vector<std::string>& fallback) {
    std::optional<JsonArrayReader> array = r.optionalArray(key);
    return array ? fromArray(*array) : fallback;
  }
  static void write(JsonWriter& out, const std::vector<std::string>& values) {
    out.startArray();
    for (const std::string& value : values) out.value(value);
    out.endArray();
  }
};

// A check of a field's value once read: throws JsonFieldError(reader.fieldPath(key), ...) to
// refuse it. `reader` is the object holding the field.
template <typename M>
using JsonCheck =
    std::function<void(const M& value, const JsonObjectReader& reader, std::string_view key)>;

// The checks the wire schema uses, with the wording its error messages have always had.
namespace json_check {

inline JsonCheck<std::string> nonEmpty() {
  return [](const std::string& value, const JsonObjectReader& reader, std::string_view key) {
    if (value.empty()) throw JsonFieldError(reader.fieldPath(key), "must not be empty");
  };
}

// "must not be negative"
template <typename Number>
JsonCheck<Number> notNegative() {
  return [](const Number& value, const JsonObjectReader& reader, std::string_view key) {
    if (value < 0) throw JsonFieldError(reader.fieldPath(key), "must not be negative");
  };
}

// "must be positive"
template <typename Number>
JsonCheck<Number> positive() {
  return [](const Number& value, const JsonObjectReader& reader, std::string_view key) {
    if (value <= 0) throw JsonFieldError(reader.fieldPath(key), "must be positive");
  };
}

// "must be at least 1, got 0"
template <typename Number>
JsonCheck<Number> atLeast(Number minimum) {
  return [minimum](const Number& value, const JsonObjectReader& reader, std::string_view key) {
    if (value < minimum) {
      throw JsonFieldError(reader.fieldPath(key), "must be at least " + std::to_string(minimum) +
                                                      ", got " + std::to_string(value));
    }
  };
}

// "expected a port in 1..65535, got 0" (what = "a port")
template <typename Number>
JsonCheck<Number> inRange(Number low, Number high, std::string what) {
  return [low, high, what = std::move(what)](const Number& value, const JsonObjectReader& reader,
                                             std::string_view key) {
    if (value < low || value > high) {
      throw JsonFieldError(reader.fieldPath(key),
                           "expected " + what + " in " + std::to_string(low) + ".." +
                               std::to_string(high) + ", got " + std::to_string(value));
    }
  };
}

// One of `choices`; refused with `expected` + ", got \"value\"", where `expected` defaults
// to "expected one of a, b, c" (each choice in quotes when `quoted`).
inline JsonCheck<std::string> oneOf(std::vector<std::string> choices, bool quoted = false,
                                    std::string expected = "") {
  if (expected.empty()) {
    for (const std::string& choice : choices) {
      expected += expected.empty() ? "expected one of " : ", ";
      expected += quoted ? "\"" + choice + "\"" : choice;
    }
  }
  return [choices = std::move(choices), expected = std::move(expected)](
             const std::string& value, const JsonObjectReader& reader, std::string_view key) {
    for (const std::string& choice : choices) {
      if (value == choice) return;
    }
    throw JsonFieldError(reader.fieldPath(key), expected + ", got \"" + value + "\"");
  };
}

}  // namespace json_check

// A string member that must be present and not empty, for readers written by hand.
inline std::string requireNonEmptyString(const JsonObjectReader& reader, std::string_view key) {
  std::string value = reader.requireString(key);
  json_check::nonEmpty()(value, reader, key);
  return value;
}

namespace json_fields_detail {
// Keeps a parameter out of template argument deduction: the member pointer alone says M.
template <typename X>
struct Identity {
  using type = X;
};
}  // namespace json_fields_detail

template <typename T>
class JsonFields {
  template <typename M>
  using Same = typename json_fields_detail::Identity<M>::type;

 public:
  using Reader = std::function<void(const JsonObjectReader& reader, T& value)>;
  // Writes the field's key and value, or nothing.
  using Writer = std::function<void(JsonWriter& out, const T& value)>;

  // A member that must be present (and not null).
  template <typename M>
  JsonFields& required(std::string name, M T::*member, Same<JsonCheck<M>> check = nullptr) {
    return add(
        name,
        [name, member, check](const JsonObjectReader& reader, T& value) {
          value.*member = JsonValueCodec<M>::require(reader, name);
          if (check) check(value.*member, reader, name);
        },
        scalarWriter(name, member));
  }

  // A member that may be missing or null, which reads as `fallback`; `check` sees the value
  // read or the fallback.
  template <typename M>
  JsonFields& optional(std::string name, M T::*member, Same<M> fallback,
                       Same<JsonCheck<M>> check = nullptr) {
    return add(
        name,
        [name, member, fallback, check](const JsonObjectReader& reader, T& value) {
          value.*member = JsonValueCodec<M>::optional(reader, name, fallback);
          if (check) check(value.*member, reader, name);
        },
        scalarWriter(name, member));
  }

  // A nested object with a table of its own; when not `required`, a missing or null one
  // leaves the member as it was.
  template <typename M>
  JsonFields& object(std::string name, M T::*member, const JsonFields<M>& fields,
                     bool required = true, Same<JsonCheck<M>> check = nullptr) {
    return add(
        name,
        [name, member, &fields, required, check](const JsonObjectReader& reader, T& value) {
          if (required) {
            value.*member = fields.read(reader.requireObject(name));
          } else if (std::optional<JsonObjectReader> nested = reader.optionalObject(name)) {
            value.*member = fields.read(*nested);
          } else {
            return;
          }
          if (check) check(value.*member, reader, name);
        },
        [name, member, &fields](JsonWriter& out, const T& value) {
          out.key(name);
          fields.write(out, value.*member);
        });
  }

  // An array of nested objects; when not `required`, a missing or null one reads as empty.
  template <typename M>
  JsonFields& objects(std::string name, std::vector<M> T::*member, const JsonFields<M>& fields,
                      bool required = true) {
    return add(
        name,
        [name, member, &fields, required](const JsonObjectReader& reader, T& value) {
          std::optional<JsonArrayReader> array;
          if (required) {
            array = reader.requireArray(name);
          } else {
            array = reader.optionalArray(name);
          }
          if (array) value.*member = fields.readArray(*array);
        },
        [name, member, &fields](JsonWriter& out, const T& value) {
          out.key(name);
          fields.writeArray(out, value.*member);
        });
  }

  // A nested object whose members are fields of T itself (`fields` is a table over T): a
  // message that groups some of its fields on the wire. When not `required`, a missing or
  // null one leaves those fields as they were.
  JsonFields& group(std::string name, const JsonFields<T>& fields, bool required = true) {
    return add(
        name,
        [name, &fields, required](const JsonObjectReader& reader, T& value) {
          if (required) {
            fields.readInto(reader.requireObject(name), value);
          } else if (std::optional<JsonObjectReader> nested = reader.optionalObject(name)) {
            fields.readInto(*nested, value);
          }
        },
        [name, &fields](JsonWriter& out, const T& value) {
          out.key(name);
          fields.write(out, value);
        });
  }

  // The fields of T's base class B, from B's own table, read and written as T's own members.
  template <typename B>
  JsonFields& inherit(const JsonFields<B>& fields) {
    return add(
        "", [&fields](const JsonObjectReader& reader, T& value) { fields.readInto(reader, value); },
        [&fields](JsonWriter& out, const T& value) { fields.writeMembers(out, value); });
  }

  // A field with hand-written reading and writing (`write` writes the key too, or nothing).
  JsonFields& custom(std::string name, Reader read, Writer write) {
    return add(std::move(name), std::move(read), std::move(write));
  }

  // A value derived from the message (a summary of other fields) that a document shows:
  // written as `value(message)`, never read.
  template <typename Derive>
  JsonFields& computed(std::string name, Derive value) {
    return add(
        name, [](const JsonObjectReader&, T&) {},
        [name, value](JsonWriter& out, const T& message) { out.field(name, value(message)); });
  }

  // The field added last is written only when `when` holds for the message.
  JsonFields& writeIf(std::function<bool(const T& value)> when) {
    Writer write = std::move(fields_.back().write);
    fields_.back().write = [when = std::move(when), write = std::move(write)](JsonWriter& out,
                                                                              const T& value) {
      if (when(value)) write(out, value);
    };
    return *this;
  }

  T read(const JsonObjectReader& reader) const {
    T value{};
    readInto(reader, value);
    return value;
  }
  // Reads over `value`, keeping what a missing optional object leaves alone.
  void readInto(const JsonObjectReader& reader, T& value) const {
    for (const Field& field : fields_) field.read(reader, value);
  }
  std::vector<T> readArray(const JsonArrayReader& array) const {
    std::vector<T> values;
    values.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) values.push_back(read(array.objectAt(i)));
    return values;
  }

  void write(JsonWriter& out, const T& value) const {
    out.startObject();
    writeMembers(out, value);
    out.endObject();
  }
  // The fields without the braces, for a message that adds members of its own.
  void writeMembers(JsonWriter& out, const T& value) const {
    for (const Field& field : fields_) field.write(out, value);
  }
  void writeArray(JsonWriter& out, const std::vector<T>& values) const {
    out.startArray();
    for (const T& value : values) write(out, value);
    out.endArray();
  }
  std::string toJson(const T& value) const {
    JsonWriter out;
    write(out, value);
    return out.str();
  }

 private:
  struct Field {
    std::string name;
    Reader read;
    Writer write;
  };

  template <typename M>
  static Writer scalarWriter(const std::string& name, M T::*member) {
    return [name, member](JsonWriter& out, const T& value) {
      out.key(name);
      JsonValueCodec<M>::write(out, value.*member);
    };
  }

  JsonFields& add(std::string name, Reader read, Writer write) {
    fields_.push_back({std::move(name), std::move(read), std::move(write)});
    return *this;
  }

  std::vector<Field> fields_;
};

}  // namespace tide::rest

// The public codec pair of a message type over its table:
//   std::string toJson(const Type&)   and   Type fromJsonName(const rapidjson::Value&)
#define TIDE_JSON_CODEC(Type, fromJsonName, fieldsFunction) \
  std::string toJson(const Type& value) {                   \
    return fieldsFunction().toJson(value);                  \
  }                                                         \
  Type fromJsonName(const rapidjson::Value& json) {         \
    return fieldsFunction().read(JsonObjectReader(json));   \
  }
