// A small self-contained JSON reader for model specs: enough of RFC 8259 to read what JSON.stringify
// writes (objects, arrays, strings with escapes, numbers, true/false/null). Errors carry line:column.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace nnstudio::json {

struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::vector<std::pair<std::string, Value>> object;  // keys in document order

  bool isNull() const { return type == Type::Null; }
  bool isNumber() const { return type == Type::Number; }
  bool isString() const { return type == Type::String; }
  bool isArray() const { return type == Type::Array; }
  bool isObject() const { return type == Type::Object; }
  // The member `key` of an object, or nullptr.
  const Value* find(const std::string& key) const;
};

// Parses a whole document; throws nnstudio::SpecError("invalid JSON at line L, column C: ...").
Value parse(const std::string& text);

// Compact JSON text of a value (numbers with up to 17 significant digits).
std::string serialize(const Value& value);

// "a number", "a string", ... for error messages.
const char* typeName(Value::Type type);

}  // namespace nnstudio::json
