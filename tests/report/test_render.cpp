// Renderers: Markdown, LaTeX and CSV of a small table, checked line by line; escaping; the
// paper document's tables and explanation sections; the summary tables.
#include <gtest/gtest.h>

#include "clbo/report/document.hpp"
#include "clbo/report/report.hpp"
#include "clbo/report/summary.hpp"
#include "report_test_util.hpp"

namespace clbo::report::test {
namespace {

Document small_doc() {
  Document d;
  d.title = "T";
  d.paragraph("intro 5% & more");
  Table t;
  t.title = "Speed | up";
  t.caption = "from results/sim/x.json";
  t.header = {"setting", "clbo"};
  t.right_align = {false, true};
  t.rows = {{"64 GPUs, 40 GbE", "3.2x"}, {"a \"quoted\" one", "✓"}};
  d.table(t);
  d.heading("Outside the target band");
  d.bullets({"x_y: unexplained"});
  return d;
}

TEST(Render, Markdown) {
  const std::string md = render_markdown(small_doc());
  EXPECT_NE(md.find("# T\n"), std::string::npos) << md;
  EXPECT_NE(md.find("### Speed | up\n\nfrom results/sim/x.json\n\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| setting | clbo |\n|---|---:|\n| 64 GPUs, 40 GbE | 3.2x |\n"
                    "| a \"quoted\" one | ✓ |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("## Outside the target band\n\n- x_y: unexplained\n"), std::string::npos) << md;
}

TEST(Render, Tex) {
  const std::string tex = render_tex(small_doc());
  EXPECT_NE(tex.find("intro 5\\% \\& more"), std::string::npos) << tex;
  EXPECT_NE(tex.find("\\begin{tabular}{lr}\n\\toprule\nsetting & clbo \\\\\n\\midrule\n"
                     "64 GPUs, 40 GbE & 3.2x \\\\\na \"quoted\" one & $\\checkmark$ \\\\\n"
                     "\\bottomrule\n\\end{tabular}\n"),
            std::string::npos)
      << tex;
  EXPECT_NE(tex.find("\\item x\\_y: unexplained"), std::string::npos) << tex;
  EXPECT_EQ(escape_tex("a_b{c}~^\\ ± ≈ × –"),
            "a\\_b\\{c\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{} $\\pm$ "
            "$\\approx$ $\\times$ --");
}

TEST(Render, Csv) {
  const Document d = small_doc();
  const std::string csv = render_csv(d.blocks[1].table);
  EXPECT_EQ(csv, "setting,clbo\n\"64 GPUs, 40 GbE\",3.2x\n\"a \"\"quoted\"\" one\",✓\n");
  const auto one = render_files(d, "paper", "csv");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.begin()->first, "paper.csv");
  Document two = d;
  two.table(d.blocks[1].table);
  const auto files = render_files(two, "summary", "csv");
  ASSERT_EQ(files.size(), 3u);  // two tables and an index
  EXPECT_TRUE(files.count("summary-speed-up.csv"));
  EXPECT_TRUE(files.count("summary-speed-up-2.csv"));
  EXPECT_NE(files.at("summary.csv").find("summary-speed-up.csv"), std::string::npos);
  EXPECT_EQ(slug("Kernel roofline: sim/x"), "kernel-roofline-sim-x");
}

class PaperDocumentTest : public TempDirTest {};

TEST_F(PaperDocumentTest, TablesInSpecOrderWithOutOfBandAndNotComputedSections) {
  write_json("results/paper/demo-claims.json", sim_results());
  json in = claim("in", {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}});
  in["headline"] = true;
  in["up_to"] = true;
  json out = claim("out", {{"op", "value"}, {"a", sel("1-bit Adam", 16, "simulated.speedup")}});
  out["table"] = "Second table";
  json explained = out;
  explained["id"] = "explained";
  explained["deviation"] = "the model has no PCIe contention";
  json none = claim("none", {{"op", "unavailable"}, {"reason", "needs 256 V100s"}});
  const ClaimSpec spec = parse_claim_spec(spec_with({in, out, explained, none}),
                                          "experiments/paper/demo-claims.json", "demo-claims");
  const ResultsStore store = ResultsStore::load(path("results"));
  const ReportOutput rep = build_report({spec}, store, "md");
  EXPECT_EQ(rep.counts.rows, 4u);
  EXPECT_EQ(rep.counts.within, 1u);
  EXPECT_EQ(rep.counts.outside, 2u);
  EXPECT_EQ(rep.counts.not_computed, 1u);
  const std::string& md = rep.files.at("paper.md");
  const size_t first = md.find("### 1-bit Adam: throughput"), second = md.find("### Second table");
  ASSERT_NE(first, std::string::npos) << md;
  ASSERT_NE(second, std::string::npos) << md;
  EXPECT_LT(first, second);
  EXPECT_NE(md.find("| BERT-Large, 64 V100, 40 GbE | speedup over Adam | up to 3.3x | 3.20x | "
                    "-3.0% | ✓ | – | simulated | docs/reference/published.md §1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 3.3x | 2.50x | -24.2% | ✗ | – | simulated |"), std::string::npos) << md;
  EXPECT_NE(md.find("| – | – | – | – | published | docs/reference/published.md §1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- out (BERT-Large, 64 V100, 40 GbE; speedup over Adam): clbo 2.50x vs paper "
                    "3.3x, -24.2% against ±15%: unexplained"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("-24.2% against ±15%: the model has no PCIe contention"), std::string::npos);
  EXPECT_NE(md.find("## Not computed\n\n- none (BERT-Large, 64 V100, 40 GbE; speedup over Adam): "
                    "needs 256 V100s"),
            std::string::npos)
      << md;
  const std::string& head = rep.files.at("headline.md");
  EXPECT_NE(head.find("| up to 3.3x | 3.20x |"), std::string::npos) << head;
  EXPECT_EQ(head.find("2.50x"), std::string::npos) << head;
  ASSERT_TRUE(rep.files.count("summary.md"));

  const ReportOutput csv = build_report({spec}, store, "csv");
  const std::string& flat = csv.files.at("paper.csv");
  EXPECT_EQ(flat.substr(0, flat.find('\n')),
            "id,paper,table,setting,quantity,kind,unit,up_to,paper_value,clbo_value,rel_error,"
            "within_band,tolerance,provenance,source,max_min_of,explanation,results_files,"
            "implementation,value_clbo,value_deepspeed");
  EXPECT_NE(flat.find("\nin,1-bit Adam,1-bit Adam: throughput,\"BERT-Large, 64 V100, 40 GbE\","
                      "speedup over Adam,speedup,x,true,3.3,3.2,"),
            std::string::npos)
      << flat;
  EXPECT_NE(flat.find(",no,0.15,simulated,docs/reference/published.md §1,,unexplained,"
                      "paper/demo-claims,clbo,2.5,\n"),
            std::string::npos)
      << flat;
  const ReportOutput tex = build_report({spec}, store, "tex");
  // Setting and quantity wrap; the numbers are right-aligned.
  EXPECT_NE(
      tex.files.at("paper.tex").find("\\begin{tabular}{p{0.2\\textwidth}p{0.2\\textwidth}rrrllll}"),
      std::string::npos);
  EXPECT_NE(tex.files.at("paper.tex").find("up to 3.3x & 3.20x & -3.0\\% & $\\checkmark$"),
            std::string::npos);
}

TEST_F(PaperDocumentTest, SummaryTablesComeFromWhateverResultsExist) {
  write_json("results/sim/sweep.json", sim_results());
  write_json("results/convergence/adam.json", train_results());
  write_json("results/bench/bench_kernels_cpu.json", {{"schema", "clbo.bench.kernels/1"},
                                                      {"measured", true},
                                                      {"benchmark",
                                                       {{"benchmarks",
                                                         {{{"name", "BM_compress_fused/16777216"},
                                                           {"run_type", "iteration"},
                                                           {"min_bytes_per_elem", 20.125},
                                                           {"bytes_per_second", 8.5e9},
                                                           {"frac_of_copy_bw", 0.91}}}}}}});
  const std::string md = render_markdown(summary_document(ResultsStore::load(path("results"))));
  const std::string sim = path("results") + "/sim/sweep.json";
  EXPECT_NE(md.find("| " + sim + " | 1-bit Adam | Adam | 64 | 2.1e-07 | 4.76x |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### Speedup per cluster: sim/sweep"), std::string::npos) << md;
  EXPECT_NE(md.find("| cluster | optimizer | 16 GPUs | 64 GPUs |"), std::string::npos) << md;
  EXPECT_NE(md.find("| paper-eth-v100 | 1-bit Adam vs Adam | 2.50x | 3.20x |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1-bit Adam | OneBitAdam | Adam | 2 | 86.80 ± 0.20 % | -0.20 ± 0.10 | "
                    "0.2500 ± 0.0125 | 0.224x |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| BM_compress_fused/16777216 | 20.125 | 8.50 | 0.910 |"), std::string::npos)
      << md;
  // clbo.bench.kernels/2 is Google Benchmark's own JSON, clbo's record under context.clbo.
  write_json("results/bench/kernels-cpu.json", {{"schema", "clbo.bench.kernels/2"},
                                                {"context", {{"clbo", {{"measured", true}}}}},
                                                {"benchmarks",
                                                 {{{"name", "BM_unpack_scale/16777216"},
                                                   {"run_type", "iteration"},
                                                   {"min_bytes_per_elem", 4.125},
                                                   {"bytes_per_second", 9.0e9},
                                                   {"frac_of_copy_bw", 0.5}}}}});
  const std::string v2 = render_markdown(summary_document(ResultsStore::load(path("results"))));
  EXPECT_NE(v2.find("| BM_unpack_scale/16777216 | 4.125 | 9.00 | 0.500 |"), std::string::npos)
      << v2;
  fs::remove(path("results/bench/kernels-cpu.json"));
  // A file with two implementation profiles: each profile's speedup is its own row.
  json two = sim_results();
  json runs = json::array();
  for (const char* impl : {"clbo", "deepspeed"})
    for (json r : two["runs"]) {
      r["implementation"] = impl;
      if (std::string(impl) == "deepspeed" && r["simulated"]["speedup"].is_number())
        r["simulated"]["speedup"] = r["simulated"]["speedup"].get<double>() / 2;
      runs.push_back(r);
    }
  two["runs"] = runs;
  write_json("results/sim/profiles.json", two);
  const std::string both = render_markdown(summary_document(ResultsStore::load(path("results"))));
  EXPECT_NE(both.find("| cluster | optimizer | implementation | 16 GPUs | 64 GPUs |"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("| paper-eth-v100 | 1-bit Adam vs Adam | clbo | 2.50x | 3.20x |"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("| paper-eth-v100 | 1-bit Adam vs Adam | deepspeed | 1.25x | 1.60x |"),
            std::string::npos)
      << both;
  // With nothing there, each section says so instead of an empty table.
  fs::create_directories(path("empty"));
  const std::string none = render_markdown(summary_document(ResultsStore::load(path("empty"))));
  EXPECT_NE(none.find("no clbo.train/1 results"), std::string::npos) << none;
  EXPECT_NE(none.find("no clbo.bench.kernels results"), std::string::npos) << none;
  EXPECT_NE(none.find("no clbo.bench.collectives/1 results"), std::string::npos) << none;
}

// A collective sweep: its largest message per op, read from nccl-tests' columns at the top
// level or from an out-of-place half.
TEST_F(PaperDocumentTest, SummaryHasTheLargestMessageOfEachCollectiveSweep) {
  auto row = [](const char* op, double bytes, double time_us, double busbw) {
    return json{{"op", op},           {"algorithm", "ring"},
                {"type", "float"},    {"size_bytes", bytes},
                {"time_us", time_us}, {"busbw_GBps", busbw}};
  };
  json halves = {{"op", "allgather"},
                 {"type", "float"},
                 {"size", 4096},
                 {"out_of_place", {{"time_us", 12.5}, {"busbw_GBps", 0.25}}}};
  write_json(
      "results/bench/sweep.json",
      {{"schema", "clbo.bench.collectives/1"},
       {"measured", true},
       {"backend", {{"name", "local"}, {"p", 4}}},
       {"rows",
        {row("allreduce", 1024, 30.0, 0.05), row("allreduce", 1048576, 900.0, 1.75), halves}}});
  const std::string md = render_markdown(summary_document(ResultsStore::load(path("results"))));
  const std::string f = path("results") + "/bench/sweep.json";
  EXPECT_NE(md.find("| " + f + " | allreduce | ring | float | 4 | 1048576 | 900 | 1.75 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| " + f + " | allgather | – | float | 4 | 4096 | 12.5 | 0.250 |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| 1024 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace clbo::report::test
