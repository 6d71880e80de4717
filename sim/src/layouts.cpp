// Per-tensor layouts generated from a model's architecture, in the order the reference
// implementations list their parameters (Hugging Face BertForPreTraining and
// GPT2LMHeadModel, timm's SwinTransformer). Tied weights appear once.
#include <fmt/format.h>

#include "clbo/sim/workload.hpp"

namespace clbo::sim {

namespace {
using Shape = std::vector<int64_t>;

void add(ParamLayout& l, const std::string& name, Shape shape) {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  l.add(name, n, std::move(shape));
}

void linear(ParamLayout& l, const std::string& name, int64_t out, int64_t in, bool bias = true) {
  add(l, name + ".weight", {out, in});
  if (bias) add(l, name + ".bias", {out});
}

void norm(ParamLayout& l, const std::string& name, int64_t dim) {
  add(l, name + ".weight", {dim});
  add(l, name + ".bias", {dim});
}
}  // namespace

ParamLayout bert_layout(int layers, int hidden, int intermediate, int vocab, int max_position,
                        int type_vocab, bool pretraining_heads) {
  ParamLayout l;
  const int64_t h = hidden;
  add(l, "embeddings.word_embeddings.weight", {vocab, h});
  add(l, "embeddings.position_embeddings.weight", {max_position, h});
  add(l, "embeddings.token_type_embeddings.weight", {type_vocab, h});
  norm(l, "embeddings.LayerNorm", h);
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("encoder.layer.{}.", i);
    linear(l, p + "attention.self.query", h, h);
    linear(l, p + "attention.self.key", h, h);
    linear(l, p + "attention.self.value", h, h);
    linear(l, p + "attention.output.dense", h, h);
    norm(l, p + "attention.output.LayerNorm", h);
    linear(l, p + "intermediate.dense", intermediate, h);
    linear(l, p + "output.dense", h, intermediate);
    norm(l, p + "output.LayerNorm", h);
  }
  linear(l, "pooler.dense", h, h);
  if (pretraining_heads) {
    add(l, "cls.predictions.bias", {vocab});  // the decoder weight is tied to the embeddings
    linear(l, "cls.predictions.transform.dense", h, h);
    norm(l, "cls.predictions.transform.LayerNorm", h);
    linear(l, "cls.seq_relationship", 2, h);
  }
  return l;
}

ParamLayout gpt2_layout(int layers, int hidden, int vocab, int context) {
  ParamLayout l;
  const int64_t h = hidden;
  add(l, "transformer.wte.weight", {vocab, h});  // tied with the LM head
  add(l, "transformer.wpe.weight", {context, h});
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("transformer.h.{}.", i);
    norm(l, p + "ln_1", h);
    // GPT-2's Conv1D stores weights as [in, out].
    add(l, p + "attn.c_attn.weight", {h, 3 * h});
    add(l, p + "attn.c_attn.bias", {3 * h});
    add(l, p + "attn.c_proj.weight", {h, h});
    add(l, p + "attn.c_proj.bias", {h});
    norm(l, p + "ln_2", h);
    add(l, p + "mlp.c_fc.weight", {h, 4 * h});
    add(l, p + "mlp.c_fc.bias", {4 * h});
    add(l, p + "mlp.c_proj.weight", {4 * h, h});
    add(l, p + "mlp.c_proj.bias", {h});
  }
  norm(l, "transformer.ln_f", h);
  return l;
}

ParamLayout swin_layout(int embed_dim, const std::vector<int>& depths,
                        const std::vector<int>& heads, int window, int patch, int in_chans,
                        int num_classes) {
  ParamLayout l;
  add(l, "patch_embed.proj.weight", {embed_dim, in_chans, patch, patch});
  add(l, "patch_embed.proj.bias", {embed_dim});
  norm(l, "patch_embed.norm", embed_dim);
  int64_t c = embed_dim;
  const int64_t table = static_cast<int64_t>(2 * window - 1) * (2 * window - 1);
  for (size_t s = 0; s < depths.size(); ++s) {
    for (int b = 0; b < depths[s]; ++b) {
      const std::string p = fmt::format("layers.{}.blocks.{}.", s, b);
      norm(l, p + "norm1", c);
      add(l, p + "attn.relative_position_bias_table", {table, heads[s]});
      linear(l, p + "attn.qkv", 3 * c, c);
      linear(l, p + "attn.proj", c, c);
      norm(l, p + "norm2", c);
      linear(l, p + "mlp.fc1", 4 * c, c);
      linear(l, p + "mlp.fc2", c, 4 * c);
    }
    if (s + 1 < depths.size()) {  // patch merging halves the resolution, doubles channels
      const std::string p = fmt::format("layers.{}.downsample.", s);
      norm(l, p + "norm", 4 * c);
      linear(l, p + "reduction", 2 * c, 4 * c, false);
      c *= 2;
    }
  }
  norm(l, "norm", c);
  linear(l, "head", num_classes, c);
  return l;
}

}  // namespace clbo::sim
