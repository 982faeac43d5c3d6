import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { appendJsonLine, latestByKey, readJsonl, repairTail } from "../../eval/batch/jsonl.ts";

const schema = z.object({ key: z.string(), value: z.number() });

describe("JSONL", () => {
  it("reports each corrupt line by its number and still reads the rest", () => {
    const file = join(mkdtempSync(join(tmpdir(), "jsonl-")), "rows.jsonl");
    writeFileSync(
      file,
      [
        '{"key":"a","value":1}',
        "{not json",
        '{"key":"b","value":"two"}',
        "",
        '{"key":"c","value":3}',
        "",
      ].join("\n"),
    );
    const { rows, problems } = readJsonl(file, schema);
    expect(rows.map((row) => row.key)).toEqual(["a", "c"]);
    expect(problems).toEqual([
      { line: 2, message: expect.stringMatching(/^not JSON/) },
      { line: 3, message: expect.stringMatching(/^not a row/) },
    ]);
  });

  it("cuts an interrupted last line so the next append starts clean", () => {
    const file = join(mkdtempSync(join(tmpdir(), "jsonl-")), "rows.jsonl");
    appendJsonLine(file, { key: "a", value: 1 });
    writeFileSync(file, `${readFileSync(file, "utf8")}{"key":"b","val`);
    expect(readJsonl(file, schema).problems).toEqual([
      { line: 2, message: "incomplete last line (an interrupted write)" },
    ]);
    expect(repairTail(file)).toBe('{"key":"b","val'.length);
    expect(repairTail(file)).toBe(0);
    appendJsonLine(file, { key: "b", value: 2 });
    expect(readJsonl(file, schema)).toEqual({
      rows: [
        { key: "a", value: 1 },
        { key: "b", value: 2 },
      ],
      problems: [],
    });
  });

  it("keeps the newest row of a key", () => {
    const { rows, superseded } = latestByKey([
      { key: "a", value: 1 },
      { key: "b", value: 2 },
      { key: "a", value: 3 },
    ]);
    expect(rows).toEqual([
      { key: "a", value: 3 },
      { key: "b", value: 2 },
    ]);
    expect(superseded).toBe(1);
  });
});
