// A report as plain data (headings, paragraphs, tables, bullet lists) and its renderers:
// Markdown, LaTeX (booktabs tabulars) and CSV. Cells are plain text; each renderer escapes
// what its format needs, so the same document renders to all three.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace clbo::report {

struct Table {
  std::string title;    // becomes a heading (md, tex) and the CSV file's slug
  std::string caption;  // one line under the title: the source results file, for instance
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right_align;  // per column; empty means all left
  std::vector<bool> wrap;         // per column: a paragraph column in LaTeX (long text)
};

struct Block {
  enum class Kind { kHeading, kParagraph, kTable, kBullets };
  Kind kind = Kind::kParagraph;
  int level = 2;  // headings
  std::string text;
  Table table;
  std::vector<std::string> items;
};

struct Document {
  std::string title;
  std::vector<Block> blocks;
  void heading(std::string text, int level = 2);
  void paragraph(std::string text);
  void table(Table t);
  void bullets(std::vector<std::string> items);
};

std::string render_markdown(const Document& doc);
std::string render_tex(const Document& doc);
std::string render_csv(const Table& table);
// One table alone: Markdown (no heading), or plain text for a terminal, each column as wide
// as its widest cell (nothing is cut), numbers right-aligned where right_align says so.
std::string render_markdown_table(const Table& table);
std::string render_text(const Table& table);

// "Volume per optimizer" -> "volume-per-optimizer".
std::string slug(const std::string& text);
std::string escape_tex(const std::string& text);

// Output files of one document in one format, by file name: "<stem>.md", "<stem>.tex", or
// for csv "<stem>.csv" when the document has one table, else "<stem>-<slug>.csv" per table
// plus "<stem>.csv" listing them.
std::map<std::string, std::string> render_files(const Document& doc, const std::string& stem,
                                                const std::string& format);

}  // namespace clbo::report
