// A tiny JSON reader for test fixtures (header-only): objects, arrays, numbers, strings, true/false/null.
// Each value keeps the span of its source text, so a member can be handed on verbatim (e.g. a model
// spec to nnstudio::parseModelSpec). Throws std::runtime_error with the offset on malformed input.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace test_json {

struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;
  size_t begin = 0, end = 0;  // source span [begin, end)

  // The member `key`; throws when absent so a broken fixture fails loudly.
  const Value& at(const std::string& key) const {
    const auto found = object.find(key);
    if (type != Type::Object || found == object.end()) throw std::runtime_error("fixture: missing member \"" + key + "\"");
    return found->second;
  }
  bool has(const std::string& key) const { return type == Type::Object && object.count(key) != 0; }
  std::vector<double> numbers() const {
    if (type != Type::Array) throw std::runtime_error("fixture: expected an array of numbers");
    std::vector<double> out;
    out.reserve(array.size());
    for (const Value& item : array) {
      if (item.type != Type::Number) throw std::runtime_error("fixture: expected a number");
      out.push_back(item.number);
    }
    return out;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}
  Value parseDocument() {
    Value value = parseValue();
    skipSpace();
    if (pos_ != text_.size()) fail("trailing characters");
    return value;
  }

 private:
  const std::string& text_;
  size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  std::string parseString() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) break;
        const char escape = text_[pos_++];
        switch (escape) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': pos_ += 4; c = '?'; break;  // fixtures are ASCII; keep a placeholder
          default: c = escape;
        }
      }
      out += c;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  Value parseValue() {
    skipSpace();
    if (pos_ >= text_.size()) fail("expected a value");
    Value value;
    value.begin = pos_;
    const char c = text_[pos_];
    if (c == '{') {
      value.type = Value::Type::Object;
      ++pos_;
      if (!consume('}')) {
        do {
          skipSpace();
          std::string key = parseString();
          expect(':');
          value.object[key] = parseValue();
        } while (consume(','));
        expect('}');
      }
    } else if (c == '[') {
      value.type = Value::Type::Array;
      ++pos_;
      if (!consume(']')) {
        do value.array.push_back(parseValue());
        while (consume(','));
        expect(']');
      }
    } else if (c == '"') {
      value.type = Value::Type::String;
      value.string = parseString();
    } else if (text_.compare(pos_, 4, "true") == 0 || text_.compare(pos_, 5, "false") == 0) {
      value.type = Value::Type::Bool;
      value.boolean = text_[pos_] == 't';
      pos_ += value.boolean ? 4 : 5;
    } else if (text_.compare(pos_, 4, "null") == 0) {
      pos_ += 4;
    } else {
      const char* start = text_.c_str() + pos_;
      char* stop = nullptr;
      value.type = Value::Type::Number;
      value.number = std::strtod(start, &stop);
      if (stop == start) fail("unexpected character");
      pos_ += size_t(stop - start);
    }
    value.end = pos_;
    return value;
  }
};

inline Value parse(const std::string& text) { return Parser(text).parseDocument(); }

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The source text of `value` inside `document`.
inline std::string rawText(const std::string& document, const Value& value) {
  return document.substr(value.begin, value.end - value.begin);
}

}  // namespace test_json
