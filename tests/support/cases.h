#pragma once

// Table-driven checks: one expectation per row of a table, each failure naming its row.

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace tide::testing_support {

// A row of a two-argument predicate's table: `holds(a, b)` is expected to be `expected`.
struct PairCase {
  std::string a;
  std::string b;
  bool expected;
};

// Expects `holds(a, b) == expected` for every row.
template <typename Predicate>
void expectEachPair(Predicate holds, std::initializer_list<PairCase> rows) {
  for (const PairCase& row : rows) {
    EXPECT_EQ(holds(row.a, row.b), row.expected) << "(\"" << row.a << "\", \"" << row.b << "\")";
  }
}

}  // namespace tide::testing_support
