#!/usr/bin/env python3
"""Write a tiny llama-architecture GGUF with random weights and a real byte-level BPE tokenizer.

The model is for tests only: its layers are random and its output is nonsense, but its
embeddings and output head are set so that it behaves like a tiny bigram model that tends to
end its turn at once or open a `<tool_call>`: with `tool_choice: "required"` llama-server's
grammar then completes a call within about 60 tokens (always at temperature 0); otherwise it
replies "" or a little `<tool_call>` noise, or a tool call when tools are given.
Its tokenizer, special tokens and Qwen2.5-style ChatML/Hermes chat template are real, so
`llama-server --jinja` renders tools, detects the `<tool_call>` JSON format and constrains
tool calls with a grammar.

Usage (Debian python3 with python3-numpy; gguf-py comes from a llama.cpp checkout):
    /usr/bin/python3 scripts/make-test-gguf.py --gguf-py <llama.cpp>/gguf-py --output tiny.gguf
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

MODEL_NAME = "tiny-random-chatml"
CONTEXT_LENGTH = 2048
EMBEDDING_LENGTH = 64
FEED_FORWARD_LENGTH = 128
BLOCK_COUNT = 2
HEAD_COUNT = 4
HEAD_COUNT_KV = 2
MERGE_COUNT = 300

# (text, is_control): control tokens are hidden from detokenized text, user-defined ones are
# printed, which is what Qwen2.5 does so that `<tool_call>` reaches the tool-call parser.
SPECIAL_TOKENS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
]

# Qwen2.5-7B-Instruct's template with a neutral default system prompt.
CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

# Text the BPE merges are learned from: English plus the JSON and markup a tool-calling
# conversation contains, so common words and punctuation get multi-byte tokens.
TRAINING_TEXT = """
The quick brown fox jumps over the lazy dog. You are a helpful assistant.
What is the weather in Paris today? Let me check the weather for you.
The temperature in London is 18 degrees and it is raining.
You may call one or more functions to assist with the user query.
For each function call, return a json object with function name and arguments.
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
{"name": "search", "arguments": {"query": "latest news", "limit": 10}}
{"type": "function", "function": {"name": "read_file", "description": "Read a file",
"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
<tool_response> {"result": "ok", "content": "hello world"} </tool_response>
Hello, world! How are you? I am fine, thank you. Please write the answer in the file.
the and that this with from have what when where which there their then than them these
function arguments name description parameters properties required string number object
"""


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table used by byte-level BPE vocabularies."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\u00a1"), ord("\u00ac") + 1))
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    characters = printable[:]
    offset = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + offset)
            offset += 1
    return {byte: chr(character) for byte, character in zip(printable, characters)}


def learn_merges(text: str, merge_count: int) -> list[tuple[str, str]]:
    """Learn byte-level BPE merges from `text`, most frequent pair first, ties broken by text."""
    byte_encoder = bytes_to_unicode()
    # Close to the GPT-2 pre-tokenizer: merges never cross word boundaries.
    pieces = re.findall(r"'(?:s|t|re|ve|m|ll|d)| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+", text)
    words: collections.Counter[tuple[str, ...]] = collections.Counter(
        tuple(byte_encoder[byte] for byte in piece.encode("utf-8")) for piece in pieces
    )
    merges: list[tuple[str, str]] = []
    while len(merges) < merge_count:
        pair_counts: collections.Counter[tuple[str, str]] = collections.Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pair_counts[pair] += count
        if not pair_counts:
            break
        best_pair, best_count = min(pair_counts.items(), key=lambda item: (-item[1], item[0]))
        if best_count < 2:
            break
        merges.append(best_pair)
        merged_words: collections.Counter[tuple[str, ...]] = collections.Counter()
        for word, count in words.items():
            symbols: list[str] = []
            index = 0
            while index < len(word):
                if index + 1 < len(word) and (word[index], word[index + 1]) == best_pair:
                    symbols.append(word[index] + word[index + 1])
                    index += 2
                else:
                    symbols.append(word[index])
                    index += 1
            merged_words[tuple(symbols)] += count
        words = merged_words
    return merges


# Residual-stream features: every token's embedding is one of these one-hot directions, and
# the random layers barely perturb it, so the next-token distribution depends on the current
# token's feature only (a bigram model).
FEATURE_DEFAULT, FEATURE_NEWLINE, FEATURE_TOOL_CALL = 0, 1, 2

# Next-token logits per feature (before temperature); unlisted tokens get BASE_LOGIT.
# After "\n" (the end of every generation prompt): end the turn, else open "<tool_call>";
# after "<tool_call>": "\n", which completes the Hermes tool-call trigger; elsewhere (inside
# grammar-constrained JSON): close strings and objects quickly, then end the turn. Greedy
# sampling therefore replies "" unless `tool_choice: "required"` forbids ending first.
BASE_LOGIT = -4.0
FEATURE_LOGITS = {
    FEATURE_NEWLINE: {"<|im_end|>": 6.0, "<tool_call>": 5.5, "{": 1.0},
    FEATURE_TOOL_CALL: {"\n": 8.0, "<|im_end|>": 5.0},
    FEATURE_DEFAULT: {'"': 3.0, "<|im_end|>": 3.0, "}": 2.0, ":": 1.0},
}


def design_bigram_weights(numpy, random, tokens: list[str], special_ids: dict[str, int]) -> tuple[object, object]:
    """Return (token_embd, output) weights that make the model behave like a small bigram model.

    With random weights alone the model never writes `<tool_call>\n`, so llama-server's
    `tool_choice: "required"` grammar (free content until that marker) just runs to max_tokens.
    """
    byte_decoder = {character: byte for byte, character in bytes_to_unicode().items()}
    token_ids = {text: index for index, text in enumerate(tokens)} | special_ids

    def token_bytes(index: int) -> bytes:
        if index in special_ids.values():
            return tokens[index].encode("utf-8")
        return bytes(byte_decoder[character] for character in tokens[index])

    embeddings = numpy.zeros((len(tokens), EMBEDDING_LENGTH), dtype=numpy.float32)
    for index in range(len(tokens)):
        if index == special_ids["<tool_call>"]:
            embeddings[index, FEATURE_TOOL_CALL] = 1.0
        elif index not in special_ids.values() and token_bytes(index).endswith(b"\n"):
            embeddings[index, FEATURE_NEWLINE] = 1.0
        else:
            embeddings[index, FEATURE_DEFAULT] = 1.0

    # RMS norm turns a one-hot embedding into sqrt(EMBEDDING_LENGTH) * one-hot, so a weight of
    # logit / sqrt(EMBEDDING_LENGTH) yields that logit; small noise breaks ties.
    scale = float(EMBEDDING_LENGTH) ** 0.5
    output_weights = random.normal(0.0, 0.02, size=(len(tokens), EMBEDDING_LENGTH)).astype(numpy.float32)
    for feature, logits in FEATURE_LOGITS.items():
        output_weights[:, feature] += BASE_LOGIT / scale
        for text, logit in logits.items():
            byte_text = "".join(bytes_to_unicode()[byte] for byte in text.encode("utf-8"))
            index = token_ids.get(text, token_ids.get(byte_text))
            if index is None:
                raise ValueError(f"no token for {text!r}")
            output_weights[index, feature] = logit / scale
    return embeddings, output_weights


def write_model(gguf, numpy, output: Path, seed: int) -> tuple[int, int]:
    """Write the model to `output`; returns (vocabulary size, merge count)."""
    byte_encoder = bytes_to_unicode()
    merges = learn_merges(TRAINING_TEXT + CHAT_TEMPLATE, MERGE_COUNT)

    tokens = [byte_encoder[byte] for byte in range(256)]
    token_types = [gguf.TokenType.NORMAL] * 256
    known = set(tokens)
    for left, right in merges:
        if left + right not in known:
            known.add(left + right)
            tokens.append(left + right)
            token_types.append(gguf.TokenType.NORMAL)
    special_ids: dict[str, int] = {}
    for text, is_control in SPECIAL_TOKENS:
        special_ids[text] = len(tokens)
        tokens.append(text)
        token_types.append(gguf.TokenType.CONTROL if is_control else gguf.TokenType.USER_DEFINED)
    vocabulary_size = len(tokens)

    writer = gguf.GGUFWriter(str(output), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    writer.add_name(MODEL_NAME)
    writer.add_vocab_size(vocabulary_size)
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(EMBEDDING_LENGTH)
    writer.add_feed_forward_length(FEED_FORWARD_LENGTH)
    writer.add_block_count(BLOCK_COUNT)
    writer.add_head_count(HEAD_COUNT)
    writer.add_head_count_kv(HEAD_COUNT_KV)
    writer.add_rope_dimension_count(EMBEDDING_LENGTH // HEAD_COUNT)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges([f"{left} {right}" for left, right in merges])
    writer.add_bos_token_id(special_ids["<|endoftext|>"])
    writer.add_eos_token_id(special_ids["<|im_end|>"])
    writer.add_pad_token_id(special_ids["<|endoftext|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    random = numpy.random.default_rng(seed)
    head_dimension = EMBEDDING_LENGTH // HEAD_COUNT
    kv_length = head_dimension * HEAD_COUNT_KV

    def weight(*shape: int) -> object:
        # numpy shape is (rows, columns) = ggml (ne1, ne0): (out_features, in_features).
        return random.normal(0.0, 0.02, size=shape).astype(numpy.float32)

    def ones(length: int) -> object:
        return numpy.ones(length, dtype=numpy.float32)

    embeddings, output_weights = design_bigram_weights(numpy, random, tokens, special_ids)
    writer.add_tensor("token_embd.weight", embeddings)
    for block in range(BLOCK_COUNT):
        prefix = f"blk.{block}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", ones(EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.attn_q.weight", weight(EMBEDDING_LENGTH, EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.attn_k.weight", weight(kv_length, EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.attn_v.weight", weight(kv_length, EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.attn_output.weight", weight(EMBEDDING_LENGTH, EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", ones(EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.ffn_gate.weight", weight(FEED_FORWARD_LENGTH, EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.ffn_up.weight", weight(FEED_FORWARD_LENGTH, EMBEDDING_LENGTH))
        writer.add_tensor(f"{prefix}.ffn_down.weight", weight(EMBEDDING_LENGTH, FEED_FORWARD_LENGTH))
    writer.add_tensor("output_norm.weight", ones(EMBEDDING_LENGTH))
    writer.add_tensor("output.weight", output_weights)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return vocabulary_size, len(merges)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf-py", required=True, type=Path, help="gguf-py folder of a llama.cpp checkout")
    parser.add_argument("--output", required=True, type=Path, help="GGUF file to write")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the random weights")
    arguments = parser.parse_args()

    sys.path.insert(0, str(arguments.gguf_py.resolve()))
    try:
        import numpy
        import gguf
    except ImportError as error:
        sys.exit(f"make-test-gguf: {error}. Install numpy with `apt-get install -y python3-numpy`.")

    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    temporary = arguments.output.with_suffix(".gguf.partial")
    vocabulary_size, merge_count = write_model(gguf, numpy, temporary, arguments.seed)
    temporary.replace(arguments.output)
    print(f"wrote {arguments.output} ({vocabulary_size} tokens, {merge_count} merges)")


if __name__ == "__main__":
    main()
