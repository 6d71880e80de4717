// IDX parsing and validation on small files written here, plus the real package when present.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "clbo/core/error.hpp"
#include "clbo/train/fashion_mnist.hpp"

using namespace clbo::train;
namespace fs = std::filesystem;

namespace {

std::string idx_bytes(uint8_t ndim, const std::vector<uint32_t>& dims,
                      const std::vector<uint8_t>& payload) {
  std::string s{'\0', '\0', '\x08', static_cast<char>(ndim)};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(d >> shift));
  s.append(payload.begin(), payload.end());
  return s;
}

void write_gz(const fs::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("clbo_idx_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A consistent little dataset: n_train/n_test 28x28 images with labels 0..9.
  void write_split(const std::string& prefix, uint32_t n) {
    std::vector<uint8_t> pixels(size_t{n} * 784), labels(n);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 31 % 256);
    for (uint32_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % 10);
    write_gz(dir_ / (prefix + "-images-idx3-ubyte.gz"), idx_bytes(3, {n, 28, 28}, pixels));
    write_gz(dir_ / (prefix + "-labels-idx1-ubyte.gz"), idx_bytes(1, {n}, labels));
  }
  void write_all() {
    write_split("train", 20);
    write_split("t10k", 10);
  }
  // The message of the InputError load_fashion_mnist throws (fails the test when none).
  std::string load_error() {
    try {
      load_fashion_mnist(dir_.string(), false);
    } catch (const clbo::InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected an InputError";
    return "";
  }
  fs::path dir_;
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_F(IdxFiles, LoadsAndStandardizes) {
  write_all();
  const FashionMnist d = load_fashion_mnist(dir_.string(), false);
  EXPECT_EQ(d.train.n, 20u);
  EXPECT_EQ(d.test.n, 10u);
  EXPECT_EQ(d.train.features(), 784u);
  EXPECT_EQ(d.train.labels[13], 3);
  double mean = 0;
  for (float v : d.train.pixels) mean += v;
  EXPECT_NEAR(mean / d.train.pixels.size(), 0.0, 1e-5);
  // Pixel 1 of image 0 is 31/255 before standardization.
  EXPECT_NEAR(d.train.pixels[1], (31 / 255.0f - d.pixel_mean) / d.pixel_std, 1e-6);
  // Pixel 0 is raw 0: the fill of a shifted image (standardize(0), augment.hpp) is exactly
  // what it loads as.
  EXPECT_EQ(d.train.pixels[0], d.standardize(0.0f));
}

TEST_F(IdxFiles, ReadsUncompressedFilesToo) {
  write_all();
  const std::string raw = idx_bytes(1, {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  fs::remove(dir_ / "t10k-labels-idx1-ubyte.gz");
  std::ofstream(dir_ / "t10k-labels-idx1-ubyte", std::ios::binary) << raw;
  EXPECT_EQ(load_fashion_mnist(dir_.string(), false).test.labels[9], 9);
}

TEST_F(IdxFiles, MissingFolderNamesThePackage) {
  const std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "train-images-idx3-ubyte")) << msg;
  EXPECT_TRUE(contains(msg, "apt-get install dataset-fashion-mnist")) << msg;
}

TEST_F(IdxFiles, TruncatedPayloadIsReported) {
  write_all();
  std::vector<uint8_t> short_payload(10 * 784 - 5, 1);
  write_gz(dir_ / "t10k-images-idx3-ubyte.gz", idx_bytes(3, {10, 28, 28}, short_payload));
  const std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "t10k-images-idx3-ubyte.gz")) << msg;
  EXPECT_TRUE(contains(msg, "truncated")) << msg;
  EXPECT_TRUE(contains(msg, "dataset-fashion-mnist")) << msg;
}

TEST_F(IdxFiles, TruncatedHeaderIsReported) {
  write_all();
  write_gz(dir_ / "train-labels-idx1-ubyte.gz", std::string("\0\0\x08", 3));
  EXPECT_TRUE(contains(load_error(), "header"));
}

TEST_F(IdxFiles, CorruptGzipIsReported) {
  write_all();
  std::string gz;
  {
    std::ifstream in(dir_ / "train-images-idx3-ubyte.gz", std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  gz.resize(gz.size() / 2);  // cut the deflate stream
  std::ofstream(dir_ / "train-images-idx3-ubyte.gz", std::ios::binary) << gz;
  const std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "train-images-idx3-ubyte.gz")) << msg;
}

TEST_F(IdxFiles, MismatchedCountsAreReported) {
  write_all();
  write_gz(dir_ / "train-labels-idx1-ubyte.gz", idx_bytes(1, {19}, std::vector<uint8_t>(19, 1)));
  const std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "20 images")) << msg;
  EXPECT_TRUE(contains(msg, "19 labels")) << msg;
}

TEST_F(IdxFiles, WrongMagicTypeRankSizeAndLabelsAreReported) {
  write_all();
  std::string bad = idx_bytes(1, {10}, std::vector<uint8_t>(10, 1));
  bad[0] = 'P';
  write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", bad);
  EXPECT_TRUE(contains(load_error(), "not an IDX file"));

  bad = idx_bytes(1, {10}, std::vector<uint8_t>(10, 1));
  bad[2] = 0x0D;  // float type
  write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", bad);
  EXPECT_TRUE(contains(load_error(), "unsigned byte"));

  write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", idx_bytes(2, {10, 1}, std::vector<uint8_t>(10, 1)));
  EXPECT_TRUE(contains(load_error(), "expected 1 dimensions"));

  write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", idx_bytes(1, {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 10}));
  EXPECT_TRUE(contains(load_error(), "label[9]"));

  write_split("t10k", 10);
  write_gz(dir_ / "t10k-images-idx3-ubyte.gz",
           idx_bytes(3, {10, 32, 32}, std::vector<uint8_t>(10 * 1024, 0)));
  EXPECT_TRUE(contains(load_error(), "28x28"));
}

TEST_F(IdxFiles, TrailingBytesAreReported) {
  write_all();
  write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", idx_bytes(1, {10}, std::vector<uint8_t>(11, 1)));
  EXPECT_TRUE(contains(load_error(), "trailing"));
}

TEST_F(IdxFiles, FullSizesAreRequiredByDefault) {
  write_all();
  try {
    load_fashion_mnist(dir_.string());
    FAIL();
  } catch (const clbo::InputError& e) {
    EXPECT_TRUE(contains(e.what(), "expected 60000 examples")) << e.what();
  }
}

// The installed Debian package, as `clbo train` reads it.
TEST(FashionMnistPackage, LoadsTheInstalledDataset) {
  if (find_idx_file(kFashionMnistDefaultDir, "train-images-idx3-ubyte").empty())
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const FashionMnist d = load_fashion_mnist("");
  EXPECT_EQ(d.train.n, 60000u);
  EXPECT_EQ(d.test.n, 10000u);
  std::vector<size_t> per_class(10);
  for (uint8_t y : d.train.labels) per_class[y]++;
  for (size_t c : per_class) EXPECT_EQ(c, 6000u);  // Fashion-MNIST is balanced
  EXPECT_GT(d.pixel_mean, 0.2f);
  EXPECT_LT(d.pixel_mean, 0.4f);
}
