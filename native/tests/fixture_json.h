// Reading the PyTorch fixtures with the engine's own JSON reader (src/spec/json.h), plus the few helpers
// a test needs: a member that must exist, an array of numbers, a whole file.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "spec/json.h"

namespace fixture_json {

using nnstudio::json::Value;

// The member `key`; throws when absent so a broken fixture fails loudly.
inline const Value& at(const Value& object, const std::string& key) {
  const Value* found = object.find(key);
  if (!found) throw std::runtime_error("fixture: missing member \"" + key + "\"");
  return *found;
}

inline std::vector<double> numbers(const Value& array) {
  if (!array.isArray()) throw std::runtime_error("fixture: expected an array of numbers");
  std::vector<double> out;
  out.reserve(array.array.size());
  for (const Value& item : array.array) {
    if (!item.isNumber()) throw std::runtime_error("fixture: expected a number");
    out.push_back(item.number);
  }
  return out;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace fixture_json
