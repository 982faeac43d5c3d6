import { describe, expect, it } from "vitest";
import { parseQwenCoder } from "../../../src/prompts/rescue/qwen-coder.ts";

describe("parseQwenCoder", () => {
  it("reads Qwen3-Coder's output, every value the string the model wrote", () => {
    const text = [
      "<tool_call>",
      "<function=search_files>",
      "<parameter=pattern>",
      "*.ts",
      "</parameter>",
      "<parameter=max_results>",
      "20",
      "</parameter>",
      "<parameter=recursive>",
      "true",
      "</parameter>",
      "<parameter=filters>",
      '{"exclude": ["node_modules"]}',
      "</parameter>",
      "</function>",
      "</tool_call>",
    ].join("\n");
    expect(parseQwenCoder(text)).toEqual({
      status: "found",
      calls: [
        {
          tool: "search_files",
          args: {
            pattern: "*.ts",
            max_results: "20",
            recursive: "true",
            filters: '{"exclude": ["node_modules"]}',
          },
        },
      ],
      textValued: [0],
    });
  });

  it("strips only one leading and one trailing newline, as Qwen's reference parser does", () => {
    const text =
      "<function=edit>\n<parameter=code>\n    return x\n\n</parameter>\n<parameter=zip>02134</parameter>\n</function>";
    expect(parseQwenCoder(text)).toEqual({
      status: "found",
      calls: [{ tool: "edit", args: { code: "    return x\n", zip: "02134" } }],
      textValued: [0],
    });
  });

  it("reads several functions and one without parameters", () => {
    const text =
      "<function=get_weather><parameter=city>Paris</parameter></function>\n<function=get_time>\n</function>";
    expect(parseQwenCoder(text)).toEqual({
      status: "found",
      calls: [
        { tool: "get_weather", args: { city: "Paris" } },
        { tool: "get_time", args: {} },
      ],
      textValued: [0, 1],
    });
  });

  it("tolerates missing </parameter> and a missing final </function>", () => {
    const text = "<function=get_weather>\n<parameter=city>\nParis\n<parameter=unit>\ncelsius\n";
    expect(parseQwenCoder(text)).toEqual({
      status: "found",
      calls: [{ tool: "get_weather", args: { city: "Paris", unit: "celsius" } }],
      textValued: [0],
    });
  });

  it("makes a __proto__ parameter an own key", () => {
    const outcome = parseQwenCoder("<function=f><parameter=__proto__>1</parameter></function>");
    expect(outcome.status).toBe("found");
    const args = outcome.status === "found" ? outcome.calls[0]?.args : undefined;
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Object.hasOwn(args ?? {}, "__proto__")).toBe(true);
  });

  it.each([
    ["text outside parameter tags", "<function=get_weather>city: Paris</function>"],
    ["a duplicated parameter", "<function=f><parameter=a>1</parameter><parameter=a>2</parameter></function>"],
    ["an unnamed function", "<function=><parameter=a>1</parameter></function>"],
    ["an unclosed function tag", "<function=get_weather"],
  ])("is garbled by %s", (_label, text) => {
    expect(parseQwenCoder(text).status).toBe("garbled");
  });

  it("is absent without a function tag", () => {
    expect(parseQwenCoder("<tool_call>{}</tool_call>")).toEqual({ status: "absent" });
  });
});
