"""BFCL's own code, driven from the eval harness in a separate Python process.

The project never imports bfcl-eval into its own (Node) process: `npm run eval -- bfcl` runs this
file in the venv `npm run setup:bfcl` made under `.cache/bfcl/venv`, with the unpacked wheel on
`sys.path`. Everything that decides what a case asks and whether an answer passes is BFCL's own
function, called as BFCL's `bfcl generate` / `bfcl evaluate` call it for an OpenAI-style
function-calling model:

- prepare: `load_dataset_entry` and `load_ground_truth_entry` (BFCL's data loaders, with its
  language hints), then `convert_to_tool(…, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)`,
  exactly the tools BFCL's OpenAI FC handler sends;
- score: `eval_runner._evaluate_single_ast_entry` / `_evaluate_single_relevance_entry` with the FC
  handler's `decode_ast` (below, the same lines as `OpenAICompletionsHandler.decode_ast`).

The one thing replaced is `bfcl_eval.constants.model_config`, which imports every vendor SDK BFCL
supports: a stand-in registers the harness's model name with `underscore_to_dot = True`, the
setting of every OpenAI-style FC model (tool names cannot hold a dot, so `math.hypot` is sent as
`math_hypot` and the checker compares it so).

Usage: python bridge.py --bfcl-root DIR prepare --categories a,b --out cases.jsonl
       python bridge.py --bfcl-root DIR score --in outputs.jsonl --out scores.jsonl
"""

import argparse
import json
import sys
import types
from dataclasses import dataclass

MODEL_NAME = "forge-bfcl"


@dataclass
class _ModelConfig:
    underscore_to_dot: bool = True
    is_fc_model: bool = True


def _load_bfcl(root: str):
    sys.path.insert(0, root)
    stand_in = types.ModuleType("bfcl_eval.constants.model_config")
    stand_in.MODEL_CONFIG_MAPPING = {MODEL_NAME: _ModelConfig()}
    sys.modules["bfcl_eval.constants.model_config"] = stand_in


class _FcHandler:
    """The part of BFCL's OpenAI FC handler the checkers call."""

    is_fc_model = True

    def decode_ast(self, result, language, has_tool_call_tag):
        # OpenAICompletionsHandler.decode_ast, FC branch.
        decoded_output = []
        for invoked_function in result:
            name = list(invoked_function.keys())[0]
            params = json.loads(invoked_function[name])
            decoded_output.append({name: params})
        return decoded_output

    def decode_execute(self, result, has_tool_call_tag):
        from bfcl_eval.model_handler.utils import convert_to_function_call

        return convert_to_function_call(result)


def prepare(categories: list[str], out: str) -> None:
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler.utils import convert_to_tool
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    with open(out, "w", encoding="utf-8") as file:
        for category in categories:
            entries = load_dataset_entry(category)
            relevance = "irrelevance" in category or "relevance" in category
            answers = {} if relevance else {entry["id"]: entry["ground_truth"] for entry in load_ground_truth_entry(category)}
            for entry in entries:
                tools = convert_to_tool(entry["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
                record = {
                    "id": entry["id"],
                    "category": category,
                    "turns": entry["question"],
                    # Already `{"type": "function", "function": {…}}` for the OpenAI completions style.
                    "tools": tools,
                    "function": entry["function"],
                    "possible_answer": answers.get(entry["id"]),
                }
                file.write(json.dumps(record) + "\n")


def score(source: str, out: str) -> None:
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker import eval_runner

    handler = _FcHandler()
    with open(source, encoding="utf-8") as rows, open(out, "w", encoding="utf-8") as file:
        for line in rows:
            if not line.strip():
                continue
            row = json.loads(line)
            category = row["category"]
            # The FC handler's result: a list of {name: arguments-json} when the model called, else its text.
            result = row["calls"] if row["calls"] else row.get("text", "")
            prompt = {"id": row["id"], "function": row["function"]}
            if "relevance" in category:
                verdict = eval_runner._evaluate_single_relevance_entry(
                    handler, row["id"], result, prompt, MODEL_NAME, category
                )
            else:
                verdict = eval_runner._evaluate_single_ast_entry(
                    handler,
                    row["id"],
                    result,
                    row["possible_answer"],
                    prompt,
                    MODEL_NAME,
                    category,
                    Language.PYTHON,
                    ReturnFormat.PYTHON,
                )
            file.write(
                json.dumps(
                    {
                        "key": row["key"],
                        "valid": bool(verdict["valid"]),
                        "error_type": verdict.get("error_type"),
                        "error": verdict.get("error"),
                    },
                    default=str,
                )
                + "\n"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bfcl-root", required=True)
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_command = commands.add_parser("prepare")
    prepare_command.add_argument("--categories", required=True)
    prepare_command.add_argument("--out", required=True)
    score_command = commands.add_parser("score")
    score_command.add_argument("--in", dest="source", required=True)
    score_command.add_argument("--out", required=True)
    args = parser.parse_args()
    _load_bfcl(args.bfcl_root)
    if args.command == "prepare":
        prepare([category for category in args.categories.split(",") if category], args.out)
    else:
        score(args.source, args.out)


if __name__ == "__main__":
    main()
