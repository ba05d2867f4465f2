// A model held in one GGUF file, as llama.cpp's converter (convert_hf_to_gguf.py) writes the
// diffusion architectures it knows: the metadata stands for config.json, tensors are named by
// role ("blk.3.attn_q.weight"), and LLaDA's q and k rows are interleaved per head for ggml's RoPE.
// This file maps all three back onto the Hugging Face binding, so the loader and the forward pass
// are the same for both formats. Facts and sources: docs/loading.md.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "format/gguf.hpp"
#include "model/architecture.hpp"

namespace unmask {

// The config.json the file's metadata stands for (Hugging Face keys, read by the architecture's
// own config reader). Throws UNSUPPORTED for an architecture this mapping does not know,
// MODEL_FORMAT for a missing or mistyped key.
nlohmann::json gguf_model_config(const GgufHeader& header);

// The spec: the architecture's reader over that config, and `diffusion.shift_logits` where the
// file says it.
ModelSpec read_gguf_model_spec(const GgufHeader& header);

// The GGUF name of a tensor the binding expects (llama.cpp's names by role and layer). A routed
// expert's matrix is part of its layer's stacked tensor ([experts, rows, columns]) of that name.
std::string gguf_tensor_name(const ExpectedTensor& tensor);

// Heads whose rows llama.cpp's LLaDA converter interleaved (its `permute`: within each head, row
// 2i + j holds the original row j * head_dim / 2 + i), or 0 when the rows are as Hugging Face
// stores them.
int64_t gguf_interleaved_heads(const GgufHeader& header, const ModelSpec& spec, Role role);

}  // namespace unmask
