#pragma once

// Small text helpers used by configuration and logging. Header-only so that any tide library can
// use them without linking anything.

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tide {

// Lower-case hex of raw bytes: secrets, tokens and digests on the wire.
inline std::string hexEncode(const unsigned char* bytes, size_t length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(length * 2);
  for (size_t i = 0; i < length; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 0x0f];
  }
  return text;
}

inline bool isSpace(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

inline std::string_view trim(std::string_view text) {
  while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back())) text.remove_suffix(1);
  return text;
}

inline std::string toLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::string toUpper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

inline bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

inline bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// `text` with each character that has a replacement in `replacements` replaced by it, the
// rest kept: the escaping of a text format (Prometheus's HELP and label values, XML).
inline std::string replaceChars(
    std::string_view text, std::initializer_list<std::pair<char, std::string_view>> replacements) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto* found =
        std::find_if(replacements.begin(), replacements.end(),
                     [c](const auto& replacement) { return replacement.first == c; });
    if (found == replacements.end()) {
      out += c;
    } else {
      out += found->second;
    }
  }
  return out;
}

// Levenshtein distance, ignoring case: how many single-character edits turn `a` into `b`.
// Used to suggest the key a user probably meant.
inline size_t editDistanceIgnoreCase(std::string_view a, std::string_view b) {
  const std::string x = toLower(a);
  const std::string y = toLower(b);
  std::vector<size_t> previous(y.size() + 1);
  std::vector<size_t> current(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= x.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= y.size(); ++j) {
      const size_t substitution = previous[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[y.size()];
}

}  // namespace tide
