#include "tokenizer/chat_format.hpp"

#include "core/error.hpp"

namespace unmask {

std::string format_chat(const Tokenizer& tokenizer, std::string_view system, std::string_view user) {
    std::string out;
    if (tokenizer.has_token("<|im_start|>") && tokenizer.has_token("<|im_end|>")) {
        if (!system.empty()) out.append("<|im_start|>system\n").append(system).append("<|im_end|>\n");
        out.append("<|im_start|>user\n").append(user).append("<|im_end|>\n<|im_start|>assistant\n");
        return out;
    }
    if (tokenizer.has_token("<|start_header_id|>") && tokenizer.has_token("<|end_header_id|>") &&
        tokenizer.has_token("<|eot_id|>")) {
        out.append(tokenizer.bos_token());  // from tokenizer_config.json: LLaDA's <|startoftext|>, Llama-3's <|begin_of_text|>
        auto message = [&](std::string_view role, std::string_view content) {
            out.append("<|start_header_id|>").append(role).append("<|end_header_id|>\n\n").append(content).append("<|eot_id|>");
        };
        if (!system.empty()) message("system", system);
        message("user", user);
        out.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
        return out;
    }
    // The bundled model's: role tokens and no separators, as it was trained (training/train.py).
    // Phi-3's tokenizers have the same role tokens but end turns with <|end|>: not this format.
    if (tokenizer.has_token("<|user|>") && tokenizer.has_token("<|assistant|>") && !tokenizer.has_token("<|end|>")) {
        if (!system.empty())
            fail(Status::invalid_argument, "this model's chat format (<|user|>, <|assistant|>) has no system role");
        out.append("<|user|>").append(user).append("<|assistant|>");
        return out;
    }
    fail(Status::unsupported,
         "the tokenizer has none of the chat formats unmask knows (ChatML's <|im_start|>, LLaMA-3's "
         "<|start_header_id|>, <|user|> and <|assistant|>); format the prompt yourself");
}

}  // namespace unmask
