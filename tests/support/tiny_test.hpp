// SPDX-License-Identifier: Apache-2.0
// microattn tiny test runner: the GoogleTest subset the tests use, for targets without
// GoogleTest (Cortex-M). No heap, no exceptions, no RTTI, no stdio: output goes through one
// function, microattn_tiny_test_write(), that the platform provides (tiny_main.cpp does it with
// fwrite on hosted builds, ports/cortex-m with semihosting).
//
// Supported: TEST(Suite, Name); EXPECT_/ASSERT_ EQ NE LT LE GT GE TRUE FALSE NEAR;
// FAIL(), ADD_FAILURE(), SUCCEED(); `<< message` after any of them (integers, enums, bool,
// float, double, const char*, pointers). ASSERT_* returns from the enclosing void function
// (test body or lambda), as in GoogleTest.
//
// Tests register themselves from static constructors (the startup code runs .init_array) into
// an intrusive list: every node is a static object, so registration cannot allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>  // also reached through gtest.h; some tests rely on that
#include <limits>
#include <type_traits>

/// Writes n bytes of text to the console. Provided by the platform, not by this header.
extern "C" void microattn_tiny_test_write(const char* s, std::size_t n);

namespace microattn {
namespace tiny_test {

// ---------------------------------------------------------------- output

/// Fixed-size text buffer, flushed to the console when full; formats numbers itself because
/// newlib's printf family allocates (its dtoa uses malloc).
class Out {
 public:
  Out() = default;
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  ~Out() { flush(); }

