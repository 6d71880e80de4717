#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/core/npy.hpp"

namespace {

namespace fs = std::filesystem;
using clbo::InputError;

// A fresh folder per test, removed afterwards.
class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("clbo_npy_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void write_raw(const std::string& p, const std::string& bytes) const {
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string read_raw(const std::string& p) const {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    return names;
  }

  fs::path dir_;
};

// A .npy file built by hand: magic, version, little-endian length, `dict` padded with
// `pad` spaces and a newline, then `payload` bytes. Independent of the encoder under test.
std::string hand_npy(const std::string& dict, int version, const std::string& payload,
                     size_t pad = 0) {
  std::string body = dict + std::string(pad, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const size_t width = version == 1 ? 2 : 4;
  for (size_t i = 0; i < width; ++i) out += static_cast<char>((body.size() >> (8 * i)) & 0xff);
  return out + body + payload;
}

std::string floats_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::vector<float> iota_floats(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 3.0f;
  return v;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Runs `fn`, expecting an InputError whose field is `field` and whose value contains
// `value_part`; returns the message for further checks.
template <class Fn>
std::string expect_input_error(Fn&& fn, const std::string& field, const std::string& value_part) {
  try {
    fn();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.value().find(value_part), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError on field " << field;
  return {};
}

TEST_F(Npy, HeaderMatchesNumPyLayout) {
  // NumPy writes exactly these 128 bytes of header for a float32 array of shape (2, 3):
  // 10 bytes of preamble, header length 118 ('v'), the dict, spaces, '\n'.
  const std::string h = clbo::encode_npy_header_f32({2, 3});
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 10), std::string("\x93NUMPY\x01\x00v\x00", 10));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(h.substr(10, dict.size()), dict);
  EXPECT_EQ(h.find_first_not_of(' ', 10 + dict.size()), h.size() - 1);
  EXPECT_EQ(h.back(), '\n');
}

TEST_F(Npy, HeaderKeepsNumPysRoomToGrowTheFirstAxis) {
  // NumPy 1.24 pads with at least 21 − digits(shape[0]) spaces: for 21 dimensions of 1 the
  // 116-byte dict plus 20 spaces no longer fits 128 bytes, so NumPy writes 192.
  const std::vector<int64_t> shape(21, 1);
  const std::string h = clbo::encode_npy_header_f32(shape);
  EXPECT_EQ(h.size(), 192u);
  EXPECT_EQ(static_cast<unsigned char>(h[8]), 0xb6u);
  EXPECT_LE(h.find('}') + 1 + 20, h.size() - 1);  // at least 20 spaces before the '\n'
}

TEST_F(Npy, HeaderPaddingIsAMultipleOf64ForManyShapes) {
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {0}, {1}, {7}, {12345678901}, {2, 3}, {100, 8, 1000000}, {1, 1, 1, 1, 1, 1, 1, 1}};
  for (const auto& shape : shapes) {
    for (int version : {1, 2, 3}) {
      const std::string h = clbo::encode_npy_header_f32(shape, version);
      EXPECT_EQ(h.size() % 64, 0u) << clbo::npy_shape_string(shape);
      EXPECT_EQ(h.back(), '\n');
      const auto parsed = clbo::parse_npy_header(h, "mem");
      EXPECT_EQ(parsed.shape, shape);
      EXPECT_EQ(parsed.version, version);
      EXPECT_EQ(parsed.data_offset, h.size());
    }
  }
}

TEST_F(Npy, ShapeStringsFollowPython) {
  EXPECT_EQ(clbo::npy_shape_string({}), "()");
  EXPECT_EQ(clbo::npy_shape_string({5}), "(5,)");
  EXPECT_EQ(clbo::npy_shape_string({2, 3, 4}), "(2, 3, 4)");
}

TEST_F(Npy, RoundTripsZeroOneAndThreeDimensionalArrays) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3, 4}, {0, 3}, {3, 0, 2}};
  for (const auto& shape : shapes) {
    size_t n = 1;
    for (auto d : shape) n *= static_cast<size_t>(d);
    auto data = iota_floats(n);
    if (n >= 3) {
      data[0] = -0.0f;
      data[1] = std::numeric_limits<float>::denorm_min();
      data[2] = std::numeric_limits<float>::infinity();
    }
    const std::string p = path("a.npy");
    clbo::write_npy_f32(p, shape, data.data());
    const auto a = clbo::read_npy_f32(p);
    EXPECT_EQ(a.shape, shape) << clbo::npy_shape_string(shape);
    EXPECT_TRUE(bitwise_equal(a.data, data)) << clbo::npy_shape_string(shape);
    EXPECT_EQ(fs::file_size(p) % 64, (n * 4) % 64);
  }
}

