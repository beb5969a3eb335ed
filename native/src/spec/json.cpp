// A recursive-descent JSON reader (see json.h).
#include "spec/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "nnstudio/engine.h"

namespace nnstudio::json {

const Value* Value::find(const std::string& key) const {
  for (const auto& member : object)
    if (member.first == key) return &member.second;
  return nullptr;
}

const char* typeName(Value::Type type) {
  switch (type) {
    case Value::Type::Null: return "null";
    case Value::Type::Bool: return "a boolean";
    case Value::Type::Number: return "a number";
    case Value::Type::String: return "a string";
    case Value::Type::Array: return "an array";
    case Value::Type::Object: return "an object";
  }
  return "a value";
}

namespace {

constexpr int kMaxDepth = 64;  // specs are shallow; this bounds the recursion on hostile input

struct Parser {
  const std::string& text;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; column = 1; } else { ++column; }
    }
    throw SpecError("invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) ++pos;
  }

  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) { ++pos; return true; }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) {
      if (pos >= text.size()) fail(std::string("unexpected end of input, expected '") + c + "'");
      fail(std::string("expected '") + c + "', found '" + text[pos] + "'");
    }
  }

  void literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (text.compare(pos, n, word) != 0) fail("unexpected token");
    pos += n;
  }

  static void appendUtf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  unsigned hex4() {
    if (pos + 4 > text.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else fail("bad \\u escape");
    }
    return v;
  }

  std::string parseString() {
    // the opening quote has been consumed
    std::string out;
    while (true) {
      if (pos >= text.size()) fail("unterminated string");
      char c = text[pos++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') { out += c; continue; }
      if (pos >= text.size()) fail("unterminated string");
      char e = text[pos++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && pos + 6 <= text.size() && text[pos] == '\\' && text[pos + 1] == 'u') {
            pos += 2;
            unsigned low = hex4();
            if (low >= 0xDC00 && low < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          appendUtf8(out, cp);
          break;
        }
        default: --pos; fail("bad escape in string");
      }
    }
  }

  double parseNumber() {
    size_t start = pos;
    if (text[pos] == '-') ++pos;
    auto digits = [&] {
      size_t d = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
      return pos - d;
    };
    if (pos < text.size() && text[pos] == '0') ++pos;
    else if (digits() == 0) fail("bad number");
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      if (digits() == 0) fail("bad number");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) ++pos;
      if (digits() == 0) fail("bad number");
    }
    std::string token = text.substr(start, pos - start);
    double v = std::strtod(token.c_str(), nullptr);
    if (!std::isfinite(v)) { pos = start; fail("number out of range"); }
    return v;
  }

  Value parseValue(int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    skipSpace();
    if (pos >= text.size()) fail("unexpected end of input");
    Value v;
    char c = text[pos];
    if (c == '{') {
      ++pos;
      v.type = Value::Type::Object;
      if (consume('}')) return v;
      do {
        skipSpace();
        if (pos >= text.size() || text[pos] != '"') fail("expected a string key");
        ++pos;
        std::string key = parseString();
        expect(':');
        v.object.emplace_back(std::move(key), parseValue(depth + 1));
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      ++pos;
      v.type = Value::Type::Array;
      if (consume(']')) return v;
      do {
        v.array.push_back(parseValue(depth + 1));
      } while (consume(','));
      expect(']');
    } else if (c == '"') {
      ++pos;
      v.type = Value::Type::String;
      v.string = parseString();
    } else if (c == 't') {
      literal("true");
      v.type = Value::Type::Bool;
      v.boolean = true;
    } else if (c == 'f') {
      literal("false");
      v.type = Value::Type::Bool;
    } else if (c == 'n') {
      literal("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = Value::Type::Number;
      v.number = parseNumber();
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }
};

}  // namespace

namespace {
void serializeTo(const Value& v, std::string& out) {
  switch (v.type) {
    case Value::Type::Null: out += "null"; break;
    case Value::Type::Bool: out += v.boolean ? "true" : "false"; break;
    case Value::Type::Number: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v.number);
      out += buf;
      break;
    }
    case Value::Type::String:
      out += '"';
      for (char c : v.string) {
        if (c == '"' || c == '\\') { out += '\\'; out += c; }
        else if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          out += buf;
        } else out += c;
      }
      out += '"';
      break;
    case Value::Type::Array:
      out += '[';
      for (size_t i = 0; i < v.array.size(); ++i) {
        if (i) out += ',';
        serializeTo(v.array[i], out);
      }
      out += ']';
      break;
    case Value::Type::Object:
      out += '{';
      for (size_t i = 0; i < v.object.size(); ++i) {
        if (i) out += ',';
        Value key;
        key.type = Value::Type::String;
        key.string = v.object[i].first;
        serializeTo(key, out);
        out += ':';
        serializeTo(v.object[i].second, out);
      }
      out += '}';
      break;
  }
}
}  // namespace

std::string serialize(const Value& value) {
  std::string out;
  serializeTo(value, out);
  return out;
}

Value parse(const std::string& text) {
  Parser p{text};
  Value v = p.parseValue(0);
  p.skipSpace();
  if (p.pos != text.size()) p.fail("unexpected text after the end of the document");
  return v;
}

}  // namespace nnstudio::json