  void flush() {
    if (n_) microattn_tiny_test_write(buf_, n_);
    n_ = 0;
  }
  /// A holding buffer keeps its text until flush() and drops what does not fit.
  explicit Out(bool holding) : holding_(holding) {}
  void put(char c) {
    if (n_ == sizeof(buf_)) {
      if (holding_) return;
      flush();
    }
    buf_[n_++] = c;
  }
  void str(const char* s) {
    if (!s) s = "(null)";
    while (*s) put(*s++);
  }
  void u64(std::uint64_t v) {
    char d[20] = {};
    int i = 0;
    do {
      d[i++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (i) put(d[--i]);
  }
  void i64(std::int64_t v) {
    if (v < 0) {
      put('-');
      u64(~static_cast<std::uint64_t>(v) + 1);
    } else {
      u64(static_cast<std::uint64_t>(v));
    }
  }
  void hex(std::uintptr_t v) {
    str("0x");
    for (int sh = static_cast<int>(sizeof(v) * 8) - 4; sh >= 0; sh -= 4)
      put("0123456789abcdef"[(v >> sh) & 0xf]);
  }
  /// Like printf("%.*g", digits, v), to within the last digit: enough to read a failure.
  void dbl(double v, int digits = 9) {
    if (v != v) return str("nan");
    if (v < 0 || (v == 0 && 1 / v < 0)) {
      put('-');
      v = -v;
    }
    if (v > 1.7976931348623157e308) return str("inf");
    if (v == 0) return put('0');
    int e10 = 0;  // v = m * 10^e10 with 1 <= m < 10
    double m = v;
    while (m >= 1e16) m /= 1e16, e10 += 16;
    while (m >= 10) m /= 10, ++e10;
    while (m < 1e-16) m *= 1e16, e10 -= 16;
    while (m < 1) m *= 10, --e10;
    // Round m to `digits` significant digits as an integer.
    double scale = 1;
    for (int i = 1; i < digits; ++i) scale *= 10;
    std::uint64_t q = static_cast<std::uint64_t>(m * scale + 0.5);
    if (static_cast<double>(q) >= scale * 10) q /= 10, ++e10;
    char d[20] = {};
    for (int i = digits - 1; i >= 0; --i) d[i] = static_cast<char>('0' + q % 10), q /= 10;
    int last = digits - 1;  // drop trailing zeros
    while (last > 0 && d[last] == '0') --last;
    if (e10 >= -5 && e10 < digits) {  // fixed notation
      if (e10 < 0) {
        str("0.");
        for (int i = -1; i > e10; --i) put('0');
        for (int i = 0; i <= last; ++i) put(d[i]);
      } else {
        for (int i = 0; i <= e10; ++i) put(i <= last ? d[i] : '0');
        if (last > e10) {
          put('.');
          for (int i = e10 + 1; i <= last; ++i) put(d[i]);
        }
      }
    } else {  // scientific
      put(d[0]);
      if (last > 0) {
        put('.');
        for (int i = 1; i <= last; ++i) put(d[i]);
      }
      put('e');
      if (e10 < 0)
        put('-'), e10 = -e10;
      else
        put('+');
      if (e10 < 10) put('0');
      u64(static_cast<std::uint64_t>(e10));
    }
  }

 private:
  char buf_[160];
  std::size_t n_ = 0;
  bool holding_ = false;
};

/// Prints any value the tests stream or compare; unknown types print as "<?>".
template <class T>
void print(Out& o, const T& v) {
  using U = typename std::decay<T>::type;
  if constexpr (std::is_same<U, bool>::value) {
    o.str(v ? "true" : "false");
  } else if constexpr (std::is_same<U, char>::value) {
    o.put(v);
  } else if constexpr (std::is_enum<U>::value) {
    o.i64(static_cast<std::int64_t>(v));
  } else if constexpr (std::is_integral<U>::value && std::is_signed<U>::value) {
    o.i64(static_cast<std::int64_t>(v));
  } else if constexpr (std::is_integral<U>::value) {
    o.u64(static_cast<std::uint64_t>(v));
  } else if constexpr (std::is_same<U, float>::value) {
    o.dbl(static_cast<double>(v), 9);  // 9 digits round-trip a float
  } else if constexpr (std::is_floating_point<U>::value) {
    o.dbl(static_cast<double>(v), 15);
  } else if constexpr (std::is_same<U, const char*>::value || std::is_same<U, char*>::value) {
    o.str(v);
  } else if constexpr (std::is_pointer<U>::value) {
    o.hex(reinterpret_cast<std::uintptr_t>(v));
  } else if constexpr (std::is_same<U, std::nullptr_t>::value) {
    o.str("nullptr");
  } else {
    o.str("<?>");
  }
}

// ---------------------------------------------------------------- registry

struct TestCase {
  const char* suite;
  const char* name;
  void (*body)();
  TestCase* next;
};

/// The list of tests in registration order (declaration order within a file).
struct Registry {
  TestCase* head = nullptr;
  TestCase* tail = nullptr;
  static Registry& get() {
    static Registry r;  // trivially destructible: no atexit registration
    return r;
  }
};

struct Registrar {
  explicit Registrar(TestCase* t) {
    Registry& r = Registry::get();
    if (r.tail)
      r.tail->next = t;
    else
      r.head = t;
    r.tail = t;
  }
};

/// Failures of the running test (reset by the runner before each test).
struct Stats {
  unsigned failures_in_test = 0;
  static Stats& get() {
    static Stats s;
    return s;
  }
};

// ---------------------------------------------------------------- failures

/// Collects `<< message` after a failed check; prints it and the end of the report.
class Message {
 public:
  Message() = default;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  template <class T>
  Message& operator<<(const T& v) {
    print(text_, v);
    started_ = true;
    return *this;
  }
  /// Prints "  message: ..." (if anything was streamed) after the failure head.
  void print_to(Out& o) {
    if (!started_) return;
    o.str("  message: ");
    o.flush();
    text_.flush();
    o.put('\n');
  }

 private:
  Out text_{true};  // held until the head is printed; long messages are cut
  bool started_ = false;
};

/// The failure report head; `Failure(...) = Message() << ...` ends it (operator= has lower
/// precedence than <<, so the whole message is built first) and yields void, which is what
/// lets ASSERT_* be `return Failure(...) = Message() << ...;`.
class Failure {
 public:
  Failure(const char* file, int line, const char* what) : file_(file), line_(line), what_(what) {}
  Failure& values() { return *this; }
  void operator=(Message& m) {
    Out o;
    ++Stats::get().failures_in_test;
    o.str(file_);
    o.put(':');
    o.u64(static_cast<std::uint64_t>(line_));
    o.str(": Failure\n  ");
    o.str(what_);
    o.put('\n');
    if (report_) report_(o, a_, b_, c_);
    m.print_to(o);
  }
  template <class A, class B>
  Failure& with(const A& a, const B& b) {
    a_ = &a;
    b_ = &b;
    report_ = [](Out& o, const void* pa, const void* pb, const void*) {
      o.str("    left:  ");
      print(o, *static_cast<const A*>(pa));
      o.str("\n    right: ");
      print(o, *static_cast<const B*>(pb));
      o.put('\n');
    };
    return *this;
  }
  template <class A, class B, class C>
  Failure& with(const A& a, const B& b, const C& tol) {
    a_ = &a;
    b_ = &b;
    c_ = &tol;
    report_ = [](Out& o, const void* pa, const void* pb, const void* pc) {
      const double x = static_cast<double>(*static_cast<const A*>(pa));
      const double y = static_cast<double>(*static_cast<const B*>(pb));
      o.str("    left:  ");
      print(o, *static_cast<const A*>(pa));
      o.str("\n    right: ");
      print(o, *static_cast<const B*>(pb));
      o.str("\n    diff:  ");
      o.dbl(x > y ? x - y : y - x, 9);
      o.str(" > tolerance ");
      print(o, *static_cast<const C*>(pc));
      o.put('\n');
    };
    return *this;
  }

 private:
  const char* file_;
  int line_;
  const char* what_;
  const void* a_ = nullptr;
  const void* b_ = nullptr;
  const void* c_ = nullptr;
  void (*report_)(Out&, const void*, const void*, const void*) = nullptr;
};

/// Lets `Message() << ...` bind to Failure::operator=(Message&) although it is a temporary.
inline Message& as_lvalue(Message&& m) { return m; }

/// The result of evaluating a binary check once; keeps copies of both operands for the report.
template <class A, class B>
struct Operands {
  A first;
  B second;
};

template <class A, class B>
inline bool near(const A& a, const B& b, double tol) {
  const double x = static_cast<double>(a), y = static_cast<double>(b);
  const double d = x > y ? x - y : y - x;
  return d <= tol;  // NaN anywhere fails
}

/// Runs the registered tests whose "Suite.Name" matches pattern ('*', '?' wildcards; null runs
/// all), prints a line per test, failures and the closing "N passed, N failed"; returns the
/// number of failed tests, capped at 255. Defined in tiny_main.cpp.
int run_all(const char* pattern = nullptr);

}  // namespace tiny_test
}  // namespace microattn

// ---------------------------------------------------------------- macros

#define MICROATTN_TT_CAT_(a, b) a##b
#define MICROATTN_TT_CAT(a, b) MICROATTN_TT_CAT_(a, b)

#define TEST(suite, name)                                                             \
  static void MICROATTN_TT_CAT(suite##_##name, _body)();                              \
  static ::microattn::tiny_test::TestCase MICROATTN_TT_CAT(suite##_##name, _case) = { \
      #suite, #name, &MICROATTN_TT_CAT(suite##_##name, _body), nullptr};              \
  static const ::microattn::tiny_test::Registrar MICROATTN_TT_CAT(                    \
      suite##_##name, _reg){&MICROATTN_TT_CAT(suite##_##name, _case)};                \
  static void MICROATTN_TT_CAT(suite##_##name, _body)()

// `switch (0) case 0: default:` keeps a dangling `else` after the macro from binding to our
// `if` (GoogleTest's GTEST_AMBIGUOUS_ELSE_BLOCKER_).
#define MICROATTN_TT_BLOCKER_ \
  switch (0)                  \
  case 0:                     \
  default:

// Binary comparison: evaluates each operand once, then reports both on failure.
#define MICROATTN_TT_BINARY_(on_fail, a, op, b, text)                                         \
  MICROATTN_TT_BLOCKER_                                                                       \
  if (const auto microattn_tt_v =                                                             \
          ::microattn::tiny_test::Operands<typename std::decay<decltype(a)>::type,            \
                                           typename std::decay<decltype(b)>::type>{(a), (b)}; \
      microattn_tt_v.first op microattn_tt_v.second)                                          \
    ;                                                                                         \
  else                                                                                        \
    on_fail ::microattn::tiny_test::Failure(__FILE__, __LINE__, text)                         \
        .with(microattn_tt_v.first, microattn_tt_v.second) =                                  \
        ::microattn::tiny_test::as_lvalue(::microattn::tiny_test::Message())

#define MICROATTN_TT_BOOL_(on_fail, cond, expect, text)                 \
  MICROATTN_TT_BLOCKER_                                                 \
  if (static_cast<bool>(cond) == (expect))                              \
    ;                                                                   \
  else                                                                  \
    on_fail ::microattn::tiny_test::Failure(__FILE__, __LINE__, text) = \
        ::microattn::tiny_test::as_lvalue(::microattn::tiny_test::Message())

#define MICROATTN_TT_NEAR_(on_fail, a, b, tol, text)                                          \
  MICROATTN_TT_BLOCKER_                                                                       \
  if (const auto microattn_tt_v =                                                             \
          ::microattn::tiny_test::Operands<typename std::decay<decltype(a)>::type,            \
                                           typename std::decay<decltype(b)>::type>{(a), (b)}; \
      ::microattn::tiny_test::near(microattn_tt_v.first, microattn_tt_v.second,               \
                                   static_cast<double>(tol)))                                 \
    ;                                                                                         \
  else                                                                                        \
    on_fail ::microattn::tiny_test::Failure(__FILE__, __LINE__, text)                         \
        .with(microattn_tt_v.first, microattn_tt_v.second, static_cast<double>(tol)) =        \
        ::microattn::tiny_test::as_lvalue(::microattn::tiny_test::Message())

#define MICROATTN_TT_EXPECT_ /* nothing: go on */
#define MICROATTN_TT_ASSERT_ return

#define EXPECT_EQ(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_EXPECT_, a, ==, b, "EXPECT_EQ(" #a ", " #b ")")
#define EXPECT_NE(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_EXPECT_, a, !=, b, "EXPECT_NE(" #a ", " #b ")")
#define EXPECT_LT(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_EXPECT_, a, <, b, "EXPECT_LT(" #a ", " #b ")")
#define EXPECT_LE(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_EXPECT_, a, <=, b, "EXPECT_LE(" #a ", " #b ")")
#define EXPECT_GT(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_EXPECT_, a, >, b, "EXPECT_GT(" #a ", " #b ")")
#define EXPECT_GE(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_EXPECT_, a, >=, b, "EXPECT_GE(" #a ", " #b ")")
#define EXPECT_TRUE(c) MICROATTN_TT_BOOL_(MICROATTN_TT_EXPECT_, c, true, "EXPECT_TRUE(" #c ")")
#define EXPECT_FALSE(c) MICROATTN_TT_BOOL_(MICROATTN_TT_EXPECT_, c, false, "EXPECT_FALSE(" #c ")")
#define EXPECT_NEAR(a, b, tol) \
  MICROATTN_TT_NEAR_(MICROATTN_TT_EXPECT_, a, b, tol, "EXPECT_NEAR(" #a ", " #b ", " #tol ")")

#define ASSERT_EQ(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_ASSERT_, a, ==, b, "ASSERT_EQ(" #a ", " #b ")")
#define ASSERT_NE(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_ASSERT_, a, !=, b, "ASSERT_NE(" #a ", " #b ")")
#define ASSERT_LT(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_ASSERT_, a, <, b, "ASSERT_LT(" #a ", " #b ")")
#define ASSERT_LE(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_ASSERT_, a, <=, b, "ASSERT_LE(" #a ", " #b ")")
#define ASSERT_GT(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_ASSERT_, a, >, b, "ASSERT_GT(" #a ", " #b ")")
#define ASSERT_GE(a, b) \
  MICROATTN_TT_BINARY_(MICROATTN_TT_ASSERT_, a, >=, b, "ASSERT_GE(" #a ", " #b ")")
#define ASSERT_TRUE(c) MICROATTN_TT_BOOL_(MICROATTN_TT_ASSERT_, c, true, "ASSERT_TRUE(" #c ")")
#define ASSERT_FALSE(c) MICROATTN_TT_BOOL_(MICROATTN_TT_ASSERT_, c, false, "ASSERT_FALSE(" #c ")")
#define ASSERT_NEAR(a, b, tol) \
  MICROATTN_TT_NEAR_(MICROATTN_TT_ASSERT_, a, b, tol, "ASSERT_NEAR(" #a ", " #b ", " #tol ")")

#define ADD_FAILURE() MICROATTN_TT_BOOL_(MICROATTN_TT_EXPECT_, false, true, "ADD_FAILURE()")
#define FAIL() MICROATTN_TT_BOOL_(MICROATTN_TT_ASSERT_, false, true, "FAIL()")
#define SUCCEED() static_cast<void>(0)
