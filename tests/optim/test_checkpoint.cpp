// Checkpoints: resuming is bit-identical to never stopping, for all six optimizers and at
// the phase boundaries; bad files are rejected naming the file and leave optimizers as
// they were.
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "clbo/optim/checkpoint.hpp"
#include "optim_test_util.hpp"

namespace clbo::test {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (fs::temp_directory_path() /
          ("clbo_optim_" + std::string(info->name()) + "_" + name + std::to_string(::getpid())))
      .string();
}

struct ResumeCase {
  std::string name;
  nlohmann::json cfg;
  int total, stop;
};

// Straight run of `total` steps against: `stop` steps, checkpoint, fresh optimizers, load,
// the remaining steps. Params and final states must be equal byte for byte on every rank.
void expect_bit_exact_resume(const ResumeCase& c, int p) {
  World straight(c.cfg, test_layout(), p);
  straight.run(c.total);

  World first(c.cfg, test_layout(), p);
  first.run(c.stop);
  const std::string path = temp_path(c.name);
  save_checkpoint(path, first.const_ranks());

  World resumed(c.cfg, test_layout(), p);
  resumed.params = first.params;  // the model weights travel in the model's own checkpoint
  resumed.iter = first.iter;
  load_checkpoint(path, resumed.ranks());
  for (int r = 0; r < p; ++r)
    ASSERT_TRUE(saved_state(*resumed.opts[r]) == saved_state(*first.opts[r])) << c.name;
  resumed.run(c.total - c.stop);
  for (int r = 0; r < p; ++r) {
    EXPECT_TRUE(bit_equal(resumed.params[r], straight.params[r])) << c.name << " rank " << r;
    EXPECT_TRUE(saved_state(*resumed.opts[r]) == saved_state(*straight.opts[r])) << c.name;
    EXPECT_EQ(resumed.opts[r]->steps_taken(), c.total);
  }
  fs::remove(path);
}

const nlohmann::json kHyper = {{"lr", 0.01}, {"weight_decay", 0.01}};

nlohmann::json with_hyper(nlohmann::json extra) {
  nlohmann::json p = kHyper;
  p.update(extra);
  return p;
}

std::vector<ResumeCase> resume_cases() {
  const nlohmann::json zo = with_hyper({{"var_freeze_step", 6},
                                        {"var_update_scaler", 2},
                                        {"local_step_scaler", 2},
                                        {"local_step_clipper", 4}});
  const nlohmann::json slamb =
      with_hyper({{"compress_ratio", 0.3}, {"grad_size_thr", 40}, {"local_steps", 4}, {"seed", 3}});
  return {
      {"adam", block("Adam", kHyper), 6, 3},
      {"lamb", block("Lamb", kHyper), 6, 3},
      {"onebit_adam_at_freeze", block("OneBitAdam", with_hyper({{"freeze_step", 4}})), 9, 4},
      {"onebit_adam_compressing", block("OneBitAdam", with_hyper({{"freeze_step", 4}})), 9, 6},
      {"onebit_adam_per_tensor",
       block("OneBitAdam", with_hyper({{"freeze_step", 2}, {"comm_granularity", "tensor"}})), 7, 4},
      {"onebit_lamb_at_freeze", block("OneBitLamb", with_hyper({{"freeze_step", 4}})), 9, 4},
      {"onebit_lamb_after_scaling", block("OneBitLamb", with_hyper({{"freeze_step", 4}})), 9, 5},
      {"onebit_lamb_tail",
       block("OneBitLamb", with_hyper({{"freeze_step", 2}, {"compat_keep_padding_tail", true}})), 8,
       4},
      {"onebit_adam_no_ef", block("OneBitAdamNoErrorFeedback", with_hyper({{"freeze_step", 3}})), 8,
       5},
      {"naive_onebit_adam", block("NaiveOneBitAdam", kHyper), 6, 3},
      {"naive_onebit_lamb", block("NaiveOneBitLamb", with_hyper({{"freeze_step", 3}})), 8, 5},
      {"zero_one_before_switch", block("ZeroOneAdam", zo), 20, 5},
      {"zero_one_at_switch", block("ZeroOneAdam", zo), 20, 6},
      {"zero_one_local_phase", block("ZeroOneAdam", zo), 20, 13},
      {"slamb", block("Slamb", slamb), 10, 5},
      {"slamb_at_sync", block("Slamb", slamb), 10, 9},
  };
}

class ResumeTest : public ::testing::TestWithParam<int> {};

TEST_P(ResumeTest, ResumingIsBitIdenticalToNotStopping) {
  for (const ResumeCase& c : resume_cases()) expect_bit_exact_resume(c, GetParam());
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ResumeTest, ::testing::Values(1, 3), world_size_name);

TEST(Checkpoint, StreamStateRoundTripsIntoAFreshOptimizer) {
  const auto cfg = block("ZeroOneAdam", with_hyper({{"var_freeze_step", 3}}));
  World w(cfg, test_layout(), 2);
  w.run(5);
  World fresh(cfg, test_layout(), 2);
  for (int r = 0; r < 2; ++r) {
    std::istringstream in(saved_state(*w.opts[r]), std::ios::binary);
    fresh.opts[r]->load_state(in);
    EXPECT_TRUE(saved_state(*fresh.opts[r]) == saved_state(*w.opts[r]));
    EXPECT_EQ(fresh.opts[r]->steps_taken(), 5);
  }
}