TEST_F(Npy, RoundTripsVersionTwo) {
  const auto data = iota_floats(6);
  const std::string bytes = clbo::encode_npy_f32({3, 2}, data.data(), 2);
  ASSERT_EQ(bytes[6], 2);
  write_raw(path("v2.npy"), bytes);
  clbo::NpyMappedF32 in(path("v2.npy"));
  EXPECT_EQ(in.header().version, 2);
  EXPECT_EQ(in.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(bitwise_equal(std::vector<float>(in.data(), in.data() + in.count()), data));
}

TEST_F(Npy, ReadsHandBuiltVersionThree) {
  // Version 3.0 differs from 2.0 only in allowing utf-8 in the header; double quotes and
  // odd spacing are valid Python literals too.
  const auto data = iota_floats(4);
  const std::string dict = "{\"descr\":\"<f4\" , \"shape\" : (2,2) ,'fortran_order':False}";
  write_raw(path("v3.npy"), hand_npy(dict, 3, floats_bytes(data), 128 - (12 + dict.size() + 1)));
  const auto a = clbo::read_npy_f32(path("v3.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(bitwise_equal(a.data, data));
}

TEST_F(Npy, LargeHeaderUpgradesToVersionTwo) {
  // 30000 dimensions of 1 need a dict longer than version 1's 16-bit length allows.
  const std::vector<int64_t> shape(30000, 1);
  const float one = 1.5f;
  const std::string bytes = clbo::encode_npy_f32(shape, &one);
  EXPECT_EQ(bytes[6], 2);
  write_raw(path("big.npy"), bytes);
  const auto a = clbo::read_npy_f32(path("big.npy"));
  EXPECT_EQ(a.shape, shape);
  ASSERT_EQ(a.data.size(), 1u);
  EXPECT_EQ(a.data[0], 1.5f);
}

TEST_F(Npy, AcceptsNativeOrderAndPythonTwoLongs) {
  const auto data = iota_floats(6);
  write_raw(path("old.npy"),
            hand_npy("{'descr': '=f4', 'fortran_order': False, 'shape': (2L, 3L), }", 1,
                     floats_bytes(data)));
  const auto a = clbo::read_npy_f32(path("old.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(bitwise_equal(a.data, data));
}

TEST_F(Npy, UnalignedPayloadIsCopied) {
  // A hand-made header whose payload starts at an odd offset: the mapped reader must not
  // hand out a misaligned float pointer.
  const auto data = iota_floats(5);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
  const std::string bytes = hand_npy(dict, 1, floats_bytes(data), 1);
  ASSERT_NE((10 + dict.size() + 2) % 4, 0u);
  write_raw(path("odd.npy"), bytes);
  clbo::NpyMappedF32 in(path("odd.npy"));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(in.data()) % alignof(float), 0u);
  EXPECT_TRUE(bitwise_equal(std::vector<float>(in.data(), in.data() + in.count()), data));
}

// ---- rejections -------------------------------------------------------------------------

std::string dict_with(const std::string& descr, const std::string& fortran,
                      const std::string& shape) {
  return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

TEST_F(Npy, RejectsOtherDtypes) {
  const std::string p = path("f8.npy");
  write_raw(p, hand_npy(dict_with("'<f8'", "False", "(2,)"), 1, std::string(16, '\0')));
  const std::string msg = expect_input_error([&] { clbo::read_npy_f32(p); }, "descr", "'<f8'");
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  for (const std::string descr : {"'>f4'", "'|u1'", "'<i4'", "'<f2'", "[('a', '<f4')]"}) {
    write_raw(p, hand_npy(dict_with(descr, "False", "(2,)"), 1, std::string(8, '\0')));
    expect_input_error([&] { clbo::read_npy_f32(p); }, "descr", descr);
  }
}

TEST_F(Npy, RejectsFortranOrder) {
  const std::string p = path("f.npy");
  write_raw(p, hand_npy(dict_with("'<f4'", "True", "(2, 2)"), 1, std::string(16, '\0')));
  const std::string msg =
      expect_input_error([&] { clbo::read_npy_f32(p); }, "fortran_order", "True");
  EXPECT_NE(msg.find("ascontiguousarray"), std::string::npos) << msg;
  write_raw(p, hand_npy(dict_with("'<f4'", "0", "(2, 2)"), 1, std::string(16, '\0')));
  expect_input_error([&] { clbo::read_npy_f32(p); }, "fortran_order", "0");
}

TEST_F(Npy, RejectsTruncatedPayload) {
  const auto data = iota_floats(12);
  std::string bytes = clbo::encode_npy_f32({3, 4}, data.data());
  bytes.resize(bytes.size() - 5);
  write_raw(path("t.npy"), bytes);
  const std::string msg =
      expect_input_error([&] { clbo::read_npy_f32(path("t.npy")); }, "payload", "43 bytes");
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_THROW(clbo::NpyMappedF32 m(path("t.npy")), InputError);
}

TEST_F(Npy, RejectsTrailingBytes) {
  const auto data = iota_floats(4);
  write_raw(path("t.npy"), clbo::encode_npy_f32({4}, data.data()) + "junk");
  expect_input_error([&] { clbo::read_npy_f32(path("t.npy")); }, "payload", "20 bytes");
}

TEST_F(Npy, RejectsTruncatedHeader) {
  const std::string full = clbo::encode_npy_header_f32({4});
  for (size_t len : {size_t{0}, size_t{3}, size_t{7}, size_t{9}, size_t{40}, full.size() - 1}) {
    write_raw(path("h.npy"), full.substr(0, len));
    EXPECT_THROW(clbo::read_npy_f32(path("h.npy")), InputError) << len;
  }
  write_raw(path("h.npy"), full.substr(0, 40));
  expect_input_error([&] { clbo::read_npy_f32(path("h.npy")); }, "header_len", "118");
}

TEST_F(Npy, RejectsBadMagicAndVersion) {
  const auto data = iota_floats(2);
  std::string bytes = clbo::encode_npy_f32({2}, data.data());
  std::string bad = bytes;
  bad[1] = 'M';
  write_raw(path("m.npy"), bad);
  expect_input_error([&] { clbo::read_npy_f32(path("m.npy")); }, "magic", "MUMPY");
  write_raw(path("csv.npy"), "1,2,3\n");
  expect_input_error([&] { clbo::read_npy_f32(path("csv.npy")); }, "magic", "1,2,3");
  bad = bytes;
  bad[6] = 4;
  write_raw(path("v.npy"), bad);
  expect_input_error([&] { clbo::read_npy_f32(path("v.npy")); }, "version", "4.0");
  bad = bytes;
  bad[7] = 1;
  write_raw(path("v.npy"), bad);
  expect_input_error([&] { clbo::read_npy_f32(path("v.npy")); }, "version", "1.1");
}

TEST_F(Npy, RejectsMalformedHeaderDicts) {
  const std::string p = path("d.npy");
  const std::string payload(8, '\0');
  const std::vector<std::string> dicts = {
      "'descr': '<f4', 'fortran_order': False, 'shape': (2,)",                    // no braces
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ",                 // unterminated
      "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",                   // missing comma
      "{descr: '<f4', 'fortran_order': False, 'shape': (2,)}",                    // unquoted key
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",                // trailing text
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",  // twice
  };
  for (const auto& d : dicts) {
    write_raw(p, hand_npy(d, 1, payload));
    expect_input_error([&] { clbo::read_npy_f32(p); }, "header", "descr");
  }
}

TEST_F(Npy, RejectsUnknownAndMissingKeysWithSuggestion) {
  const std::string p = path("k.npy");
  write_raw(p, hand_npy("{'descr': '<f4', 'fortran_order': False, 'shap': (2,), }", 1,
                        std::string(8, '\0')));
  const std::string msg = expect_input_error([&] { clbo::read_npy_f32(p); }, "shap", "(2,)");
  EXPECT_NE(msg.find("did you mean 'shape'"), std::string::npos) << msg;
  write_raw(p, hand_npy("{'descr': '<f4', 'shape': (2,), }", 1, std::string(8, '\0')));
  expect_input_error([&] { clbo::read_npy_f32(p); }, "fortran_order", "missing");
}

TEST_F(Npy, RejectsBadShapes) {
  const std::string p = path("s.npy");
  for (const std::string shape : {"(-2,)", "(2)", "[2]", "(2.0,)", "(a,)", "(2,,)",
                                  "(99999999999999999999,)", "(4611686018427387904, 8)"}) {
    write_raw(p, hand_npy(dict_with("'<f4'", "False", shape), 1, std::string(8, '\0')));
    expect_input_error([&] { clbo::read_npy_f32(p); }, "shape", shape);
  }
}

TEST_F(Npy, RankCheckNamesTheShape) {
  const std::string msg = expect_input_error(
      [] {
        clbo::require_npy_rank({3, 4}, 3, "grads.npy", "[T, p, n]");
      },
      "shape", "(3, 4)");
  EXPECT_NE(msg.find("grads.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[T, p, n]"), std::string::npos) << msg;
  EXPECT_NO_THROW(clbo::require_npy_rank({3, 4, 5}, 3, "grads.npy", "[T, p, n]"));
}

TEST_F(Npy, MissingFileIsAnInputError) {
  expect_input_error([&] { clbo::read_npy_f32(path("absent.npy")); }, "(file)", "absent.npy");
  expect_input_error([&] { clbo::read_npy_f32(dir_.string()); }, "(file)", dir_.string());
}

// ---- streaming writer -------------------------------------------------------------------

TEST_F(Npy, StreamWriterFillsSlicesFromThreads) {
  const size_t rows = 8, cols = 1000;
  std::vector<float> expected(rows * cols);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<float>(i) * 0.25f;
  {
    clbo::NpyStreamWriter w(path("out.npy"), {int64_t(rows), int64_t(cols)});
    std::vector<std::thread> threads;
    for (size_t r = rows; r-- > 0;)  // in reverse, from several threads
      threads.emplace_back([&, r] { w.write_at(r * cols, &expected[r * cols], cols); });
    for (auto& t : threads) t.join();
    EXPECT_FALSE(fs::exists(path("out.npy")));  // nothing visible before commit
    w.commit();
  }
  const auto a = clbo::read_npy_f32(path("out.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{int64_t(rows), int64_t(cols)}));
  EXPECT_TRUE(bitwise_equal(a.data, expected));
  EXPECT_EQ(listing(), std::vector<std::string>{"out.npy"});
}

TEST_F(Npy, StreamWriterAppendsAndZeroFillsTheRest) {
  const std::vector<float> head = {1, 2, 3};
  {
    clbo::NpyStreamWriter w(path("sub/dir/out.npy"), {2, 3});
    w.append(head.data(), head.size());
    w.commit();
  }
  const auto a = clbo::read_npy_f32(path("sub/dir/out.npy"));
  EXPECT_EQ(a.data, (std::vector<float>{1, 2, 3, 0, 0, 0}));
}

TEST_F(Npy, UncommittedWriterLeavesNothingAndKeepsTheOldFile) {
  const std::vector<float> old = {9, 9};
  clbo::write_npy_f32(path("out.npy"), {2}, old.data());
  const std::string before = read_raw(path("out.npy"));
  {
    clbo::NpyStreamWriter w(path("out.npy"), {4});
    const std::vector<float> part = {1, 2};
    w.append(part.data(), part.size());
    EXPECT_THROW(w.write_at(3, part.data(), 2), clbo::Error);  // past the end
    // destroyed without commit, as when a run fails half-way
  }
  EXPECT_EQ(read_raw(path("out.npy")), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"out.npy"});
}

}  // namespace
