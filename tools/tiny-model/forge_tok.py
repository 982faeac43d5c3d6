"""forge-tiny's tokenizer: byte-level BPE whose merges never cross a character class.

The GGUF declares `tokenizer.ggml.model = "gpt2"` and pre-tokenizer `qwen2`, so llama.cpp splits
text with the qwen2 regex and then applies these merges by rank inside each piece. The trainer
only learns merges inside one class run:

- letters with letters, punctuation (everything that is not a letter, digit or whitespace, and
  `_`) with punctuation, newlines with newlines;
- never a digit, a space, a tab or a quote (`"`, `'`) with anything: a value that starts or ends
  with punctuation (`-6°C`, `done.`) keeps its tokens when quoted in JSON;
- never `}` or `]` with what follows (`"}}` is `"}` + `}`), so a JSON object ends the same way
  whether or not another one closes after it.

Because no merge crosses a class boundary, a value tokenizes to the same ids wherever it stands:
in the request after a space, inside JSON quotes, in a tool result, after node-llama-cpp's injected
`", "arguments": ` — and splitting text into class runs (below) gives exactly llama.cpp's tokens
(test/tiny-model/tokenizer.test.ts checks it against llama-server's `/tokenize`).

Pure Python (stdlib only) so the same code runs where training runs.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

# (text, is_control): `<tool_call>` and `</tool_call>` are user-defined (printed when detokenized,
# as in Qwen2.5) so they reach llama-server's tool-call parser.
SPECIAL_TOKENS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
]
SPECIAL_RE = re.compile("(" + "|".join(re.escape(text) for text, _ in SPECIAL_TOKENS) + ")")

_PUNCT = r"(?:[^\w\s\"']|_)"
# Class runs: letters; one digit; newlines; one other whitespace character; one quote; other
# punctuation cut after each `}` or `]`.
CHUNK_RE = re.compile(rf"[^\W\d_]+|\d|[\r\n]+|[^\S\r\n]|[\"']|{_PUNCT}*?[}}\]]|{_PUNCT}+")
# Runs that can hold merges (letters, punctuation, newlines); the rest are single characters.
_MERGEABLE = re.compile(rf"[^\W\d_]{{2,}}|{_PUNCT}{{2,}}|[\r\n]{{2,}}|[^\x00-\x7f]")


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


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {character: byte for byte, character in BYTE_ENCODER.items()}


def chunks_of(text: str) -> list[str]:
    """Split plain text (no special tokens) into class runs; their concatenation is `text`."""
    return CHUNK_RE.findall(text)


def learn_merges(texts, merge_count: int) -> list[tuple[str, str]]:
    """Byte-level BPE merges inside class runs, most frequent pair first (ties by text)."""
    counter: collections.Counter[str] = collections.Counter()
    for text in texts:
        for part in SPECIAL_RE.split(text):
            if part and not SPECIAL_RE.fullmatch(part):
                counter.update(chunk for chunk in chunks_of(part) if _MERGEABLE.search(chunk))
    words = [[BYTE_ENCODER[b] for b in chunk.encode("utf-8")] for chunk in counter]
    counts = list(counter.values())
    pair_counts: collections.Counter[tuple[str, str]] = collections.Counter()
    where: dict[tuple[str, str], set[int]] = collections.defaultdict(set)
    for index, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += counts[index]
            where[pair].add(index)
    merges: list[tuple[str, str]] = []
    while len(merges) < merge_count and pair_counts:
        best, best_count = min(pair_counts.items(), key=lambda item: (-item[1], item[0]))
        if best_count < 2:
            break
        merges.append(best)
        merged = best[0] + best[1]
        for index in list(where.get(best, ())):
            word = words[index]
            for pair in zip(word, word[1:]):
                pair_counts[pair] -= counts[index]
                if pair_counts[pair] <= 0:
                    del pair_counts[pair]
            symbols: list[str] = []
            position = 0
            while position < len(word):
                if position + 1 < len(word) and word[position] == best[0] and word[position + 1] == best[1]:
                    symbols.append(merged)
                    position += 2
                else:
                    symbols.append(word[position])
                    position += 1
            words[index] = symbols
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += counts[index]
                where[pair].add(index)
        pair_counts.pop(best, None)
        where.pop(best, None)
    return merges


class Tokenizer:
    def __init__(self, tokens: list[str], merges: list[tuple[str, str]], special: dict[str, int]):
        self.tokens = tokens
        self.merges = merges
        self.special = special
        self.ids = {token: index for index, token in enumerate(tokens) if token not in special}
        self.ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.cache: dict[str, list[int]] = {}
        self.byte_length = [
            len(token.encode("utf-8")) if token in special else len(token) for token in tokens
        ]

    @staticmethod
    def load(path) -> "Tokenizer":
        data = json.loads(Path(path).read_text())
        return Tokenizer(data["tokens"], [tuple(m) for m in data["merges"]], data["special"])

    @staticmethod
    def train(texts, vocab_size: int) -> "Tokenizer":
        merges = learn_merges(texts, vocab_size - 256 - len(SPECIAL_TOKENS))
        tokens = [BYTE_ENCODER[b] for b in range(256)]
        known = set(tokens)
        for left, right in merges:
            if left + right not in known:
                known.add(left + right)
                tokens.append(left + right)
        special = {}
        for text, _ in SPECIAL_TOKENS:
            special[text] = len(tokens)
            tokens.append(text)
        return Tokenizer(tokens, merges, special)

    def save(self, path) -> None:
        Path(path).write_text(
            json.dumps({"tokens": self.tokens, "merges": self.merges, "special": self.special})
        )

    def bpe(self, chunk: str) -> list[int]:
        cached = self.cache.get(chunk)
        if cached is not None:
            return cached
        word = [BYTE_ENCODER[b] for b in chunk.encode("utf-8")]
        ranks = self.ranks
        while len(word) > 1:
            best_rank, best_index = 1 << 30, -1
            for index in range(len(word) - 1):
                rank = ranks.get((word[index], word[index + 1]))
                if rank is not None and rank < best_rank:
                    best_rank, best_index = rank, index
            if best_index < 0:
                break
            word = word[:best_index] + [word[best_index] + word[best_index + 1]] + word[best_index + 2 :]
        result = [self.ids[symbol] for symbol in word]
        if len(self.cache) < 500_000:
            self.cache[chunk] = result
        return result

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for part in SPECIAL_RE.split(text):
            if not part:
                continue
            special = self.special.get(part)
            if special is not None:
                out.append(special)
            else:
                for chunk in chunks_of(part):
                    out.extend(self.bpe(chunk))
        return out

    def decode(self, ids) -> str:
        data = bytearray()
        for index in ids:
            token = self.tokens[index]
            if token in self.special:
                data.extend(token.encode("utf-8"))
            else:
                data.extend(BYTE_DECODER[character] for character in token)
        return data.decode("utf-8", errors="replace")