// Loading must fail with an InputError naming the file and the field, and change nothing.
void expect_rejected(const std::string& path, World& target, const std::string& field_part,
                     const std::string& why_part) {
  std::vector<std::string> before;
  for (auto& o : target.opts) before.push_back(saved_state(*o));
  try {
    load_checkpoint(path, target.ranks());
    FAIL() << "loaded " << path;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
    EXPECT_NE(e.field().find(field_part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(why_part), std::string::npos) << e.what();
  }
  for (size_t r = 0; r < target.opts.size(); ++r)
    EXPECT_TRUE(saved_state(*target.opts[r]) == before[r]) << "rank " << r << " was modified";
}

TEST(Checkpoint, RejectsMismatchesNamingTheFile) {
  const auto cfg = block("OneBitAdam", with_hyper({{"freeze_step", 1}}));
  World saved(cfg, test_layout(), 3);
  saved.run(3);
  const std::string path = temp_path("ckpt");
  save_checkpoint(path, saved.const_ranks());

  World other_type(block("Adam", kHyper), test_layout(), 3);
  other_type.run(1);
  expect_rejected(path, other_type, "type", "OneBitAdam");

  World two_ranks(cfg, test_layout(), 2);
  expect_rejected(path, two_ranks, "world_size", "3");

  ParamLayout smaller;
  smaller.add("w", 100, {10, 10});
  World other_layout(cfg, smaller, 3);
  expect_rejected(path, other_layout, "n", "150");

  ParamLayout reshaped;  // same n, different tensors
  reshaped.add("w", 150, {10, 15});
  World other_tensors(cfg, reshaped, 3);
  expect_rejected(path, other_tensors, "num_tensors", "");

  // Truncated anywhere: the header, rank 0, the last rank.
  const std::string full = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  World target(cfg, test_layout(), 3);
  target.run(1);
  for (size_t cut : {size_t{10}, full.size() / 3, full.size() - 5}) {
    const std::string bad = temp_path("cut");
    std::ofstream(bad, std::ios::binary).write(full.data(), static_cast<std::streamsize>(cut));
    expect_rejected(bad, target, "", "truncated");
    fs::remove(bad);
  }

  // Bytes appended after the checksum: the checksum no longer covers the file's end.
  const std::string trailing = temp_path("trailing");
  std::ofstream(trailing, std::ios::binary) << full << "xx";
  expect_rejected(trailing, target, "crc32", "corrupt");
  fs::remove(trailing);

  // One flipped bit anywhere after the version: refused before anything is interpreted.
  for (size_t at : {size_t{13}, full.size() / 2, full.size() - 6, full.size() - 1}) {
    std::string flipped = full;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x04);
    const std::string bad = temp_path("flipped");
    std::ofstream(bad, std::ios::binary) << flipped;
    expect_rejected(bad, target, "crc32", "corrupt");
    fs::remove(bad);
  }

  const std::string garbage = temp_path("garbage");
  std::ofstream(garbage, std::ios::binary) << "not a checkpoint at all";
  expect_rejected(garbage, target, "magic", "not a clbo checkpoint");
  fs::remove(garbage);

  EXPECT_THROW(load_checkpoint(temp_path("missing"), target.ranks()), InputError);
  fs::remove(path);
}

// Version 1 files (no checksum) still load: the same bytes without the CRC, version 1.
TEST(Checkpoint, VersionOneFilesWithoutChecksumStillLoad) {
  const auto cfg = block("OneBitAdam", with_hyper({{"freeze_step", 1}}));
  World saved(cfg, test_layout(), 2);
  saved.run(3);
  const std::string path = temp_path("v2");
  save_checkpoint(path, saved.const_ranks());
  std::string bytes = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  ASSERT_EQ(bytes[8], 2) << "this build writes version 2";
  bytes[8] = 1;
  bytes.resize(bytes.size() - 4);
  const std::string v1 = temp_path("v1");
  std::ofstream(v1, std::ios::binary) << bytes;
  World loaded(cfg, test_layout(), 2);
  load_checkpoint(v1, loaded.ranks());
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(saved_state(*loaded.opts[r]) == saved_state(*saved.opts[r]));
  fs::remove(path);
  fs::remove(v1);
}

TEST(Checkpoint, AFailingRankLeavesEarlierRanksUntouched) {
  // Rank 2's state sits where rank 1's belongs: rank 0 loads first and must be restored.
  const auto cfg = block("Lamb", kHyper);
  World saved(cfg, test_layout(), 3);
  saved.run(2);
  std::vector<const Optimizer*> shuffled = saved.const_ranks();
  std::swap(shuffled[1], shuffled[2]);
  const std::string path = temp_path("shuffled");
  save_checkpoint(path, shuffled);
  World target(cfg, test_layout(), 3);
  expect_rejected(path, target, "rank", "rank");
  fs::remove(path);
}

}  // namespace
}  // namespace clbo::test
