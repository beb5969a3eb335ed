// A tiny test harness shared by the native tests: CHECK macros that print what they checked, count
// passes and failures, and a summary whose exit status ctest reads.
#pragma once

#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

namespace nnstudio_test {

inline int& passed() { static int n = 0; return n; }
inline int& failed() { static int n = 0; return n; }
inline bool& verbose() { static bool v = true; return v; }

inline void report(bool ok, const std::string& what, const char* file, int line, const std::string& detail = "") {
  if (ok) {
    ++passed();
    if (verbose()) std::printf("  ok    %s%s%s\n", what.c_str(), detail.empty() ? "" : "  | ", detail.c_str());
  } else {
    ++failed();
    std::printf("  FAIL  %s  (%s:%d)%s%s\n", what.c_str(), file, line, detail.empty() ? "" : "\n        ", detail.c_str());
  }
}

inline int summary() {
  std::printf("%d passed, %d failed\n", passed(), failed());
  return failed() == 0 ? 0 : 1;
}

inline std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace nnstudio_test

#define CHECK(cond) ::nnstudio_test::report(bool(cond), #cond, __FILE__, __LINE__)
#define CHECK_MSG(cond, what) ::nnstudio_test::report(bool(cond), what, __FILE__, __LINE__)
// |a - b| <= tol
#define CHECK_NEAR(a, b, tol)                                                                                  \
  do {                                                                                                         \
    const double a_ = double(a), b_ = double(b);                                                               \
    ::nnstudio_test::report(std::fabs(a_ - b_) <= double(tol), #a " ~ " #b, __FILE__, __LINE__,                \
                            "got " + ::nnstudio_test::num(a_) + " vs " + ::nnstudio_test::num(b_) + " (tol " +  \
                                ::nnstudio_test::num(double(tol)) + ")");                                      \
  } while (0)
// expr throws ExceptionType whose what() contains `fragment`
#define CHECK_THROWS(expr, ExceptionType, fragment)                                                            \
  do {                                                                                                         \
    std::string msg_;                                                                                          \
    bool threw_ = false, right_ = false;                                                                       \
    try {                                                                                                      \
      (void)(expr);                                                                                            \
    } catch (const ExceptionType& e_) {                                                                        \
      threw_ = true;                                                                                           \
      msg_ = e_.what();                                                                                        \
      right_ = msg_.find(fragment) != std::string::npos;                                                       \
    } catch (const std::exception& e_) {                                                                       \
      threw_ = true;                                                                                           \
      msg_ = std::string("other exception: ") + e_.what();                                                     \
    }                                                                                                          \
    ::nnstudio_test::report(threw_ && right_, std::string(#expr " throws \"") + (fragment) + "\"", __FILE__,   \
                            __LINE__, threw_ ? "message: " + msg_ : "did not throw");                          \
  } while (0)
